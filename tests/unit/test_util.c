/*
 * test_util.c - the unit parsers of util.c: durations, byte quantities,
 * CPU amounts, bounded integers, signal names, bounded copies; lock files
 * and private trees; error text formatted from itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/util/util.h"
#include "../tap.h"

static void durations(void)
{
    static const struct {
        const char *in;
        int64_t ms;
    } good[] = {
        /* input, milliseconds */
        {"90s", 90000},    {"1h30m", 5400000}, {"500ms", 500},
        {"2h", 7200000},   {"1d", 86400000},   {"30", 30000},
        {"1m30s", 90000},  {"0.5s", 500},      {"1d2h3m4s5ms", 93784005},
    };
    static const char *bad[] = {"1x", "", "-1", "s", "1h30", "1.s", "+1s",
                                " 1s", "1s ", "1.0001s"};
    int64_t ms;

    for (size_t i = 0; i < SL_ARRAY_LEN(good); i++) {
        ms = -1;
        is_int(sl_parse_duration_ms(good[i].in, &ms), 0,
               "duration \"%s\" parses", good[i].in);
        is_int(ms, good[i].ms, "duration \"%s\" is %lld ms", good[i].in,
               (long long)good[i].ms);
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++)
        ok(sl_parse_duration_ms(bad[i], &ms) == -EINVAL,
           "duration \"%s\" is refused", bad[i]);
    ok(sl_parse_duration_ms(NULL, &ms) == -EINVAL,
       "a NULL duration is refused");
    ok(sl_parse_duration_ms("99999999999999999999d", &ms) == -ERANGE,
       "a duration past int64 is out of range");
    ok(sl_parse_duration_ms("9999999999999999h", &ms) == -ERANGE,
       "a duration whose unit product overflows is out of range");
}

static void quantities(void)
{
    static const struct {
        const char *in;
        int64_t bytes;
    } good[] = {
        /* input, bytes */
        {"16Gi", 16LL << 30}, {"512Mi", 512LL << 20}, {"1G", 1000000000LL},
        {"1024", 1024},       {"1Ki", 1024},          {"2k", 2000},
        {"1.5Gi", 3LL << 29}, {"1Ti", 1LL << 40},     {"3M", 3000000},
    };
    static const char *bad[] = {"", "Gi", "1Q", "-1", "1 Gi", "1gi", "1.Gi",
                                "0x10", "1GiB"};
    int64_t b;

    for (size_t i = 0; i < SL_ARRAY_LEN(good); i++) {
        b = -1;
        is_int(sl_parse_bytes(good[i].in, &b), 0, "quantity \"%s\" parses",
               good[i].in);
        is_int(b, good[i].bytes, "quantity \"%s\" is %lld bytes", good[i].in,
               (long long)good[i].bytes);
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++)
        ok(sl_parse_bytes(bad[i], &b) == -EINVAL,
           "quantity \"%s\" is refused", bad[i]);
    ok(sl_parse_bytes("99999999999Ti", &b) == -ERANGE,
       "a quantity past int64 is out of range");
    ok(sl_parse_bytes("9223372.9T", &b) == -ERANGE,
       "a quantity whose fraction carries it past int64 is out of range");
    ok(sl_parse_bytes("1.5Gi", &b) == 0 && b == 1610612736,
       "a fractional quantity of a binary unit is exact");
}

static void cpus(void)
{
    static const struct {
        const char *in;
        int64_t milli;
    } good[] = {
        /* input, milli-CPUs */
        {"4", 4000}, {"0.5", 500}, {"250m", 250}, {"1.25", 1250},
        {"0", 0},    {"1000m", 1000},
    };
    static const char *bad[] = {"", "m", "1.5m", "0.0001", "-1", "4 ", "4c",
                                "1e3"};
    int64_t m;

    for (size_t i = 0; i < SL_ARRAY_LEN(good); i++) {
        m = -1;
        is_int(sl_parse_cpu_milli(good[i].in, &m), 0, "cpu \"%s\" parses",
               good[i].in);
        is_int(m, good[i].milli, "cpu \"%s\" is %lld milli", good[i].in,
               (long long)good[i].milli);
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++)
        ok(sl_parse_cpu_milli(bad[i], &m) == -EINVAL, "cpu \"%s\" is refused",
           bad[i]);
}

static void integers(void)
{
    int64_t v = -1;

    ok(sl_parse_int64("42", 0, 100, &v) == 0 && v == 42,
       "an integer within bounds parses");
    ok(sl_parse_int64("101", 0, 100, &v) == -ERANGE,
       "an integer above the bound is out of range");
    ok(sl_parse_int64("-1", 0, 100, &v) == -EINVAL, "a sign is refused");
    ok(sl_parse_int64("", 0, 100, &v) == -EINVAL, "an empty integer is refused");
    ok(sl_parse_int64("99999999999999999999", 0, INT64_MAX, &v) == -ERANGE,
       "an integer past int64 is out of range");
}

static void signals(void)
{
    is_int(sl_signal_from_name("SIGUSR1"), SIGUSR1, "SIGUSR1 is a signal name");
    is_int(sl_signal_from_name("USR1"), SIGUSR1,
           "a signal name without SIG is accepted");
    is_int(sl_signal_from_name("SIGTERM"), SIGTERM, "SIGTERM is a signal name");
    is_int(sl_signal_from_name("SIGFOO"), -EINVAL,
           "an unknown signal name is refused");
    is_int(sl_signal_from_name("sigterm"), -EINVAL,
           "signal names are case-sensitive");
    is_int(sl_signal_from_name(""), -EINVAL, "an empty signal name is refused");
    is_int(sl_signal_from_name(NULL), -EINVAL, "a NULL signal name is refused");
    is_str(sl_signal_name(SIGTERM), "SIGTERM", "SIGTERM is named back");
    is_str(sl_signal_name(SIGUSR2), "SIGUSR2", "SIGUSR2 is named back");
}

static void copies(void)
{
    char buf[4];

    is_int(sl_strlcpy(buf, "abcdef", sizeof(buf)), 6,
           "strlcpy returns the source length");
    is_str(buf, "abc", "strlcpy truncates and terminates");
}

static void error_text(void)
{
    struct sl_error err = {"", ""};

    sl_errorf_field(&err, -EINVAL, "spec.gpus", "must be 0..64");
    is_int(sl_errorf(&err, -EINVAL, "--config x: %s", err.text), -EINVAL,
           "sl_errorf returns its code");
    is_str(err.text, "--config x: must be 0..64", "a message may wrap the one it replaces");
    sl_errorf_field(&err, -EINVAL, err.field, "[1].%s: %s", err.field, err.text);
    is_str(err.text, "[1].spec.gpus: --config x: must be 0..64",
           "sl_errorf_field too, from its own text and field");
    is_str(err.field, "spec.gpus", "and the field may be its own");
}

static void lock_files(void)
{
    char dir[] = "/tmp/sluice-test-util-XXXXXX", path[128], text[32] = "";
    pid_t holder = -1;
    int fd, fd2;
    struct stat st;

    if (!mkdtemp(dir)) {
        ok(0, "mkdtemp: %s", strerror(errno));
        return;
    }
    snprintf(path, sizeof(path), "%s/x.lock", dir);
    is_int(sl_lock_file_held(path, &holder), 0, "an absent lock file is not held");
    ok(access(path, F_OK) != 0, "and asking does not create it");
    umask(0);
    fd = sl_lock_file(path, &holder);
    ok(fd >= 0, "the lock is taken");
    ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "its file is 0600 under umask 0");
    {
        int r = open(path, O_RDONLY);
        ssize_t n = r >= 0 ? read(r, text, sizeof(text) - 1) : -1;
        if (n >= 0)
            text[n] = '\0';
        if (r >= 0)
            close(r);
    }
    ok(strtol(text, NULL, 10) == getpid(), "it holds this process's pid: %s", text);
    /* flock conflicts between open file descriptions, even in one process */
    fd2 = sl_lock_file(path, &holder);
    is_int(fd2, -EAGAIN, "a second taker is refused with -EAGAIN");
    is_int(holder, getpid(), "and told the holder's pid");
    holder = -1;
    is_int(sl_lock_file_held(path, &holder), 1, "held says so");
    is_int(holder, getpid(), "with the holder's pid");
    close(fd);
    is_int(sl_lock_file_held(path, &holder), 0, "closing the descriptor releases it");
    ok((fd = sl_lock_file(path, &holder)) >= 0, "and it can be taken again");
    close(fd);
    unlink(path);
    rmdir(dir);
}

static void private_trees(void)
{
    char dir[] = "/tmp/sluice-test-util-XXXXXX", p[256], q[256];
    struct sl_error err = {"", ""};
    struct stat st;
    int fixed = -1, fd;

    if (!mkdtemp(dir)) {
        ok(0, "mkdtemp: %s", strerror(errno));
        return;
    }
    chmod(dir, 0755);
    snprintf(p, sizeof(p), "%s/logs", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/logs/deep", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/logs/deep/far.log", dir);
    fd = open(p, O_CREAT | O_WRONLY, 0644);
    fchmod(fd, 0644);
    close(fd);
    snprintf(p, sizeof(p), "%s/db", dir);
    fd = open(p, O_CREAT | O_WRONLY, 0640);
    fchmod(fd, 0640);
    close(fd);
    snprintf(q, sizeof(q), "%s/link", dir);
    ok(symlink("/etc/passwd", q) == 0, "a symbolic link to a file outside");
    is_int(sl_dir_private(dir, 2, &fixed, &err), 0, "a 0755 tree is made private");
    is_int(fixed, 4, "four entries were changed: the dir, logs, deep and db");
    ok(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "the dir is 0700");
    ok(stat(p, &st) == 0 && (st.st_mode & 0777) == 0600, "its file 0640 is 0600");
    snprintf(p, sizeof(p), "%s/logs/deep", dir);
    ok(stat(p, &st) == 0 && (st.st_mode & 0777) == 0700, "a directory two levels down is 0700");
    snprintf(p, sizeof(p), "%s/logs/deep/far.log", dir);
    ok(stat(p, &st) == 0 && (st.st_mode & 0777) == 0644,
       "below the depth asked for nothing changes");
    ok(stat("/etc/passwd", &st) == 0 && (st.st_mode & 0044) == 0044,
       "the link's target is left alone");
    is_int(sl_dir_private(dir, 2, &fixed, &err), 0, "a private tree stays so");
    is_int(fixed, 0, "with nothing changed");
    snprintf(p, sizeof(p), "%s/nope", dir);
    ok(sl_dir_private(p, 1, &fixed, &err) == -ENOENT && strstr(err.text, "nope"),
       "an absent dir is -ENOENT, named: %s", err.text);
    if (geteuid() == 0) {
        ok(chown(dir, 65534, 65534) == 0, "the dir handed to nobody");
        ok(sl_dir_private(dir, 1, &fixed, &err) == -EPERM && strstr(err.text, "65534"),
           "a dir another user owns is refused: %s", err.text);
        ok(chown(dir, 0, 0) == 0, "and taken back");
    } else {
        skip(3, "chown needs root");
    }
    unlink(q);
    snprintf(p, sizeof(p), "%s/logs/deep/far.log", dir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/logs/deep", dir);
    rmdir(p);
    snprintf(p, sizeof(p), "%s/logs", dir);
    rmdir(p);
    snprintf(p, sizeof(p), "%s/db", dir);
    unlink(p);
    rmdir(dir);
}

static void times(void)
{
    static const struct {
        const char *s;
        long long ms; /* -1: refused */
    } cases[] = {
        /* text, epoch ms or -1 */
        {"2026-12-02T10:00:00Z", 1796205600000LL},
        {"2026-12-02t10:00:00z", 1796205600000LL},
        {"2026-12-02 10:00:00Z", 1796205600000LL},
        {"2026-12-02T11:00:00+01:00", 1796205600000LL},
        {"2026-12-02T09:30:00-00:30", 1796205600000LL},
        {"2026-12-02T10:00:00.250Z", 1796205600250LL},
        {"2026-12-02T10:00:00.2509Z", 1796205600250LL},
        {"2028-02-29T00:00:00Z", 1835395200000LL},
        {"2000-02-29T00:00:00Z", 951782400000LL},
        {"2026-02-29T00:00:00Z", -1},
        {"1900-02-29T00:00:00Z", -1},
        {"2026-04-31T00:00:00Z", -1},
        {"2026-02-30T00:00:00Z", -1},
        {"2026-12-02T10:59:60Z", -1},
        {"2026-12-02T24:00:00Z", -1},
        {"2026-12-02T10:00:00+24:00", -1},
        {"2026-12-02T10:00:00+01:60", -1},
        {"2026-12-02T10:00:00", -1},
        {"2026-12-02T10:00:00.Z", -1},
        {"2026-13-02T10:00:00Z", -1},
        {"2026-12-00T10:00:00Z", -1},
        {"2026-12-02T10:00:00Zx", -1},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t ms = -1;
        int rc = sl_parse_rfc3339_ms(cases[i].s, &ms);
        if (cases[i].ms < 0)
            ok(rc == -EINVAL, "RFC 3339 '%s' is refused", cases[i].s);
        else
            ok(rc == 0 && ms == cases[i].ms, "RFC 3339 '%s' is %lld ms (got %lld)",
               cases[i].s, cases[i].ms, (long long)ms);
    }
}

/* sl_fmt_decimal: fixed notation, fewest decimals that read back. */
static void decimals(void)
{
    static const struct {
        double v;
        int max;
        const char *want;
    } cases[] = {
        {0.2625, 9, "0.2625"},       /* not 0.26250000000000001 */
        {7.6e-06, 9, "0.0000076"},   /* not 7.6e-06 */
        {0.1 + 0.2, 9, "0.3"},       /* 0.30000000000000004 rounded to 9 */
        {0.1 + 0.2, 17, "0.30000000000000004"},
        {3.0, 9, "3"},
        {259200.0, 2, "259200"},
        {1234567890123.5, 9, "1234567890123.5"},
        {1e21, 9, "1000000000000000000000"},
        {-0.0, 9, "0"},
        {-1e-12, 9, "0"},            /* rounds to nothing: no "-0" */
        {-2.5, 9, "-2.5"},
        {2.0 / 3.0, 4, "0.6667"},
        {2.0 / 3.0, 0, "1"},
        {0.126, 2, "0.13"},
        {1.0 / 0.0, 9, "inf"},
        {-1.0 / 0.0, 9, "-inf"},
    };
    char buf[64];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sl_fmt_decimal(cases[i].v, cases[i].max, buf, sizeof(buf));
        ok(strcmp(buf, cases[i].want) == 0, "decimal %.17g (%d) is %s (got %s)", cases[i].v,
           cases[i].max, cases[i].want, buf);
    }
    sl_fmt_decimal(0.0 / 0.0, 9, buf, sizeof(buf));
    ok(strcmp(buf, "nan") == 0, "decimal NaN is nan");
    sl_fmt_decimal(1234.5678, 9, buf, 5);
    ok(strcmp(buf, "1234") == 0, "decimal cut to the buffer");
    sl_fmt_decimal(1.7976931348623157e308, 17, buf, sizeof(buf));
    ok(strlen(buf) == 63 && strchr(buf, 'e') == NULL, "the largest double: digits, no exponent");
}

/* sl_fmt_duration: exact, readable, and read back by sl_parse_duration_ms. */
static void duration_text(void)
{
    static const struct {
        int64_t ms;
        const char *want;
    } cases[] = {
        {259200000, "72h"},   {5400000, "1h30m"}, {90000, "90s"},   {150000, "2m30s"},
        {120000, "2m"},       {119999, "119s999ms"}, {1500, "1s500ms"}, {250, "250ms"},
        {0, "0s"},            {-5, "0s"},         {3601000, "1h1s"}, {7200000, "2h"},
        {604800000, "168h"},  {1, "1ms"},
    };
    char buf[64];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t back = -1;
        sl_fmt_duration(cases[i].ms, buf, sizeof(buf));
        ok(strcmp(buf, cases[i].want) == 0, "duration %lld ms is %s (got %s)",
           (long long)cases[i].ms, cases[i].want, buf);
        ok(sl_parse_duration_ms(buf, &back) == 0 &&
               back == (cases[i].ms > 0 ? cases[i].ms : 0),
           "  and %s reads back", buf);
    }
    sl_fmt_duration(5400000, buf, 3);
    ok(strcmp(buf, "1h") == 0, "duration cut to the buffer");
}

int main(void)
{
    decimals();
    duration_text();
    durations();
    times();
    quantities();
    cpus();
    integers();
    signals();
    copies();
    error_text();
    lock_files();
    private_trees();
    return done_testing();
}
