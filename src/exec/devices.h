/*
 * devices.h - private to src/exec: the device nodes a task may not open
 * (the NVIDIA GPUs it was not given), and the two ways of telling the
 * kernel: deny rules of the cgroup v1 devices controller, or a
 * BPF_PROG_TYPE_CGROUP_DEVICE program generated here as raw eBPF
 * instructions (no libbpf) and attached to a cgroup v2 group.
 *
 * A deny list holds ranges of character devices; everything outside them
 * stays as the group's parent allows (block devices, ttys, /dev/null, the
 * NVIDIA control devices nvidiactl 195:255 and nvidia-modeset 195:254,
 * nvidia-uvm and nvidia-caps, whose majors are not 195).
 *
 * Building a list and a program is pure and thread-safe. The sl_devbpf_*
 * calls are system calls on descriptors the caller owns. None of this is
 * meant for use between fork and exec.
 */
#ifndef SL_EXEC_DEVICES_H
#define SL_EXEC_DEVICES_H

#include <linux/bpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec.h"

/* Character devices major:minor_lo..minor_hi (inclusive). */
struct sl_dev_range {
    uint32_t major;
    uint32_t minor_lo, minor_hi;
};

/* The NVIDIA range minus up to SL_EXEC_MAX_GPUS own minors is at most
 * SL_EXEC_MAX_GPUS + 1 ranges; host GPUs outside it add one each. */
#define SL_DEV_MAX_RANGES (2 * SL_EXEC_MAX_GPUS + 1)

struct sl_dev_deny {
    int n;
    struct sl_dev_range r[SL_DEV_MAX_RANGES]; /* sorted by major, minor_lo;
                                                 disjoint */
};

/* The deny list of a task given GPUs own[0..nown) of host[0..nhost)
 * (indices into host, as sl_exec_task.gpus): every NVIDIA GPU minor
 * 195:0..SL_EXEC_NVIDIA_GPU_MINOR_MAX that is not one of its own GPUs, and
 * every other host GPU with known device numbers outside that range that it
 * was not given. A GPU of the host whose numbers are unknown is covered by
 * the NVIDIA range as long as it is not the task's. Returns 0; or -EINVAL
 * (an index outside host, or nhost out of 0..SL_EXEC_MAX_GPUS), or -ENODEV
 * when the task has GPUs but 'host' is NULL or one of its GPUs has no
 * device numbers, with 'note' (size bytes) saying which. 'out' is filled
 * only on success. */
int sl_dev_deny_gpus(const struct sl_gpu_info *host, int nhost,
                     const int *own, int nown, struct sl_dev_deny *out,
                     char *note, size_t size);

/* Whether the character device major:minor is in the list. */
bool sl_dev_denied(const struct sl_dev_deny *d, uint32_t major,
                   uint32_t minor);

/* Write the list to a cgroup v1 devices.deny file open for writing on 'fd':
 * one "c <major>:<minor> rwm" per device (the controller takes one rule per
 * write and no minor ranges). Returns 0 or -errno; after a failure the
 * rules written so far stay. */
int sl_dev_v1_write(int fd, const struct sl_dev_deny *d);

/* The device program's instructions: 5 to load the context, 4 per range
 * at most, 4 to answer. */
#define SL_DEVBPF_MAX_INSNS (9 + 4 * SL_DEV_MAX_RANGES)

/* Generate the program for 'd' into insns[0..max): it returns 0 (deny) for
 * any access (read, write, mknod) to a character device in the list and 1
 * (allow) for everything else. Returns the instruction count, or -ENOSPC
 * when max is too small. */
int sl_devbpf_build(const struct sl_dev_deny *d, struct bpf_insn *insns,
                    int max);

/* Generate and load the program (bpf(BPF_PROG_LOAD), type
 * BPF_PROG_TYPE_CGROUP_DEVICE). Returns its descriptor (the caller closes
 * it), or -errno with 'note' naming the call, its error and, when the
 * verifier refused it, the verifier's last line. */
int sl_devbpf_load(const struct sl_dev_deny *d, char *note, size_t size);

/* Attach program 'prog_fd' to the cgroup v2 directory open on 'cgroup_fd'
 * (bpf(BPF_PROG_ATTACH), BPF_CGROUP_DEVICE, BPF_F_ALLOW_MULTI, so that
 * programs of ancestor groups keep applying too). The attachment holds the
 * program until the group is removed. Returns 0 or -errno. */
int sl_devbpf_attach(int prog_fd, int cgroup_fd);

/* How many device programs are attached to the group open on 'cgroup_fd'
 * itself (bpf(BPF_PROG_QUERY)). Returns 0 with *count, or -errno. */
int sl_devbpf_count(int cgroup_fd, uint32_t *count);

#endif
