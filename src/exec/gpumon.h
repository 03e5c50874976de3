/*
 * gpumon.h - what this host's GPUs and CPU packages measure: NVML (loaded
 * at run time with dlopen) for per-GPU utilisation, memory, power,
 * temperature and energy; RAPL (/sys/class/powercap) for CPU package
 * energy; and a monitor thread that samples both each period and
 * integrates energy and utilisation, so that the engine can read any
 * GPU's cumulative joules at a job's start and end.
 *
 * Nothing here needs a GPU: without NVML sl_nvml_open returns NULL, and
 * without readable RAPL domains sl_rapl_open does; the meter then
 * estimates (src/meter, docs/metering.md).
 */
#ifndef SL_GPUMON_H
#define SL_GPUMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What one sample of one GPU measured; each value means something only
 * when its has_ flag is set (a GPU or driver may lack any of them). */
struct sl_gpu_sample {
    bool has_util;
    double util;                      /* busy ratio over the driver's last
                                         sample period, 0..1 */
    bool has_mem;
    int64_t mem_used_bytes;
    bool has_power;
    double power_w;
    bool has_temp;
    double temp_c;
    bool has_energy;
    double energy_j;                  /* the device's counter (since the
                                         driver loaded) */
};

/* ---- NVML ---------------------------------------------------------------
 * The library is $SLUICE_NVML_LIB when set (a path), else
 * "libnvidia-ml.so.1". Discovery needs nvmlInit_v2, nvmlShutdown,
 * nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetName,
 * nvmlDeviceGetMemoryInfo and nvmlDeviceGetUUID, and uses
 * nvmlDeviceGetMinorNumber where the library has it; sampling also uses
 * nvmlDeviceGetUtilizationRates, nvmlDeviceGetPowerUsage,
 * nvmlDeviceGetTemperature and nvmlDeviceGetTotalEnergyConsumption where
 * the library has them (each one missing or failing leaves its figure
 * unset). NVML is thread-safe; so is a struct sl_nvml once opened. */
struct sl_nvml;

const char *sl_nvml_lib_path(void);
/* Load and initialise NVML; NULL when there is none or it fails (logged). */
struct sl_nvml *sl_nvml_open(void);
/* Devices NVML reports, at most SL_EXEC_MAX_GPUS. */
int sl_nvml_count(const struct sl_nvml *n);
/* Name, UUID and memory of device 'i'; -ENODEV when NVML has no handle
 * for it. 'name' and 'uuid' get "" where NVML fails; mem_total 0. */
int sl_nvml_info(struct sl_nvml *n, int i, char *name, size_t name_size,
                 char *uuid, size_t uuid_size, int64_t *mem_total);
/* The minor number of device 'i''s /dev/nvidia<minor> (major 195).
 * Returns 0 with *minor, -ENODEV when it has no handle, -EOPNOTSUPP when
 * the library lacks the call or it fails. */
int sl_nvml_minor(struct sl_nvml *n, int i, int *minor);
/* One sample of device 'i'; -ENODEV when it has no handle. */
int sl_nvml_sample(struct sl_nvml *n, int i, struct sl_gpu_sample *out);
void sl_nvml_close(struct sl_nvml *n);

/* ---- RAPL ---------------------------------------------------------------
 * The package domains ("intel-rapl:N", also AMD's) under
 * $SLUICE_POWERCAP_DIR, else /sys/class/powercap: their energy_uj summed,
 * with each counter's wrap at max_energy_range_uj undone. A counter wraps
 * after minutes at full power, so read it at least every few seconds. */
struct sl_rapl;

/* NULL when no package domain is readable (not root, no RAPL). 'dir' NULL
 * = the default above. */
struct sl_rapl *sl_rapl_open(const char *dir);
int sl_rapl_domains(const struct sl_rapl *r);
/* Joules of every package since open; -EIO when a counter cannot be read. */
int sl_rapl_read(struct sl_rapl *r, double *joules);
void sl_rapl_close(struct sl_rapl *r);

/* ---- integration --------------------------------------------------------
 * One meter: joules and busy-seconds accumulated from successive samples.
 * Energy comes from the device counter where there is one (a counter that
 * goes back is taken as a reset: that step is integrated from power
 * instead), else from power by the trapezoid rule; utilisation is the
 * sampled ratio times the time since the previous sample. */
struct sl_energy_acc {
    bool started;                     /* a first sample was added */
    bool energy_ok, util_ok;          /* what the samples could give */
    int64_t last_ms;                  /* wall time of the last sample */
    double joules, busy_s;            /* since the first sample */
    double last_w;                    /* power then, for extrapolation */
    int64_t span_ms;                  /* counter-only devices: where the */
    double span_j;                    /* power's averaging span began */
    double last_util;                 /* and busy ratio */
    double last_counter_j;
    bool last_has_counter;
};

/* What a meter says of one device at a time. */
struct sl_gpu_meter {
    bool energy_ok;
    double energy_j;                  /* cumulative, since the monitor began */
    bool util_ok;
    double busy_s;                    /* cumulative busy seconds */
    double util;                      /* the last sample's ratio */
};

void sl_energy_acc_add(struct sl_energy_acc *a, const struct sl_gpu_sample *s,
                       int64_t now_ms);
/* The figures at 'at_ms', extrapolated from the last sample at its power
 * and busy ratio (either way in time). */
void sl_energy_acc_at(const struct sl_energy_acc *a, int64_t at_ms, struct sl_gpu_meter *out);

/* ---- the monitor --------------------------------------------------------
 * A thread that samples every NVML device and the RAPL packages each
 * 'period_ms'. It owns 'nvml' and 'rapl' (either may be NULL). */
struct sl_gpumon;

struct sl_gpumon *sl_gpumon_start(struct sl_nvml *nvml, struct sl_rapl *rapl,
                                  int64_t period_ms);
/* The same with the clock samples are stamped by ('now_ms' with 'arg';
 * sl_now_ms when NULL). With period_ms 0 no thread runs: the caller takes
 * each round with sl_gpumon_round, as a unit test with a clock of its own
 * does. */
struct sl_gpumon *sl_gpumon_start_clock(struct sl_nvml *nvml, struct sl_rapl *rapl,
                                        int64_t period_ms, int64_t (*now_ms)(void *arg),
                                        void *arg);
/* Sample every device and the CPU packages once, now. */
void sl_gpumon_round(struct sl_gpumon *m);
/* Device 'i' (NVML index) at wall time 'at_ms'; false when unknown. */
bool sl_gpumon_gpu(struct sl_gpumon *m, int i, int64_t at_ms, struct sl_gpu_meter *out);
/* Its last sample; false when none yet. */
bool sl_gpumon_last(struct sl_gpumon *m, int i, struct sl_gpu_sample *out);
/* The CPU packages' joules at 'at_ms', read afresh when that is after the
 * last sample; false without RAPL. */
bool sl_gpumon_cpu(struct sl_gpumon *m, int64_t at_ms, double *joules);
bool sl_gpumon_has_cpu(const struct sl_gpumon *m);
/* Samples taken so far (all devices in one round count once). */
uint64_t sl_gpumon_rounds(struct sl_gpumon *m);
void sl_gpumon_stop(struct sl_gpumon *m);

#endif
