/*
 * test_util.c - the unit parsers of util.c: durations, byte quantities,
 * CPU amounts, bounded integers, signal names, bounded copies.
 */
#include <errno.h>
#include <signal.h>

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

int main(void)
{
    durations();
    quantities();
    cpus();
    integers();
    signals();
    copies();
    return done_testing();
}
