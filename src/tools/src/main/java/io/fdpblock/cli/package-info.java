/**
 * The {@code fdpblock} command line (picocli): {@code run}, {@code engines}, {@code bench}, {@code fdp},
 * {@code inspect}, {@code migrate}, {@code selftest}, {@code simulate} and {@code waf}; each command's
 * exit codes are in docs/cli.md.
 */
package io.fdpblock.cli;
