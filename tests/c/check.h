/* A tiny assertion helper for the C unit tests.
 *
 * Each CHECK* counts one pass or one failure; a failure prints file:line and the failing
 * expression (with both values for the comparison forms) and the test keeps going. check_done
 * prints the summary line `N passed, M failed` and returns the process exit code.
 *
 * The counters are atomic, so a CHECK from a worker thread is fine (its message may interleave). */
#ifndef KF_TESTS_CHECK_H
#define KF_TESTS_CHECK_H

#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static _Atomic long check_n_pass;
static _Atomic long check_n_fail;

static inline int check_report(int ok, const char *file, int line, const char *expr)
{
    if (ok) {
        atomic_fetch_add(&check_n_pass, 1);
        return 1;
    }
    atomic_fetch_add(&check_n_fail, 1);
    printf("FAIL %s:%d: %s\n", file, line, expr);
    fflush(stdout);
    return 0;
}

/* Each macro evaluates to 1 when the check passed, so a test can skip dependent checks. */
#define CHECK(cond) check_report(!!(cond), __FILE__, __LINE__, #cond)

#define CHECK_EQ_INT(a, b) \
    check_eq_int_((long long)(a), (long long)(b), __FILE__, __LINE__, #a, #b)
static inline int check_eq_int_(long long a, long long b, const char *file, int line,
                                const char *ea, const char *eb)
{
    if (!check_report(a == b, file, line, "CHECK_EQ_INT")) {
        printf("     %s == %s\n     got %lld vs %lld\n", ea, eb, a, b);
        fflush(stdout);
        return 0;
    }
    return 1;
}

#define CHECK_EQ_U64(a, b) \
    check_eq_u64_((uint64_t)(a), (uint64_t)(b), __FILE__, __LINE__, #a, #b)
static inline int check_eq_u64_(uint64_t a, uint64_t b, const char *file, int line,
                                const char *ea, const char *eb)
{
    if (!check_report(a == b, file, line, "CHECK_EQ_U64")) {
        printf("     %s == %s\n     got %" PRIu64 " (0x%016" PRIx64 ") vs %" PRIu64
               " (0x%016" PRIx64 ")\n", ea, eb, a, a, b, b);
        fflush(stdout);
        return 0;
    }
    return 1;
}

#define CHECK_STR(a, b) check_str_((a), (b), __FILE__, __LINE__, #a, #b)
static inline int check_str_(const char *a, const char *b, const char *file, int line,
                             const char *ea, const char *eb)
{
    int ok = a && b ? strcmp(a, b) == 0 : a == b;
    if (!check_report(ok, file, line, "CHECK_STR")) {
        printf("     %s == %s\n     got \"%s\"\n      vs \"%s\"\n", ea, eb, a ? a : "(null)",
               b ? b : "(null)");
        fflush(stdout);
        return 0;
    }
    return 1;
}

/* Does `s` contain `sub`? */
#define CHECK_CONTAINS(s, sub) check_contains_((s), (sub), __FILE__, __LINE__, #s, #sub)
static inline int check_contains_(const char *s, const char *sub, const char *file, int line,
                                  const char *es, const char *esub)
{
    int ok = s && sub && strstr(s, sub) != NULL;
    if (!check_report(ok, file, line, "CHECK_CONTAINS")) {
        printf("     %s contains %s\n     \"%s\" lacks \"%s\"\n", es, esub, s ? s : "(null)",
               sub ? sub : "(null)");
        fflush(stdout);
        return 0;
    }
    return 1;
}

static inline long check_failures(void) { return atomic_load(&check_n_fail); }

/* Print the summary; returns the exit code (0 when nothing failed). */
static inline int check_done(const char *name)
{
    long pass = atomic_load(&check_n_pass), fail = atomic_load(&check_n_fail);
    printf("%s: %s\n", name, fail ? "FAILED" : "ok");
    printf("%ld passed, %ld failed\n", pass, fail);
    fflush(stdout);
    return fail ? 1 : 0;
}

#endif
