/* The flock on <dir>/lock that orders writers (and readers of several files) across processes. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/internal.h"

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
