/*
 * util.c - error text, logging, clocks, unit parsing, bounded file I/O.
 */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The text is formatted aside first: a caller may pass err->text (or
 * err->field) among the arguments, to wrap the message it already holds,
 * and snprintf into a buffer it reads from is undefined. */
int sl_errorf(struct sl_error *err, int rc, const char *fmt, ...)
{
    if (err) {
        char text[sizeof(err->text)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        memcpy(err->text, text, sizeof(text));
    }
    return rc;
}

int sl_errorf_field(struct sl_error *err, int rc, const char *field,
                    const char *fmt, ...)
{
    if (err) {
        char text[sizeof(err->text)], f[sizeof(err->field)];
        va_list ap;
        sl_strlcpy(f, field ? field : "", sizeof(f));
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        memcpy(err->text, text, sizeof(text));
        memcpy(err->field, f, sizeof(f));
    }
    return rc;
}

static enum sl_log_level log_level = SL_LOG_INFO;

void sl_log_set_level(enum sl_log_level level) { log_level = level; }

void sl_log(enum sl_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    char line[1024], ts[40];
    va_list ap;
    int n;

    if (level < log_level)
        return;
    n = snprintf(line, sizeof(line), "ts=%s level=%s ",
                 sl_time_rfc3339(sl_now_ms(), ts, sizeof(ts)), names[level]);
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    /* One write per line keeps lines whole when threads log at once. */
    n = (int)strlen(line);
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, (size_t)n) < 0) {
        /* Nowhere left to report a failing stderr. */
    }
}

int64_t sl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t sl_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t sl_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *sl_time_rfc3339(int64_t ms, char *buf, size_t size)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char tmp[32];

    gmtime_r(&secs, &tm);
    strftime(tmp, sizeof(tmp), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, size, "%s.%03dZ", tmp, (int)(ms % 1000));
    return buf;
}

size_t sl_strlcpy(char *dst, const char *src, size_t size)
{
    size_t len = strlen(src);
    if (size) {
        size_t n = len < size - 1 ? len : size - 1;
        memcpy(dst, src, n);
        dst[n] = '\0';
    }
    return len;
}

int sl_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    int64_t v = 0;

    if (!s || !*s)
        return -EINVAL;
    for (const char *p = s; *p; p++) {
        if (!isdigit((unsigned char)*p))
            return -EINVAL;
        if (v > (INT64_MAX - (*p - '0')) / 10)
            return -ERANGE;
        v = v * 10 + (*p - '0');
    }
    if (v < min || v > max)
        return -ERANGE;
    *out = v;
    return 0;
}

/* Parse "<digits>[.<digits>]" at *pp into a value scaled by 1000
 * (fixed point), advancing *pp. */
static int parse_milli(const char **pp, int64_t *out)
{
    const char *p = *pp;
    int64_t whole = 0, frac = 0;
    int fdigits = 0;

    if (!isdigit((unsigned char)*p))
        return -EINVAL;
    while (isdigit((unsigned char)*p)) {
        if (whole > INT64_MAX / 10000)
            return -ERANGE;
        whole = whole * 10 + (*p++ - '0');
    }
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -EINVAL;
        while (isdigit((unsigned char)*p)) {
            if (fdigits < 3) {
                frac = frac * 10 + (*p - '0');
                fdigits++;
            } else if (*p != '0') {
                return -EINVAL; /* finer than milli */
            }
            p++;
        }
    }
    while (fdigits++ < 3)
        frac *= 10;
    *out = whole * 1000 + frac;
    *pp = p;
    return 0;
}

int sl_parse_duration_ms(const char *s, int64_t *out_ms)
{
    static const struct {
        const char *suffix;
        int64_t ms;
    } units[] = {
        /* longest suffix first so "ms" wins over "m" */
        {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000},
    };
    const char *p = s;
    int64_t total = 0;
    int rc;

    if (!s || !*s)
        return -EINVAL;
    while (*p) {
        const char *start = p;
        int64_t v;
        size_t i;

        if ((rc = parse_milli(&p, &v)) < 0)
            return rc;
        if (!*p) {
            if (start != s)
                return -EINVAL; /* a bare number only stands alone */
            total = v; /* seconds, as milli */
            break;
        }
        for (i = 0; i < SL_ARRAY_LEN(units); i++) {
            size_t n = strlen(units[i].suffix);
            if (strncmp(p, units[i].suffix, n) == 0)
                break;
        }
        if (i == SL_ARRAY_LEN(units))
            return -EINVAL;
        if (v > INT64_MAX / units[i].ms)
            return -ERANGE;
        v = v * units[i].ms / 1000;
        if (total > INT64_MAX - v)
            return -ERANGE;
        total += v;
        p += strlen(units[i].suffix);
    }
    *out_ms = total;
    return 0;
}

int sl_parse_bytes(const char *s, int64_t *out_bytes)
{
    static const struct {
        const char *suffix;
        int64_t mult;
    } units[] = {
        {"Ki", 1LL << 10}, {"Mi", 1LL << 20}, {"Gi", 1LL << 30},
        {"Ti", 1LL << 40}, {"K", 1000LL},     {"k", 1000LL},
        {"M", 1000000LL},  {"G", 1000000000LL}, {"T", 1000000000000LL},
        {"", 1},
    };
    const char *p = s;
    int64_t milli;
    int rc;

    if (!s || !*s)
        return -EINVAL;
    if ((rc = parse_milli(&p, &milli)) < 0)
        return rc;
    for (size_t i = 0; i < SL_ARRAY_LEN(units); i++) {
        if (strcmp(p, units[i].suffix) == 0) {
            int64_t whole = milli / 1000, frac = milli % 1000;
            int64_t frac_bytes = frac * (units[i].mult / 1000) +
                                 frac * (units[i].mult % 1000) / 1000;
            if (whole > (INT64_MAX - frac_bytes) / units[i].mult)
                return -ERANGE;
            *out_bytes = whole * units[i].mult + frac_bytes;
            return 0;
        }
    }
    return -EINVAL;
}

int sl_parse_cpu_milli(const char *s, int64_t *out_milli)
{
    const char *p = s;
    int64_t v;
    int rc;

    if (!s || !*s)
        return -EINVAL;
    if ((rc = parse_milli(&p, &v)) < 0)
        return rc;
    if (*p == '\0') {
        *out_milli = v;
        return 0;
    }
    if (strcmp(p, "m") == 0 && v % 1000 == 0) {
        *out_milli = v / 1000;
        return 0;
    }
    return -EINVAL;
}

static const struct {
    const char *name;
    int sig;
} signal_table[] = {
    /* name without the SIG prefix, number */
    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
    {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"CONT", SIGCONT},
    {"STOP", SIGSTOP}, {"ALRM", SIGALRM}, {"WINCH", SIGWINCH},
};

int sl_signal_from_name(const char *name)
{
    if (!name)
        return -EINVAL;
    if (strncmp(name, "SIG", 3) == 0)
        name += 3;
    for (size_t i = 0; i < SL_ARRAY_LEN(signal_table); i++)
        if (strcmp(name, signal_table[i].name) == 0)
            return signal_table[i].sig;
    return -EINVAL;
}

const char *sl_signal_name(int sig)
{
    static const char *full[] = {
        "SIGHUP", "SIGINT", "SIGQUIT", "SIGKILL", "SIGUSR1", "SIGUSR2",
        "SIGTERM", "SIGCONT", "SIGSTOP", "SIGALRM", "SIGWINCH",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(signal_table); i++)
        if (signal_table[i].sig == sig)
            return full[i];
    return "?";
}

int sl_read_file(const char *path, size_t cap, char **out, size_t *len)
{
    int fd = -1, rc = 0;
    char *buf = NULL;
    size_t used = 0, size = 4096;

    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    if (!(buf = malloc(size + 1))) {
        rc = -ENOMEM;
        goto out;
    }
    for (;;) {
        ssize_t n;
        if (used == size) {
            char *nb;
            if (size > cap) {
                rc = -EFBIG;
                goto out;
            }
            size *= 2;
            if (!(nb = realloc(buf, size + 1))) {
                rc = -ENOMEM;
                goto out;
            }
            buf = nb;
        }
        n = read(fd, buf + used, size - used);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            goto out;
        }
        if (n == 0)
            break;
        used += (size_t)n;
        if (used > cap) {
            rc = -EFBIG;
            goto out;
        }
    }
    buf[used] = '\0';
    *out = buf;
    buf = NULL;
    if (len)
        *len = used;
out:
    free(buf);
    if (fd >= 0)
        close(fd);
    return rc;
}

int sl_write_file_atomic(const char *path, const void *buf, size_t len,
                         unsigned mode)
{
    char tmp[4096];
    int fd = -1, rc = 0;
    size_t off = 0;

    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
        return -ENAMETOOLONG;
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)) < 0)
        return -errno;
    if (fchmod(fd, mode) < 0) {
        rc = -errno;
        goto out;
    }
    while (off < len) {
        ssize_t n = write(fd, (const char *)buf + off, len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            goto out;
        }
        off += (size_t)n;
    }
    if (fsync(fd) < 0) {
        rc = -errno;
        goto out;
    }
    if (close(fd) < 0) {
        fd = -1;
        rc = -errno;
        goto out;
    }
    fd = -1;
    if (rename(tmp, path) < 0)
        rc = -errno;
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlink(tmp);
    return rc;
}

int sl_mkdir_p(const char *path, unsigned mode)
{
    char buf[4096];
    size_t len = sl_strlcpy(buf, path, sizeof(buf));

    if (len >= sizeof(buf))
        return -ENAMETOOLONG;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, mode) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* The pid a lock file holds ("<pid>\n"), 0 when none can be read. */
static pid_t lock_holder(int fd)
{
    char buf[24];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    int64_t v = 0;

    if (n <= 0)
        return 0;
    buf[n] = '\0';
    if (buf[n - 1] == '\n')
        buf[n - 1] = '\0';
    return sl_parse_int64(buf, 1, INT32_MAX, &v) == 0 ? (pid_t)v : 0;
}

int sl_lock_file(const char *path, pid_t *holder)
{
    char line[24];
    int fd, n, rc;

    if (holder)
        *holder = 0;
    if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
        return -errno;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        rc = errno == EWOULDBLOCK ? -EAGAIN : -errno;
        if (holder && rc == -EAGAIN)
            *holder = lock_holder(fd);
        close(fd);
        return rc;
    }
    n = snprintf(line, sizeof(line), "%d\n", (int)getpid());
    if (fchmod(fd, 0600) < 0 || ftruncate(fd, 0) < 0 ||
        pwrite(fd, line, (size_t)n, 0) != n) {
        rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

int sl_lock_file_held(const char *path, pid_t *holder)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), rc = 0;

    *holder = 0;
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
        if (errno == EWOULDBLOCK) {
            *holder = lock_holder(fd);
            rc = 1;
        } else {
            rc = -errno;
        }
    }
    close(fd); /* releases the shared lock, if it was taken */
    return rc;
}

/* One directory of sl_dir_private, open as 'fd' (closed here). */
static int private_walk(int fd, const char *path, int depth, int *fixed,
                        struct sl_error *err)
{
    DIR *d = fdopendir(fd);
    struct dirent *de;
    int rc = 0;

    if (!d) {
        rc = -errno;
        close(fd);
        return sl_errorf(err, rc, "%s: %s", path, strerror(-rc));
    }
    while (rc == 0 && (errno = 0, de = readdir(d))) {
        struct stat st;
        char sub[4096];
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
                continue; /* gone meanwhile */
            rc = -errno;
            sl_errorf(err, rc, "%s: %s", sub, strerror(-rc));
            break;
        }
        if (S_ISLNK(st.st_mode))
            continue;
        if ((st.st_mode & 077) && st.st_uid != geteuid()) {
            /* A job's log, owned by the job's account: the daemon owns
             * the directory, so the file is still private to the two of
             * them once its bits are off. */
            if (geteuid() != 0) {
                rc = sl_errorf(err, -EPERM, "%s: mode %04o, owned by uid %u",
                               sub, (unsigned)(st.st_mode & 07777),
                               (unsigned)st.st_uid);
                break;
            }
        }
        if (st.st_mode & 077) {
            if (fchmodat(dirfd(d), de->d_name, st.st_mode & 0700, 0) < 0) {
                rc = -errno;
                sl_errorf(err, rc, "chmod %s: %s", sub, strerror(-rc));
                break;
            }
            if (fixed)
                (*fixed)++;
        }
        if (S_ISDIR(st.st_mode) && depth > 0) {
            int cfd = openat(dirfd(d), de->d_name,
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (cfd < 0) {
                rc = -errno;
                sl_errorf(err, rc, "%s: %s", sub, strerror(-rc));
                break;
            }
            rc = private_walk(cfd, sub, depth - 1, fixed, err);
        }
    }
    if (rc == 0 && errno != 0) {
        rc = -errno;
        sl_errorf(err, rc, "%s: %s", path, strerror(-rc));
    }
    closedir(d);
    return rc;
}

int sl_dir_private(const char *dir, int depth, int *fixed, struct sl_error *err)
{
    struct stat st;
    int fd, rc;

    if (fixed)
        *fixed = 0;
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        rc = -errno;
        return sl_errorf(err, rc, "%s: %s", dir, strerror(-rc));
    }
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        close(fd);
        return sl_errorf(err, rc, "%s: %s", dir, strerror(-rc));
    }
    if (st.st_uid != geteuid()) {
        close(fd);
        return sl_errorf(err, -EPERM, "%s is owned by uid %u, not by this process's uid %u",
                         dir, (unsigned)st.st_uid, (unsigned)geteuid());
    }
    if ((st.st_mode & 077) && fchmod(fd, st.st_mode & 0700) < 0) {
        rc = -errno;
        close(fd);
        return sl_errorf(err, rc, "chmod %s: %s", dir, strerror(-rc));
    }
    if ((st.st_mode & 077) && fixed)
        (*fixed)++;
    return private_walk(fd, dir, depth - 1, fixed, err);
}

bool sl_utf8_valid(const unsigned char *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        unsigned char c = s[i];
        size_t n;
        uint32_t cp;

        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (len - i <= n)
            return false;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return false;
        i += n + 1;
    }
    return true;
}

void sl_text_show(char *dst, size_t size, const char *s, size_t len, size_t max)
{
    size_t i = 0, o = 0;

    while (i < len && o + 4 < size) {
        unsigned char c = (unsigned char)s[i];
        size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;

        if (o + n > max || o + n + 4 > size) {
            memcpy(dst + o, "...", 3);
            o += 3;
            break;
        }
        if (c < 0x20 || c == 0x7f || n > len - i ||
            (c >= 0x80 && !sl_utf8_valid((const unsigned char *)s + i, n))) {
            dst[o++] = '?';
            i++;
            continue;
        }
        memcpy(dst + o, s + i, n);
        o += n;
        i += n;
    }
    dst[o] = '\0';
}

int sl_grow(void **p, int *cap, int need, size_t elem)
{
    int ncap;
    void *np;

    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > (1 << 28))
            return -ENOMEM;
        ncap *= 2;
    }
    if (!(np = realloc(*p, (size_t)ncap * elem)))
        return -ENOMEM;
    *p = np;
    *cap = ncap;
    return 0;
}

/* ---- times ---- */

static int digits(const char **pp, int n, int *out)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        char ch = (*pp)[i];
        if (ch < '0' || ch > '9')
            return -EINVAL;
        v = v * 10 + (ch - '0');
    }
    *pp += n;
    *out = v;
    return 0;
}

static int days_in_month(int year, int mon)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

    return mon == 2 && leap ? 29 : days[mon - 1];
}

int sl_parse_rfc3339_ms(const char *s, int64_t *out_ms)
{
    const char *p = s;
    struct tm tm = {0};
    int year, mon, day, hour, min, sec, ms = 0, off_min = 0;
    time_t t;

    if (!s || digits(&p, 4, &year) || *p++ != '-' || digits(&p, 2, &mon) ||
        *p++ != '-' || digits(&p, 2, &day) ||
        (*p != 'T' && *p != 't' && *p != ' '))
        return -EINVAL;
    p++;
    if (digits(&p, 2, &hour) || *p++ != ':' || digits(&p, 2, &min) ||
        *p++ != ':' || digits(&p, 2, &sec))
        return -EINVAL;
    if (*p == '.') {
        int scale = 100;
        p++;
        if (*p < '0' || *p > '9')
            return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
            ms += (*p - '0') * scale;
            scale /= 10;
        }
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
            return -EINVAL;
        off_min = sign * (oh * 60 + om);
    } else {
        return -EINVAL;
    }
    /* A date that exists, and no leap second (epoch ms has none): one
     * meaning, not timegm's normalised one. */
    if (*p || mon < 1 || mon > 12 || day < 1 || day > days_in_month(year, mon) ||
        hour > 23 || min > 59 || sec > 59)
        return -EINVAL;
    tm.tm_year = year - 1900;
    tm.tm_mon = mon - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = min;
    tm.tm_sec = sec;
    t = timegm(&tm);
    *out_ms = ((int64_t)t - (int64_t)off_min * 60) * 1000 + ms;
    return 0;
}

int sl_parse_when_ms(const char *s, int64_t *out_ms)
{
    const char *p = s;
    int year, mon, day;
    int64_t ms;

    if (!s || !*s)
        return -EINVAL;
    if (sl_parse_int64(s, 0, INT64_MAX, &ms) == 0 && strlen(s) > 10) {
        *out_ms = ms; /* epoch ms */
        return 0;
    }
    if (strlen(s) == 10 && digits(&p, 4, &year) == 0 && *p++ == '-' &&
        digits(&p, 2, &mon) == 0 && *p++ == '-' && digits(&p, 2, &day) == 0) {
        char full[32];
        snprintf(full, sizeof(full), "%.10sT00:00:00Z", s);
        return sl_parse_rfc3339_ms(full, out_ms);
    }
    return sl_parse_rfc3339_ms(s, out_ms);
}


bool sl_text_printable(const char *s)
{
    size_t n = strlen(s);

    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return sl_utf8_valid((const unsigned char *)s, n);
}

const char *sl_fmt_decimal(double v, int max_decimals, char *buf, size_t size)
{
    char tmp[400];
    int dec;
    size_t n;

    if (size == 0)
        return buf;
    if (isnan(v) || isinf(v)) {
        snprintf(buf, size, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
        return buf;
    }
    if (max_decimals < 0)
        max_decimals = 0;
    if (max_decimals > 17)
        max_decimals = 17;
    for (dec = 0; dec < max_decimals; dec++) {
        snprintf(tmp, sizeof(tmp), "%.*f", dec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    snprintf(tmp, sizeof(tmp), "%.*f", dec, v);
    n = strlen(tmp);
    if (strchr(tmp, '.')) {
        while (n > 0 && tmp[n - 1] == '0')
            tmp[--n] = '\0';
        if (n > 0 && tmp[n - 1] == '.')
            tmp[--n] = '\0';
    }
    snprintf(buf, size, "%s", strcmp(tmp, "-0") == 0 ? "0" : tmp);
    return buf;
}

const char *sl_fmt_duration(int64_t ms, char *buf, size_t size)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } parts[] = {{"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
    size_t n = 0;

    if (size == 0)
        return buf;
    buf[0] = '\0';
    if (ms <= 0) {
        snprintf(buf, size, "0s");
        return buf;
    }
    for (size_t i = ms < 120000 ? 2 : 0; i < SL_ARRAY_LEN(parts) && ms > 0; i++) {
        int64_t v = ms / parts[i].ms;
        if (!v)
            continue;
        ms -= v * parts[i].ms;
        n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%lld%s", (long long)v,
                              parts[i].unit);
    }
    return buf;
}
