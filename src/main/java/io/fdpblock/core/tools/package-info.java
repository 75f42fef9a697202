/**
 * Tools over a store's on-device metadata, for the command line and for operators: {@code Migration}
 * rewrites a store's metadata from one format to the other in place (the slots stay where they are),
 * refusing with a {@code MigrationRefusedException} what it cannot do safely; {@code Inspector} reports
 * what a device's metadata says, writing nothing. {@code Migration} names no format: it opens the store
 * through {@code RawBlockCore}, lists its entries through it, and asks each format for its part
 * ({@code StoreFormat}, {@code FormatMigration}). {@code Inspector} reports each format's own structures
 * (containers, superblocks, snapshots, log), read with that format's decoders and recovery rules.
 */
package io.fdpblock.core.tools;
