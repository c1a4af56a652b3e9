/* File I/O for the cache: bounded reads that refuse symlinks and special files, atomic writes
 * (temp file, fsync, rename, fsync the folder) and the flock on <dir>/lock. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

kf_status kf_read_fd(int fd, uint64_t max, char **buf, size_t *len, char *err, size_t cap)
{
    struct stat sb;
    *buf = NULL;
    *len = 0;
    if (fstat(fd, &sb) < 0) {
        kf_errf(err, cap, "fstat: %s", strerror(errno));
        return KF_ERR_IO;
    }
    if (!S_ISREG(sb.st_mode)) {
        kf_errf(err, cap, "not a regular file");
        return KF_ERR_IO;
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > max) {
        kf_errf(err, cap, "too large (%lld bytes, limit %llu)", (long long)sb.st_size,
                (unsigned long long)max);
        return KF_ERR_IO;
    }
    size_t size = (size_t)sb.st_size, got = 0;
    char *p = malloc(size + 1);
    if (!p) {
        kf_errf(err, cap, "out of memory (%zu bytes)", size);
        return KF_ERR_NOMEM;
    }
    /* one byte more than fstat said, to notice a file that grew under us */
    while (got < size + 1) {
        ssize_t r = read(fd, p + got, size + 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            kf_errf(err, cap, "read: %s", strerror(errno));
            free(p);
            return KF_ERR_IO;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    if (got != size) {
        kf_errf(err, cap, "changed size while being read");
        free(p);
        return KF_ERR_IO;
    }
    p[size] = '\0';
    *buf = p;
    *len = size;
    return KF_OK;
}

kf_status kf_read_at(int dfd, const char *name, uint64_t max, char **buf, size_t *len, char *err,
                     size_t cap)
{
    *buf = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO planted under an entry's name must not hang the reader */
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT) {
            kf_errf(err, cap, "does not exist");
            return KF_ERR_NOT_FOUND;
        }
        if (e == ELOOP) kf_errf(err, cap, "is a symbolic link (refused)");
        else kf_errf(err, cap, "cannot open: %s", strerror(e));
        return KF_ERR_IO;
    }
    kf_status st = kf_read_fd(fd, max, buf, len, err, cap);
    close(fd);
    return st;
}

static kf_status write_all(int fd, const void *p, size_t n, char *err, size_t cap)
{
    const char *q = p;
    while (n) {
        ssize_t w = write(fd, q, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            kf_errf(err, cap, "write: %s", strerror(errno));
            return KF_ERR_IO;
        }
        q += w;
        n -= (size_t)w;
    }
    return KF_OK;
}

kf_status kf_write_atomic(int dfd, const char *name, mode_t mode, const kf_piece *pieces, int n,
                          unsigned *seq, char *err, size_t cap)
{
    char tmp[256];
    int fd = -1;
    kf_status st = KF_ERR_IO;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        snprintf(tmp, sizeof tmp, KF_CACHE_TMP_PREFIX "%ld-%u-%.200s", (long)getpid(), (*seq)++,
                 name);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 && errno != EEXIST) break; /* EEXIST: a leftover of a crashed process */
    }
    if (fd < 0) {
        kf_errf(err, cap, "cannot create a temp file for %s: %s", name, strerror(errno));
        return KF_ERR_IO;
    }
    for (int i = 0; i < n; i++) {
        st = write_all(fd, pieces[i].p, pieces[i].n, err, cap);
        if (st != KF_OK) goto fail_unlink;
    }
    st = KF_ERR_IO;
    if (fsync(fd) < 0) {
        kf_errf(err, cap, "fsync %s: %s", tmp, strerror(errno));
        goto fail_unlink;
    }
    int rc = close(fd);
    fd = -1;
    if (rc < 0) {
        kf_errf(err, cap, "close %s: %s", tmp, strerror(errno));
        goto fail_unlink;
    }
    if (renameat(dfd, tmp, dfd, name) < 0) {
        kf_errf(err, cap, "rename to %s: %s", name, strerror(errno));
        goto fail_unlink;
    }
    /* the rename itself is durable only once the folder is */
    if (fsync(dfd) < 0) {
        kf_errf(err, cap, "fsync of the folder holding %s: %s", name, strerror(errno));
        return KF_ERR_IO;
    }
    return KF_OK;

fail_unlink:
    if (fd >= 0) close(fd);
    unlinkat(dfd, tmp, 0);
    return st;
}

int kf_cache_lock(kf_cache *c, int exclusive)
{
    int flags = (c->read_only ? O_RDONLY : O_RDWR | O_CREAT) | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat(c->dfd, "lock", flags, 0600);
    if (fd < 0) {
        /* a read-only cache on a read-only medium: nobody can change it while we read */
        if (c->read_only && !exclusive && (errno == ENOENT || errno == EACCES || errno == EROFS))
            return -2;
        kf_cache_set_err(c, "cache %s: cannot open the lock file: %s", c->dir,
                         errno == ELOOP ? "it is a symbolic link" : strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        kf_cache_set_err(c, "cache %s: the lock file is not a regular file", c->dir);
        close(fd);
        return -1;
    }
    while (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | (c->nowait ? LOCK_NB : 0)) < 0) {
        if (errno == EINTR) continue;
        if (errno == EWOULDBLOCK && c->nowait) {
            kf_cache_set_err(c, "cache %s is locked by another process; not waiting", c->dir);
            close(fd);
            return KF_LOCK_BUSY;
        }
        kf_cache_set_err(c, "cache %s: flock: %s", c->dir, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

void kf_cache_unlock(int fd)
{
    if (fd >= 0) close(fd); /* closing the last descriptor releases the flock */
}
