/**
 * Tools over a store's on-device metadata, for the command line and for operators: {@code Migration}
 * rewrites a store's metadata from one format to the other in place (the slots stay where they are),
 * refusing with a {@code MigrationRefusedException} what it cannot do safely; {@code Inspector} reports
 * what a device's metadata says, writing nothing. Unlike the engine, these name the formats.
 */
package io.fdpblock.core.tools;
