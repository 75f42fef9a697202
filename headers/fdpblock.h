/*
 * Umbrella header read by jextract (see jextract.conf and `make bindings`).
 * It only includes system headers; jextract.conf filters what is generated
 * down to what the Java code uses.
 */
#ifndef FDPBLOCK_H
#define FDPBLOCK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_DIRECT, strerrorname_np */
#endif

#include <liburing.h>
#include <linux/nvme_ioctl.h>
#include <linux/fs.h>          /* BLKGETSIZE64, BLKSSZGET */
#include <sys/eventfd.h>
#include <poll.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/file.h>        /* flock: one store owns a device */
#include <sys/stat.h>
#include <sys/mman.h>        /* I/O buffers on transparent huge pages: few DMA segments per large I/O */
#include <sys/uio.h>
#include <errno.h>
#include <string.h>
#include <time.h>            /* clock_gettime: CPU time per process at ns resolution */

#include "sqe_write_stream.h" /* after liburing.h: it checks itself against struct io_uring_sqe */

#endif
