/*
 * tap.h - a minimal TAP producer for unit tests, run by prove.
 *
 *   plan_no_plan(); ok(cond, "name %d", x); is_int(got, want, "name");
 *   is_num(got, want, "name") (doubles, within 1e-9 of want);
 *   return done_testing();
 */
#ifndef SL_TAP_H
#define SL_TAP_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

static inline int ok_(int cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int ok_(int cond, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!cond) {
        tap_failed++;
        fflush(stdout);
        fprintf(stderr, "#   failed at %s:%d\n", file, line);
    }
    fflush(stdout);
    return cond;
}

#define ok(cond, ...) ok_(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...)                                                 \
    do {                                                                       \
        long long g_ = (long long)(got), w_ = (long long)(want);               \
        if (!ok(g_ == w_, __VA_ARGS__))                                        \
            diag("  got %lld, want %lld", g_, w_);                             \
    } while (0)
#define is_str(got, want, ...)                                                 \
    do {                                                                       \
        const char *g_ = (got), *w_ = (want);                                  \
        if (!ok(g_ && w_ && strcmp(g_, w_) == 0, __VA_ARGS__))                 \
            diag("  got \"%s\", want \"%s\"", g_ ? g_ : "(null)",              \
                 w_ ? w_ : "(null)");                                          \
    } while (0)
/* Skip the next 'n' tests (each counted as a TAP skip, which prove shows
 * as such) because of 'why': for a check this host cannot make. */
#define skip(n, why)                                                           \
    do {                                                                       \
        for (int skip_i_ = 0; skip_i_ < (n); skip_i_++)                        \
            printf("ok %d # skip %s\n", ++tap_n, (why));                       \
        fflush(stdout);                                                        \
    } while (0)
/* Whether 'got' is 'want' within 1e-9 of it (absolute below 1). */
static inline int tap_near(double got, double want)
{
    return fabs(got - want) <= 1e-9 * (fabs(want) > 1 ? fabs(want) : 1);
}
#define is_num(got, want, ...)                                                 \
    do {                                                                       \
        double g_ = (got), w_ = (want);                                        \
        if (!ok(tap_near(g_, w_), __VA_ARGS__))                                \
            diag("  got %.12g, want %.12g", g_, w_);                           \
    } while (0)
/* Diagnostics go to stderr, as Test::More's do, so prove shows them. */
#define diag(...)                                                              \
    (fflush(stdout), fprintf(stderr, "# "), fprintf(stderr, __VA_ARGS__),      \
     fprintf(stderr, "\n"))

static inline int done_testing(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
