/* Starting child processes the same way everywhere (the host compiler, the worker's evaluator). */
#ifndef KF_COMMON_SPAWN_H
#define KF_COMMON_SPAWN_H

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KF_SPAWN_INHERIT (-1)
#define KF_SPAWN_DEVNULL (-2)

/* posix_spawn `argv` (argv[0] looked up in PATH when `search`) in a process group of its own, so
 * a timeout can kill everything it starts, with an empty signal mask and default signal
 * dispositions, so the caller's handlers and blocked signals do not leak into it. fds[i] becomes
 * the child's fd i (0..2): a descriptor, KF_SPAWN_INHERIT or KF_SPAWN_DEVNULL. posix_spawn rather
 * than fork(): safe in a threaded process. Returns 0, or the errno of the failure. */
int kf_spawn(pid_t *pid, char *const argv[], int search, const int fds[3]);

#ifdef __cplusplus
}
#endif
#endif
