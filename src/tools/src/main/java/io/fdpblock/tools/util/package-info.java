/**
 * Helpers the tools share: sizes for people ({@code Sizes.human}), thread joins, figures of stacked charts
 * ({@code Charts}) and of the machine's memory ({@code Meminfo}).
 */
package io.fdpblock.tools.util;
