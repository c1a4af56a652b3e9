/* A crash tracer for machines without gdb (the lent GPU machine): preloaded into a process, it
 * prints the faulting address, the instruction pointer, a backtrace and the executable mappings
 * on SIGSEGV / SIGBUS / SIGILL / SIGABRT to stderr, then lets the signal kill the process.
 *
 *   cc -shared -fPIC -O1 -g -o /tmp/segv_trace.so scripts/segv_trace.c
 *   LD_PRELOAD=/tmp/segv_trace.so python3 script.py
 *
 * Resolve "module(+0xoffset)" frames with `addr2line -f -C -e module 0xoffset`. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static void say(const char *s) { (void)!write(2, s, strlen(s)); }

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
    char line[256];
    const ucontext_t *uc = ctx;
    snprintf(line, sizeof line, "\n== segv_trace: signal %d at address %p, ip %p, thread %d\n", sig,
             si->si_addr, (void *)uc->uc_mcontext.gregs[REG_RIP], (int)gettid());
    say(line);
    void *frames[64];
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, 2);
    say("== segv_trace: executable mappings\n");
    int fd = open("/proc/self/maps", O_RDONLY);
    if (fd >= 0) {
        char buf[4096], keep[512];
        size_t k = 0;
        ssize_t r;
        while ((r = read(fd, buf, sizeof buf)) > 0)
            for (ssize_t i = 0; i < r; i++) {
                if (k < sizeof keep - 1) keep[k++] = buf[i];
                if (buf[i] != '\n') continue;
                keep[k] = 0;
                if (strstr(keep, " r-xp ")) say(keep);
                k = 0;
            }
        close(fd);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install(void)
{
    static char stack[1 << 16];
    stack_t ss = {.ss_sp = stack, .ss_size = sizeof stack};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    void *warm[1];
    backtrace(warm, 1); /* loads libgcc_s now, not inside the handler */
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGILL, &sa, NULL);
}
