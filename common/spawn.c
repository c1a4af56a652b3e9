#include "common/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>

extern char **environ;

int kf_spawn(pid_t *pid, char *const argv[], int search, const int fds[3])
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    for (int i = 0; i < 3; i++) {
        if (fds[i] == KF_SPAWN_DEVNULL)
            posix_spawn_file_actions_addopen(&fa, i, "/dev/null", i ? O_WRONLY : O_RDONLY, 0);
        else if (fds[i] >= 0)
            posix_spawn_file_actions_adddup2(&fa, fds[i], i);
    }
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
    int rc = search ? posix_spawnp(pid, argv[0], &fa, &at, argv, environ)
                    : posix_spawn(pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    return rc;
}
