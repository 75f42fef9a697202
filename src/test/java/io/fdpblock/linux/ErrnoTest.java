package io.fdpblock.linux;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Errno names and messages come from glibc (strerrorname_np, strerror): a downcall, so host tier. */
@Tag("host")
class ErrnoTest {

    @Test
    void namesOfKnownNumbers() {
        assertThat(Errno.name(22)).isEqualTo("EINVAL");
        assertThat(Errno.name(2)).isEqualTo("ENOENT");
        assertThat(Errno.name(9)).isEqualTo("EBADF");
        assertThat(Errno.name(11)).isEqualTo("EAGAIN");
        assertThat(Errno.name(22)).as("cached the second time").isEqualTo("EINVAL");
    }

    @Test
    void constantsMatchLinux() {
        assertThat(new int[] {Errno.EINTR, Errno.EBADF, Errno.EAGAIN, Errno.ENOMEM, Errno.EBUSY, Errno.EINVAL,
                Errno.ECANCELED}).containsExactly(4, 9, 11, 12, 16, 22, 125);
    }

    @Test
    void unknownNumberGetsAPlaceholderName() {
        assertThat(Errno.name(9999)).isEqualTo("E?9999");
    }

    @Test
    void describeAndExceptionMessage() {
        assertThat(Errno.describe(22)).startsWith("EINVAL (22, ").endsWith(")");
        Errno.NativeIOException e = Errno.exception("open(/x, O_RDONLY)", 2, "the path does not exist");
        assertThat(e.getMessage()).startsWith("open(/x, O_RDONLY) failed: ENOENT (2, ")
                .endsWith("). the path does not exist");
        assertThat(e.call()).isEqualTo("open(/x, O_RDONLY)");
        assertThat(e.errno()).isEqualTo(2);
        assertThat(e.errnoName()).isEqualTo("ENOENT");
        assertThat(Errno.exception("close(3)", 9).getMessage()).startsWith("close(3) failed: EBADF (9, ")
                .endsWith(")");
    }
}
