/*
 * test_gpumon.c - the NVML reader against the stand-in library
 * (tests/fakenvml, found next to this binary), host discovery through it,
 * energy and utilisation integration (device counter, power alone, a
 * counter reset, extrapolation), RAPL over a made-up powercap tree (package
 * domains only, counter wrap, unreadable files), and the monitor thread.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../src/exec/exec.h"
#include "../../src/exec/gpumon.h"
#include "../../src/util/util.h"
#include "../tap.h"

static char g_dir[PATH_MAX];      /* a temporary directory */
static char g_state[PATH_MAX + 16];
static struct sl_host_info info;  /* large: off the stack */

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

static bool near(double got, double want, double tol)
{
    if (fabs(got - want) <= tol)
        return true;
    diag("got %.6f, want %.6f (+- %.6f)", got, want, tol);
    return false;
}

static void test_no_nvml(void)
{
    setenv("SLUICE_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
    ok(sl_nvml_open() == NULL, "no library: no NVML, and no crash");
    is_str(sl_nvml_lib_path(), "/nonexistent/libnvidia-ml.so.1",
           "SLUICE_NVML_LIB names the library");
    unsetenv("SLUICE_NVML_LIB");
    is_str(sl_nvml_lib_path(), "libnvidia-ml.so.1", "the default is libnvidia-ml.so.1");
}

static void test_nvml(const char *lib)
{
    struct sl_nvml *n;
    struct sl_gpu_sample s;
    struct sl_error err = {"", ""};
    char name[96], uuid[96];
    int64_t mem = 0;
    struct timespec ts;
    double t0, t1;

    int minor = -1;

    put(g_state, "# util used total mW C energy [minor] name\n"
                 "87 30000 81559 350000 61 energy NVIDIA H100 80GB HBM3\n"
                 "0 10 40960 -1 40 noenergy minor=7 NVIDIA A100-SXM4-40GB\n"
                 "5 10 15360 27500 35 noenergy minor=-1 Tesla T4\n");
    setenv("FAKE_NVML_STATE", g_state, 1);
    setenv("SLUICE_NVML_LIB", lib, 1);
    n = sl_nvml_open();
    ok(n != NULL, "the stand-in NVML opens");
    if (!n)
        return;
    is_int(sl_nvml_count(n), 3, "three devices");
    is_int(sl_nvml_info(n, 0, name, sizeof(name), uuid, sizeof(uuid), &mem), 0,
           "device 0 has a handle");
    is_str(name, "NVIDIA H100 80GB HBM3", "its NVML name");
    is_str(uuid, "GPU-fake-0000", "its UUID");
    is_int(mem, 81559LL << 20, "its memory");
    is_int(sl_nvml_info(n, 3, name, sizeof(name), uuid, sizeof(uuid), &mem), -ENODEV,
           "device 3 does not exist");
    ok(sl_nvml_minor(n, 0, &minor) == 0 && minor == 0,
       "device 0's minor number is 0 (/dev/nvidia0)");
    ok(sl_nvml_minor(n, 1, &minor) == 0 && minor == 7,
       "device 1's is what NVML says, 7, not its index");
    is_int(sl_nvml_minor(n, 2, &minor), -EOPNOTSUPP,
           "a device whose minor number NVML does not give says so");
    is_int(sl_nvml_minor(n, 3, &minor), -ENODEV, "device 3 has none");
    ok(sl_nvml_info(n, 1, name, sizeof(name), uuid, sizeof(uuid), &mem) == 0 &&
           strcmp(name, "NVIDIA A100-SXM4-40GB") == 0,
       "a minor= word is not part of the name (%s)", name);
    is_int(sl_nvml_sample(n, -1, &s), -ENODEV, "nor does device -1");

    clock_gettime(CLOCK_REALTIME, &ts);
    t0 = (double)ts.tv_sec * 1000 + (double)ts.tv_nsec / 1e6;
    is_int(sl_nvml_sample(n, 0, &s), 0, "device 0 samples");
    clock_gettime(CLOCK_REALTIME, &ts);
    t1 = (double)ts.tv_sec * 1000 + (double)ts.tv_nsec / 1e6;
    ok(s.has_util && near(s.util, 0.87, 1e-9), "utilisation 87 %% reads 0.87");
    ok(s.has_mem && s.mem_used_bytes == 30000LL << 20, "memory used in bytes");
    ok(s.has_power && near(s.power_w, 350, 1e-9), "power in watts");
    ok(s.has_temp && near(s.temp_c, 61, 1e-9), "temperature in C");
    ok(s.has_energy && s.energy_j >= 350 * t0 / 1000 - 1 &&
           s.energy_j <= 350 * t1 / 1000 + 1,
       "energy from the device counter, in joules");
    is_int(sl_nvml_sample(n, 1, &s), 0, "device 1 samples");
    ok(!s.has_power && !s.has_energy && s.has_util && s.util == 0,
       "a GPU without power or energy readings says so");
    is_int(sl_nvml_sample(n, 2, &s), 0, "device 2 samples");
    ok(s.has_power && !s.has_energy, "a GPU with power but no energy counter");
    sl_nvml_close(n);

    is_int(sl_host_discover(NULL, &info, &err), 0, "discovery through NVML");
    is_str(info.gpu_source, "nvml", "the GPUs come from NVML");
    is_int(info.ngpus, 3, "all three");
    ok(strcmp(info.gpus[0].model, "H100") == 0 &&
           strcmp(info.gpus[1].model, "A100") == 0 && strcmp(info.gpus[2].model, "T4") == 0,
       "named H100, A100, T4 (got %s, %s, %s)", info.gpus[0].model, info.gpus[1].model,
       info.gpus[2].model);
    ok(strcmp(info.gpus[2].uuid, "GPU-fake-0002") == 0 && info.gpus[2].index == 2,
       "with their UUIDs and NVML indices");
    ok(info.gpus[0].dev_major == 195 && info.gpus[0].dev_minor == 0 &&
           info.gpus[1].dev_major == 195 && info.gpus[1].dev_minor == 7,
       "and their devices, 195:<NVML's minor number> (195:0, 195:7)");
    ok(info.gpus[2].dev_major == -1 && info.gpus[2].dev_minor == -1,
       "a GPU without a minor number has no device number (-1:-1)");

    put(g_state, "");
    is_int(sl_host_discover(NULL, &info, &err), 0, "an NVML with no devices");
    is_int(info.ngpus, 0, "gives no GPUs");
    unsetenv("FAKE_NVML_STATE");
    ok(sl_nvml_open() == NULL, "an NVML whose init fails is not used");
    is_int(sl_host_discover(NULL, &info, &err), 0, "discovery goes on without it");
    is_str(info.gpu_source, "none", "and says none");
}

static struct sl_gpu_sample sample(bool energy, double j, bool power, double w, bool util,
                                   double u)
{
    struct sl_gpu_sample s;
    memset(&s, 0, sizeof(s));
    s.has_energy = energy;
    s.energy_j = j;
    s.has_power = power;
    s.power_w = w;
    s.has_util = util;
    s.util = u;
    return s;
}

static void test_acc(void)
{
    struct sl_energy_acc a;
    struct sl_gpu_meter m;
    struct sl_gpu_sample s;

    memset(&a, 0, sizeof(a));
    sl_energy_acc_at(&a, 1000, &m);
    ok(!m.energy_ok && !m.util_ok, "an empty meter knows nothing");

    /* counter: 1000 J at t=0, 1300 J at 1 s, 1900 J at 3 s */
    s = sample(true, 1000, true, 300, true, 0.5);
    sl_energy_acc_add(&a, &s, 10000);
    s = sample(true, 1300, true, 300, true, 1.0);
    sl_energy_acc_add(&a, &s, 11000);
    s = sample(true, 1900, false, 0, true, 0.25);
    sl_energy_acc_add(&a, &s, 13000);
    sl_energy_acc_at(&a, 13000, &m);
    ok(m.energy_ok && near(m.energy_j, 900, 1e-9), "the counter's difference: 900 J");
    ok(m.util_ok && near(m.busy_s, 1.0 + 0.5, 1e-9),
       "busy seconds: each sample's ratio times the step before it");
    sl_energy_acc_at(&a, 14000, &m);
    ok(near(m.energy_j, 1200, 1e-9) && near(m.busy_s, 1.75, 1e-9),
       "extrapolated a second on at the counter's power (300 W) and ratio");
    sl_energy_acc_at(&a, 12500, &m);
    ok(near(m.energy_j, 750, 1e-9), "and back in time the same way");

    /* a counter that goes back (driver reload): that step from power */
    s = sample(true, 5, true, 100, true, 0);
    sl_energy_acc_add(&a, &s, 15000);
    sl_energy_acc_at(&a, 15000, &m);
    ok(m.energy_ok && near(m.energy_j, 900 + (300 + 100) / 2.0 * 2, 1e-9),
       "a counter reset: the step is integrated from power");
    s = sample(true, 105, true, 100, true, 0);
    sl_energy_acc_add(&a, &s, 16000);
    sl_energy_acc_at(&a, 16000, &m);
    ok(near(m.energy_j, 1300 + 100, 1e-9), "then the counter again");

    /* power alone: trapezoids */
    memset(&a, 0, sizeof(a));
    s = sample(false, 0, true, 100, false, 0);
    sl_energy_acc_add(&a, &s, 0);
    s = sample(false, 0, true, 300, false, 0);
    sl_energy_acc_add(&a, &s, 2000);
    sl_energy_acc_at(&a, 2000, &m);
    ok(m.energy_ok && near(m.energy_j, 400, 1e-9), "power only: trapezoid rule, 400 J");
    ok(!m.util_ok, "without utilisation samples, no busy time");
    s = sample(false, 0, true, 300, false, 0);
    sl_energy_acc_add(&a, &s, 1000);
    sl_energy_acc_at(&a, 2000, &m);
    ok(near(m.energy_j, 400, 1e-9), "a sample from before the last one is ignored");

    /* a counter alone (RAPL): its power is the average over 200 ms or more,
     * so a read just after another, before the counter moved, changes nothing */
    memset(&a, 0, sizeof(a));
    s = sample(true, 0, false, 0, false, 0);
    sl_energy_acc_add(&a, &s, 0);
    s = sample(true, 60, false, 0, false, 0);
    sl_energy_acc_add(&a, &s, 1000);
    s = sample(true, 60, false, 0, false, 0);
    sl_energy_acc_add(&a, &s, 1010);
    sl_energy_acc_at(&a, 2000, &m);
    ok(m.energy_ok && near(m.energy_j, 60 + 60 * 0.99, 1e-9),
       "counter only: a 10 ms step does not set the power (60 W)");
    s = sample(true, 84, false, 0, false, 0);
    sl_energy_acc_add(&a, &s, 1400);
    sl_energy_acc_at(&a, 1500, &m);
    ok(near(m.energy_j, 84 + 6, 1e-9), "the next 400 ms does (60 W)");

    /* nothing measurable */
    memset(&a, 0, sizeof(a));
    s = sample(false, 0, false, 0, true, 0.1);
    sl_energy_acc_add(&a, &s, 0);
    s = sample(false, 0, false, 0, true, 0.1);
    sl_energy_acc_add(&a, &s, 1000);
    sl_energy_acc_at(&a, 1000, &m);
    ok(!m.energy_ok && m.util_ok, "no power and no counter: energy unknown, busy known");

    /* power lost mid-way: unknown from then on */
    memset(&a, 0, sizeof(a));
    s = sample(false, 0, true, 100, false, 0);
    sl_energy_acc_add(&a, &s, 0);
    s = sample(false, 0, false, 0, false, 0);
    sl_energy_acc_add(&a, &s, 1000);
    sl_energy_acc_at(&a, 1000, &m);
    ok(!m.energy_ok, "a step without a reading makes the total unknown");
}

static void mkdirs(const char *sub)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof(p), "%s/%s", g_dir, sub);
    mkdir(p, 0755);
}

static void put_in(const char *sub, const char *text)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof(p), "%s/%s", g_dir, sub);
    put(p, text);
}

static void test_rapl(void)
{
    char empty[PATH_MAX + 16];
    struct sl_rapl *r;
    double j = -1;

    snprintf(empty, sizeof(empty), "%s/none", g_dir);
    mkdir(empty, 0755);
    ok(sl_rapl_open(empty) == NULL, "no domains: no RAPL");
    ok(sl_rapl_open("/nonexistent/powercap") == NULL, "no directory: no RAPL");

    mkdirs("pc");
    mkdirs("pc/intel-rapl:0");
    mkdirs("pc/intel-rapl:0:0");
    mkdirs("pc/intel-rapl:1");
    mkdirs("pc/intel-rapl-mmio:0");
    put_in("pc/intel-rapl:0/energy_uj", "1000000\n");
    put_in("pc/intel-rapl:0/max_energy_range_uj", "262143328850\n");
    put_in("pc/intel-rapl:0:0/energy_uj", "999999999\n");
    put_in("pc/intel-rapl:1/energy_uj", "262143000000\n");
    put_in("pc/intel-rapl:1/max_energy_range_uj", "262143328850\n");
    put_in("pc/intel-rapl-mmio:0/energy_uj", "5\n");
    {
        char pc[PATH_MAX + 16];
        snprintf(pc, sizeof(pc), "%s/pc", g_dir);
        r = sl_rapl_open(pc);
    }
    ok(r != NULL, "two packages open");
    if (!r)
        return;
    is_int(sl_rapl_domains(r), 2, "only the package domains count (not :0:0 or mmio)");
    ok(sl_rapl_read(r, &j) == 0 && j == 0, "nothing used yet");
    put_in("pc/intel-rapl:0/energy_uj", "3500000\n");
    put_in("pc/intel-rapl:1/energy_uj", "1000000\n"); /* wrapped */
    ok(sl_rapl_read(r, &j) == 0 && near(j, 2.5 + (262143328850 - 262143000000 + 1000000) / 1e6,
                                        1e-6),
       "the sum of both, one counter's wrap undone");
    put_in("pc/intel-rapl:1/energy_uj", "garbage\n");
    is_int(sl_rapl_read(r, &j), -EIO, "an unreadable counter is an error");
    put_in("pc/intel-rapl:1/energy_uj", "2000000\n");
    ok(sl_rapl_read(r, &j) == 0 && near(j, 2.5 + 0.32885 + 1 + 1, 1e-6),
       "and it recovers when the counter reads again");
    sl_rapl_close(r);
}

/* The test's clock: the monitor stamps its samples by it and the
 * stand-in NVML reads its energy counter at it ($FAKE_NVML_CLOCK). */
static int64_t g_now_ms;
static char g_clock[PATH_MAX];

static int64_t test_now(void *arg)
{
    (void)arg;
    return g_now_ms;
}

static void set_clock(int64_t ms)
{
    char text[32];
    g_now_ms = ms;
    snprintf(text, sizeof(text), "%lld\n", (long long)ms);
    put(g_clock, text);
}

static void test_monitor(const char *lib)
{
    struct sl_gpumon *m;
    struct sl_gpu_meter a, b;
    struct sl_gpu_sample s;
    char pc[PATH_MAX + 16];
    double cj = 0;
    int64_t t0, t1;

    put(g_state, "40 100 81559 250000 50 energy NVIDIA H100 80GB HBM3\n"
                 "10 100 81559 100000 45 noenergy NVIDIA H100 80GB HBM3\n");
    setenv("FAKE_NVML_STATE", g_state, 1);
    setenv("SLUICE_NVML_LIB", lib, 1);
    snprintf(g_clock, sizeof(g_clock), "%s/clock", g_dir);
    setenv("FAKE_NVML_CLOCK", g_clock, 1);
    snprintf(pc, sizeof(pc), "%s/pc", g_dir);
    set_clock(1796000000000);
    m = sl_gpumon_start_clock(sl_nvml_open(), sl_rapl_open(pc), 0, test_now, NULL);
    ok(m != NULL, "the monitor starts, on the test's clock and without a thread");
    if (!m)
        return;
    ok(sl_gpumon_last(m, 0, &s) && s.has_power && near(s.power_w, 250, 1e-9),
       "a first sample is there at once");
    ok(sl_gpumon_has_cpu(m) && sl_gpumon_cpu(m, g_now_ms, &cj), "and RAPL");
    t0 = g_now_ms;
    ok(sl_gpumon_gpu(m, 0, t0, &a), "GPU 0 reads at t0");
    for (int i = 0; i < 8; i++) {
        set_clock(g_now_ms + 20);
        sl_gpumon_round(m);
    }
    is_int(sl_gpumon_rounds(m), 9, "each round is one sample of every device");
    t1 = g_now_ms;
    ok(sl_gpumon_gpu(m, 0, t1, &b), "and at t1, 160 ms later");
    ok(b.energy_ok && near(b.energy_j - a.energy_j, 250.0 * 0.160, 1e-6),
       "GPU 0 (counter): 250 W x 0.16 s = 40 J (%.6f)", b.energy_j - a.energy_j);
    ok(b.util_ok && near(b.busy_s - a.busy_s, 0.4 * 0.160, 1e-9),
       "and 40 %% of it busy");
    sl_gpumon_gpu(m, 1, t0, &a);
    sl_gpumon_gpu(m, 1, t1, &b);
    ok(b.energy_ok && near(b.energy_j - a.energy_j, 100.0 * 0.160, 1e-6),
       "GPU 1 (power only): 100 W x 0.16 s");
    {
        struct sl_gpu_meter at1, later;
        ok(sl_gpumon_gpu(m, 0, t1, &at1) && sl_gpumon_gpu(m, 0, t1 + 1000, &later) &&
               near(later.energy_j - at1.energy_j, 250.0, 1e-6),
           "a reading 1 s past the last sample extrapolates at its power: 250 J");
    }
    ok(!sl_gpumon_gpu(m, 2, t1, &b) && !sl_gpumon_last(m, 2, &s), "no GPU 2");
    sl_gpumon_stop(m);
    unsetenv("FAKE_NVML_CLOCK");
    m = sl_gpumon_start(sl_nvml_open(), NULL, 20);
    ok(m && sl_gpumon_rounds(m) >= 1 && sl_gpumon_last(m, 0, &s),
       "with a period, a thread samples; its first round is taken at start");
    sl_gpumon_stop(m);
    m = sl_gpumon_start(NULL, NULL, 1000);
    ok(m && !sl_gpumon_gpu(m, 0, t1, &b) && !sl_gpumon_cpu(m, t1, &cj),
       "a monitor of nothing knows nothing");
    sl_gpumon_stop(m);
}

int main(int argc, char **argv)
{
    char lib[PATH_MAX + 32], self[PATH_MAX];
    const char *tmp = getenv("TMPDIR");
    char *slash;

    (void)argc;
    sl_log_set_level(SL_LOG_ERROR);
    snprintf(self, sizeof(self), "%s", argv[0]);
    slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(self, sizeof(self), ".");
    snprintf(lib, sizeof(lib), "%s/libfakenvml.so", self);
    snprintf(g_dir, sizeof(g_dir), "%s/sluice-gpumon-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(g_state, sizeof(g_state), "%s/state", g_dir);
    test_no_nvml();
    test_acc();
    test_rapl();
    if (access(lib, R_OK) == 0) {
        test_nvml(lib);
        test_monitor(lib);
    } else {
        ok(0, "the stand-in NVML %s is built (make unit)", lib);
    }
    {
        char cmd[PATH_MAX + 32];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
        if (system(cmd) != 0)
            diag("could not remove %s", g_dir);
    }
    return done_testing();
}
