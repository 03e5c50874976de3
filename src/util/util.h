/*
 * util.h - small helpers every module may use: error text, logging, clocks,
 * bounded string copies and file reads, unit parsing (durations, quantities).
 *
 * No project dependencies. All functions are thread-safe unless noted.
 */
#ifndef SL_UTIL_H
#define SL_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#define SL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Human-readable text that travels with a negated errno. 'field' names the
 * input field at fault ("spec.resources.gpus"), empty when none. */
struct sl_error {
    char field[96];
    char text[384];
};

/* Fill 'err' (may be NULL) with the formatted text and return 'rc'
 * (a negated errno), so callers can write: return sl_errorf(err, -EINVAL, ...). */
int sl_errorf(struct sl_error *err, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* As sl_errorf, and also record 'field' as the field at fault. */
int sl_errorf_field(struct sl_error *err, int rc, const char *field,
                    const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Logging: one line per call to stderr, "ts=... level=... msg=..." followed
 * by the caller's key=value pairs. */
enum sl_log_level { SL_LOG_DEBUG, SL_LOG_INFO, SL_LOG_WARN, SL_LOG_ERROR };
void sl_log_set_level(enum sl_log_level level);
void sl_log(enum sl_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define sl_debug(...) sl_log(SL_LOG_DEBUG, __VA_ARGS__)
#define sl_info(...) sl_log(SL_LOG_INFO, __VA_ARGS__)
#define sl_warn(...) sl_log(SL_LOG_WARN, __VA_ARGS__)
#define sl_error(...) sl_log(SL_LOG_ERROR, __VA_ARGS__)

/* Wall clock in milliseconds since the epoch; monotonic clock in ms. */
int64_t sl_now_ms(void);
int64_t sl_mono_ms(void);
/* Monotonic clock in nanoseconds, for timing short operations. */
int64_t sl_mono_ns(void);

/* Format 'ms' (epoch ms) as RFC 3339 UTC with millisecond precision into
 * 'buf' (>= 32 bytes). Returns buf. */
char *sl_time_rfc3339(int64_t ms, char *buf, size_t size);

/* Parse RFC 3339 ("2026-12-02T10:00:00Z", "...T10:00:00.250+01:00") into
 * epoch ms (digits after the third of a fraction are dropped). A date that
 * does not exist (February 30), a leap second and an offset beyond 23:59
 * are refused. Returns 0 or -EINVAL. */
int sl_parse_rfc3339_ms(const char *s, int64_t *out_ms);
/* As above, and also a date ("2026-12-02": midnight UTC) or epoch ms (more
 * than 10 digits). */
int sl_parse_when_ms(const char *s, int64_t *out_ms);

/* Copy at most size-1 bytes of 'src' into 'dst' and NUL-terminate.
 * Returns the length of src (truncation happened when >= size). */
size_t sl_strlcpy(char *dst, const char *src, size_t size);

/* Parse a duration such as "90s", "2h", "1h30m", "500ms", "1d" into ms.
 * A bare number is seconds. Returns 0 or -EINVAL / -ERANGE. */
int sl_parse_duration_ms(const char *s, int64_t *out_ms);

/* Write a duration of 'ms' (negative counts as 0) to buf as people read
 * it and sl_parse_duration_ms reads it back exactly: hours, minutes,
 * seconds and milliseconds with the zero parts left out, no days, and
 * under two minutes in seconds: "72h", "1h30m", "2m30s", "90s", "1s500ms",
 * "250ms", "0s". Returns buf (cut to size like snprintf). */
const char *sl_fmt_duration(int64_t ms, char *buf, size_t size);

/* Parse a memory quantity ("16Gi", "512Mi", "1G", "1024") into bytes.
 * Returns 0 or -EINVAL / -ERANGE. */
int sl_parse_bytes(const char *s, int64_t *out_bytes);

/* Parse a CPU amount ("4", "0.5", "250m") into milli-CPUs. */
int sl_parse_cpu_milli(const char *s, int64_t *out_milli);

/* Parse a non-negative decimal integer with bounds; no sign, no spaces. */
int sl_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out);

/* Signal names: "SIGUSR1" or "USR1" -> number; 0 -> -EINVAL. */
int sl_signal_from_name(const char *name);
const char *sl_signal_name(int sig);

/* Read a whole file of at most 'cap' bytes into a new NUL-terminated buffer.
 * Returns 0 and sets *out (caller frees) and *len, or -errno; -EFBIG when
 * the file is larger than cap. */
int sl_read_file(const char *path, size_t cap, char **out, size_t *len);

/* Write 'len' bytes to 'path' atomically (temp file, fsync, rename) with
 * the given mode. Returns 0 or -errno. */
int sl_write_file_atomic(const char *path, const void *buf, size_t len,
                         unsigned mode);

/* mkdir -p with the given mode. Returns 0 or -errno. */
int sl_mkdir_p(const char *path, unsigned mode);

/* Take an exclusive advisory lock (flock) on 'path', creating it 0600, and
 * write this process's pid into it. Returns the open descriptor (keep it
 * open for as long as the lock is held; close releases it), or -EAGAIN
 * with *holder the pid written by the process that holds it (0 when it
 * wrote none), or another -errno. The descriptor is close-on-exec; a
 * forked child that keeps it shares the lock, so children that outlive
 * the holder must close it. */
int sl_lock_file(const char *path, pid_t *holder);
/* Whether 'path' is locked by another process, without creating it:
 * returns 1 with *holder set, 0 when not (or absent), or -errno. */
int sl_lock_file_held(const char *path, pid_t *holder);

/* Make the tree at 'dir' private to its owner, who must be this process's
 * effective user: 'dir' and the directories below it, down to 'depth'
 * levels, lose every group and other permission bit (0700 for
 * directories, files keep their owner bits only). Symbolic links are
 * neither followed nor changed. *fixed (may be NULL) counts the entries
 * changed. Returns 0, or -EPERM with 'err' naming the entry that another
 * user owns (fixing it would hand it over), or another -errno with 'err'
 * filled. */
int sl_dir_private(const char *dir, int depth, int *fixed, struct sl_error *err);

/* Make room for 'need' elements of 'elem' bytes in the array *p of *cap:
 * doubles from 16, at most 2^28 elements. Returns 0 or -ENOMEM (the array
 * as it was). */
int sl_grow(void **p, int *cap, int need, size_t elem);

/* Whether s[0..len) is well-formed UTF-8 (no overlongs, no surrogates,
 * nothing past U+10FFFF). */
bool sl_utf8_valid(const unsigned char *s, size_t len);
/* Whether 's' is well-formed UTF-8 without control characters. */
bool sl_text_printable(const char *s);

/* Copy at most 'max' bytes of s[0..len) into dst (of 'size' bytes) for an
 * error message: control characters and invalid UTF-8 become '?', a cut
 * never splits a character, and a cut is shown as "...". */
void sl_text_show(char *dst, size_t size, const char *s, size_t len,
                  size_t max);

/* Write v to buf (of 'size' bytes) as people read a number: fixed
 * notation, never an exponent, with the fewest decimals (at most
 * 'max_decimals', 0..17) that read back as v, else rounded to
 * 'max_decimals'; no trailing zeros, no "-0". 0.2625 is "0.2625", not
 * "0.26250000000000001"; 7.6e-06 is "0.0000076"; 3.0 is "3". NaN and the
 * infinities are "nan", "inf" and "-inf". Returns buf (cut to size when
 * too small, like snprintf). */
const char *sl_fmt_decimal(double v, int max_decimals, char *buf, size_t size);

#endif
