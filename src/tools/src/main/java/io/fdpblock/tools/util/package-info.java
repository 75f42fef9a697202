/** Helpers the tools share: sizes for people ({@code Sizes.human}), thread joins. */
package io.fdpblock.tools.util;
