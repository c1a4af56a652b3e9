/* Safe file I/O: bounded whole-file reads that refuse symlinks and special files, and atomic
 * writes (temp file, fsync, rename, fsync the folder), so a reader never sees half a file. */
#ifndef KF_COMMON_FSIO_H
#define KF_COMMON_FSIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_TMP_PREFIX ".tmp-" /* kf_write_atomic's temp files start with it */

/* Read a whole regular file under dfd (no symlinks, no FIFOs), at most `max` bytes. The buffer
 * is NUL-terminated. ENOENT gives KF_ERR_NOT_FOUND, everything else KF_ERR_IO. */
kf_status kf_read_at(int dfd, const char *name, uint64_t max, char **buf, size_t *len, char *err,
                     size_t cap);
/* The same for an already open descriptor (closed by the caller). */
kf_status kf_read_fd(int fd, uint64_t max, char **buf, size_t *len, char *err, size_t cap);

typedef struct kf_piece {
    const void *p;
    size_t n;
} kf_piece;

/* Temp file in dfd (O_EXCL, `mode`), write every piece, fsync, rename over `name`, fsync dfd. */
kf_status kf_write_atomic(int dfd, const char *name, mode_t mode, const kf_piece *pieces, int n,
                          unsigned *seq, char *err, size_t cap);
/* Path forms of the two: `path` is read with kf_read_at in its folder; written like
 * kf_write_atomic there (mode 0644) but without the fsyncs: for scratch files (a job folder's
 * records) that readers must never see half-written but that need not survive a power cut. */
kf_status kf_read_file(const char *path, uint64_t max, char **buf, size_t *len, char *err,
                       size_t cap);
kf_status kf_write_file(const char *path, const void *data, size_t len, char *err, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
