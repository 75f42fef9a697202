/**
 * LMCache's L2 adapter over the store: {@link io.fdpblock.adapter.RawBlockL2Adapter} (and its
 * {@code raw_block} factory, found through {@link java.util.ServiceLoader}) maps the L2 contract of
 * {@code io.fdpblock.l2} onto a {@link io.fdpblock.core.RawBlockCore}, with the FDP placement policy
 * that sends each cache salt's keys to a placement id of their own.
 */
package io.fdpblock.adapter;
