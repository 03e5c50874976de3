/*
 * test_host.c - host discovery: --fake-gpus parsing (good and bad specs),
 * NVML name shortening, and sane CPU, memory and hostname for this machine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/exec/exec.h"
#include "../tap.h"

#define GIB (1024LL * 1024 * 1024)

static struct sl_host_info info; /* large: keep it off the stack */

static void test_fake_good(void)
{
    struct sl_error err = {"", ""};
    bool all = true;

    is_int(sl_host_discover("8xH100", &info, &err), 0, "\"8xH100\" is accepted");
    is_int(info.ngpus, 8, "it declares 8 GPUs");
    is_str(info.gpu_source, "fake", "from the fake source");
    for (int i = 0; i < 8; i++)
        if (info.gpus[i].index != i || strcmp(info.gpus[i].model, "H100") ||
            info.gpus[i].mem_bytes != 80 * GIB || info.gpus[i].uuid[0])
            all = false;
    ok(all, "each is an H100 with 80 GiB, indexed 0..7, without a UUID");
    all = true;
    for (int i = 0; i < 8; i++)
        if (info.gpus[i].dev_major != SL_EXEC_NVIDIA_MAJOR ||
            info.gpus[i].dev_minor != i)
            all = false;
    ok(all, "fake GPU i is the device 195:i (/dev/nvidia<i>)");

    is_int(sl_host_discover("4xA100-80GB,2xT4", &info, &err), 0,
           "\"4xA100-80GB,2xT4\" is accepted");
    is_int(info.ngpus, 6, "it declares 6 GPUs");
    ok(strcmp(info.gpus[3].model, "A100-80GB") == 0 &&
           info.gpus[3].mem_bytes == 80 * GIB,
       "the first four are A100-80GB with 80 GiB");
    ok(strcmp(info.gpus[4].model, "T4") == 0 && info.gpus[4].index == 4 &&
           info.gpus[5].index == 5 && info.gpus[5].mem_bytes == 16 * GIB,
       "the last two are T4 with 16 GiB, indices 4 and 5");
    ok(info.gpus[5].dev_major == 195 && info.gpus[5].dev_minor == 5,
       "numbered on across the items: the sixth is 195:5");

    is_int(sl_host_discover("H100", &info, &err), 0, "a bare model is accepted");
    is_int(info.ngpus, 1, "and means one GPU");

    is_int(sl_host_discover("2xh200", &info, &err), 0,
           "a model in lower case is accepted");
    ok(strcmp(info.gpus[0].model, "H200") == 0 &&
           info.gpus[0].mem_bytes == 141 * GIB,
       "and takes the table's spelling and memory (H200, 141 GiB)");

    is_int(sl_host_discover("2xMI300X", &info, &err), 0,
           "an unknown model is accepted");
    ok(strcmp(info.gpus[1].model, "MI300X") == 0 &&
           info.gpus[1].mem_bytes == 16 * GIB,
       "and keeps its name with 16 GiB");

    is_int(sl_host_discover("64xH100", &info, &err), 0, "64 GPUs are accepted");
    is_int(sl_host_discover("4xA100, 2xL4", &info, &err), 0,
           "spaces around items are tolerated");
    ok(info.ngpus == 6 && strcmp(info.gpus[5].model, "L4") == 0 &&
           info.gpus[0].mem_bytes == 40 * GIB,
       "and the items are read right (A100 40 GiB, L4)");
    is_int(sl_host_discover("1xabcdefghijklmnopqrstuvwxyz0123456789.-_ABCDEFGH",
                            &info, &err),
           0, "a 47-character model name is accepted");
}

static void test_fake_bad(void)
{
    static const char *const bad[] = {
        /* each must be refused */
        "", "0xH100", "65xH100", "100xH100", "33xH100,32xT4", "8x", "8xH100,",
        ",8xH100", "8xH 100", "8xH100/a", "4xA100,,2xT4",
        "1xabcdefghijklmnopqrstuvwxyz0123456789.-_ABCDEFGHI",
    };

    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        struct sl_error err = {"", ""};
        int rc;
        info.ngpus = 99;
        rc = sl_host_discover(bad[i], &info, &err);
        ok(rc == -EINVAL && strstr(err.text, "--fake-gpus") &&
               info.ngpus == 99,
           "\"%s\" is refused, naming --fake-gpus, output untouched: %s",
           bad[i], err.text);
    }
}

static void test_short_names(void)
{
    static const struct {
        const char *nvml, *want;
    } cases[] = {
        /* NVML name, short name */
        {"NVIDIA H100 80GB HBM3", "H100"},
        {"NVIDIA A100-SXM4-80GB", "A100-80GB"},
        {"NVIDIA A100-SXM4-40GB", "A100"},
        {"NVIDIA A100 80GB PCIe", "A100-80GB"},
        {"Tesla V100-SXM2-32GB", "V100"},
        {"NVIDIA H200", "H200"},
        {"Tesla T4", "T4"},
        {"NVIDIA L40S", "L40S"},
        {"NVIDIA H100 PCIe", "H100"},
        {"NVIDIA GeForce RTX 4090", "RTX-4090"},
        {"NVIDIA RTX A6000", "RTX-A6000"},
        {"", "GPU"},
    };
    char out[48];

    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        const char *nvml = cases[i].nvml, *want = cases[i].want;
        sl_host_gpu_short_name(nvml, out, sizeof(out));
        ok(strcmp(out, want) == 0, "NVML \"%s\" is shortened to %s (got %s)",
           nvml, want, out);
    }
}

static void test_this_host(void)
{
    struct sl_error err = {"", ""};
    char host[64] = "";
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    long long kb = 0;
    FILE *f = fopen("/proc/meminfo", "r");

    if (f) {
        if (fscanf(f, "MemTotal: %lld kB", &kb) != 1)
            kb = 0;
        fclose(f);
    }
    gethostname(host, sizeof(host) - 1);
    is_int(sl_host_discover(NULL, &info, &err), 0,
           "discovery without fake GPUs succeeds");
    is_str(info.hostname, host, "the hostname is this machine's");
    ok(info.cpu_milli >= 1000 && info.cpu_milli % 1000 == 0 &&
           info.cpu_milli <= online * 1000,
       "cpu_milli is whole CPUs, at most the online ones (%lld)",
       (long long)info.cpu_milli);
    is_int(info.mem_bytes, kb * 1024, "mem_bytes is MemTotal");
    ok(info.mem_bytes > 64LL << 20, "and is more than 64 MiB");
    ok((strcmp(info.gpu_source, "none") == 0 && info.ngpus == 0) ||
           (strcmp(info.gpu_source, "nvml") == 0 && info.ngpus >= 0),
       "GPUs come from NVML, or there are none (%s, %d)", info.gpu_source,
       info.ngpus);
    for (int i = 0; i < info.ngpus; i++)
        diag("gpu %d: %s %lld bytes %s", info.gpus[i].index,
             info.gpus[i].model, (long long)info.gpus[i].mem_bytes,
             info.gpus[i].uuid);

    is_int(sl_host_discover("2xT4", &info, &err), 0,
           "with fake GPUs, CPU and memory are still discovered");
    ok(info.cpu_milli >= 1000 && info.mem_bytes == kb * 1024 &&
           info.ngpus == 2,
       "and the fake GPUs replace NVML's");
}

int main(void)
{
    sl_log_set_level(SL_LOG_ERROR);
    test_fake_good();
    test_fake_bad();
    test_short_names();
    test_this_host();
    return done_testing();
}
