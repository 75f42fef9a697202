/*
 * The SQE's write-stream byte, declared by fdpblock (read by jextract through fdpblock.h).
 *
 * Since Linux 6.16 a block device whose NVMe namespace has FDP exposes its placement handles as write
 * streams, and an io_uring write picks one with a byte of the SQE: byte 44, the first byte of the
 * 4-byte union that also holds splice_fd_in and file_index (0 = no stream). The copies of the kernel's
 * io_uring uapi header that Debian ships predate it: liburing-dev 2.3 (Debian 12) and 2.9 (Debian 13),
 * linux-libc-dev 6.1 and 6.12. So this header states the placement itself, as an overlay of the whole
 * 64-byte SQE whose one named byte is write_stream; the Java code writes it with
 * fdpblock_sqe_write_stream.write_stream(sqe, n) next to the io_uring_sqe accessors. A named struct
 * without anonymous members, so jextract gives it stable accessor and layout names.
 *
 * The assertions tie the overlay to the io_uring_sqe that liburing.h declares: a header where the
 * union moved fails the generation instead of placing the byte wrong (LayoutPinsTest pins the
 * generated result).
 */
#ifndef FDPBLOCK_SQE_WRITE_STREAM_H
#define FDPBLOCK_SQE_WRITE_STREAM_H

#include <stddef.h>
#include <linux/types.h>

struct fdpblock_sqe_write_stream {
	__u8 __head[44];   /* opcode .. personality, as in struct io_uring_sqe */
	__u8 write_stream; /* 0: none; 1..queue/max_write_streams (sysfs) */
	__u8 __pad[3];     /* the rest of the splice_fd_in / file_index union */
	__u8 __tail[16];   /* addr3 / cmd */
};

_Static_assert(sizeof(struct fdpblock_sqe_write_stream) == sizeof(struct io_uring_sqe),
	       "the overlay covers exactly one 64-byte SQE");
_Static_assert(offsetof(struct fdpblock_sqe_write_stream, write_stream) == offsetof(struct io_uring_sqe, splice_fd_in),
	       "write_stream shares the union of splice_fd_in and file_index");
_Static_assert(offsetof(struct io_uring_sqe, splice_fd_in) == 44, "the union sits at byte 44");

#endif
