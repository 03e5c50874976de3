/*
 * devices.c - the deny list of a task's device nodes and its two forms: v1
 * devices.deny rules and a generated cgroup v2 device program (see
 * devices.h).
 *
 * The program is a straight line of comparisons, one block per range, so
 * that the verifier sees no loop and its size is known from the list:
 *
 *     r2 = ctx->access_type; w2 &= 0xffff       (the device type)
 *     r3 = ctx->major; r4 = ctx->minor
 *     if r2 != BPF_DEVCG_DEV_CHAR goto allow
 *     for each range:  if r3 != major goto next
 *                      if r4 < lo goto next      (left out when lo is 0)
 *                      if r4 > hi goto next
 *                      goto deny
 *     allow: r0 = 1; exit
 *     deny:  r0 = 0; exit
 */
#include "devices.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../util/util.h"

#define DEVBPF_LICENSE "Apache-2.0" /* no helper is called: any will do */
#define DEVBPF_NAME "sluice_gpus"   /* shown by bpftool; < BPF_OBJ_NAME_LEN */
#define VERIFIER_LOG 4096

static void notef(char *note, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void notef(char *note, size_t size, const char *fmt, ...)
{
    va_list ap;

    if (!note || size == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(note, size, fmt, ap);
    va_end(ap);
}

static bool is_own(const struct sl_gpu_info *host, const int *own, int nown,
                   uint32_t major, uint32_t minor)
{
    for (int i = 0; i < nown; i++)
        if ((uint32_t)host[own[i]].dev_major == major &&
            (uint32_t)host[own[i]].dev_minor == minor)
            return true;
    return false;
}

static int add_range(struct sl_dev_deny *d, uint32_t major, uint32_t lo,
                     uint32_t hi)
{
    if (d->n >= SL_DEV_MAX_RANGES)
        return -ENOSPC;
    d->r[d->n++] = (struct sl_dev_range){major, lo, hi};
    return 0;
}

static int range_cmp(const void *a, const void *b)
{
    const struct sl_dev_range *x = a, *y = b;

    if (x->major != y->major)
        return x->major < y->major ? -1 : 1;
    return x->minor_lo < y->minor_lo ? -1 : x->minor_lo > y->minor_lo;
}

int sl_dev_deny_gpus(const struct sl_gpu_info *host, int nhost,
                     const int *own, int nown, struct sl_dev_deny *out,
                     char *note, size_t size)
{
    struct sl_dev_deny d;
    uint32_t lo = 0;
    int rc = 0;

    d.n = 0;
    if (nhost < 0 || nhost > SL_EXEC_MAX_GPUS || nown < 0 ||
        nown > SL_EXEC_MAX_GPUS || (nown > 0 && !own)) {
        notef(note, size, "bad GPU list");
        return -EINVAL;
    }
    if (nown > 0 && !host) {
        notef(note, size, "the task's GPUs are not devices of this host");
        return -ENODEV;
    }
    for (int i = 0; i < nown; i++) {
        if (own[i] < 0 || own[i] >= nhost) {
            notef(note, size, "GPU %d is not one of this host's %d", own[i],
                  nhost);
            return -EINVAL;
        }
        if (host[own[i]].dev_major < 0 || host[own[i]].dev_minor < 0) {
            notef(note, size, "GPU %d has no known device number", own[i]);
            return -ENODEV;
        }
    }
    /* The NVIDIA GPU minors, less the task's own: a GPU that NVML skipped
     * or that the scheduler does not know is hidden as well. */
    for (uint32_t m = 0; m <= SL_EXEC_NVIDIA_GPU_MINOR_MAX && rc == 0; m++) {
        if (!is_own(host, own, nown, SL_EXEC_NVIDIA_MAJOR, m))
            continue;
        if (m > lo)
            rc = add_range(&d, SL_EXEC_NVIDIA_MAJOR, lo, m - 1);
        lo = m + 1;
    }
    if (rc == 0 && lo <= SL_EXEC_NVIDIA_GPU_MINOR_MAX)
        rc = add_range(&d, SL_EXEC_NVIDIA_MAJOR, lo,
                       SL_EXEC_NVIDIA_GPU_MINOR_MAX);
    /* Host GPUs the range does not cover (another major, or a minor past
     * it), each unless it is the task's. */
    for (int g = 0; g < nhost && host && rc == 0; g++) {
        uint32_t ma = (uint32_t)host[g].dev_major;
        uint32_t mi = (uint32_t)host[g].dev_minor;
        if (host[g].dev_major < 0 || host[g].dev_minor < 0 ||
            sl_dev_denied(&d, ma, mi) || is_own(host, own, nown, ma, mi))
            continue;
        if (ma == SL_EXEC_NVIDIA_MAJOR && mi > SL_EXEC_NVIDIA_GPU_MINOR_MAX)
            continue; /* a control device's number: never a GPU's */
        rc = add_range(&d, ma, mi, mi);
    }
    if (rc < 0) {
        notef(note, size, "too many device ranges");
        return rc;
    }
    qsort(d.r, (size_t)d.n, sizeof(d.r[0]), range_cmp);
    *out = d;
    return 0;
}

bool sl_dev_denied(const struct sl_dev_deny *d, uint32_t major,
                   uint32_t minor)
{
    for (int i = 0; i < d->n; i++)
        if (d->r[i].major == major && minor >= d->r[i].minor_lo &&
            minor <= d->r[i].minor_hi)
            return true;
    return false;
}

int sl_dev_v1_write(int fd, const struct sl_dev_deny *d)
{
    char rule[48];

    for (int i = 0; i < d->n; i++) {
        for (uint64_t m = d->r[i].minor_lo; m <= d->r[i].minor_hi; m++) {
            int len = snprintf(rule, sizeof(rule), "c %u:%u rwm",
                               (unsigned)d->r[i].major, (unsigned)m);
            ssize_t w = write(fd, rule, (size_t)len);
            if (w < 0)
                return -errno;
            if (w != len)
                return -EIO;
        }
    }
    return 0;
}

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src,
                            int16_t off, int32_t imm)
{
    struct bpf_insn i;

    memset(&i, 0, sizeof(i));
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    return i;
}

int sl_devbpf_build(const struct sl_dev_deny *d, struct bpf_insn *insns,
                    int max)
{
    int n = 0, body = 0, allow, deny;

    for (int i = 0; i < d->n; i++)
        body += 3 + (d->r[i].minor_lo > 0);
    allow = 5 + body;
    deny = allow + 2;
    if (deny + 2 > max)
        return -ENOSPC;
    insns[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1,
                      offsetof(struct bpf_cgroup_dev_ctx, access_type), 0);
    insns[n++] = insn(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
    insns[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_3, BPF_REG_1,
                      offsetof(struct bpf_cgroup_dev_ctx, major), 0);
    insns[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1,
                      offsetof(struct bpf_cgroup_dev_ctx, minor), 0);
    insns[n] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0,
                    (int16_t)(allow - (n + 1)), BPF_DEVCG_DEV_CHAR);
    n++;
    for (int i = 0; i < d->n; i++) {
        const struct sl_dev_range *r = &d->r[i];
        int next = n + 3 + (r->minor_lo > 0);
        insns[n] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0,
                        (int16_t)(next - (n + 1)), (int32_t)r->major);
        n++;
        if (r->minor_lo > 0) {
            insns[n] = insn(BPF_JMP | BPF_JLT | BPF_K, BPF_REG_4, 0,
                            (int16_t)(next - (n + 1)), (int32_t)r->minor_lo);
            n++;
        }
        insns[n] = insn(BPF_JMP | BPF_JGT | BPF_K, BPF_REG_4, 0,
                        (int16_t)(next - (n + 1)), (int32_t)r->minor_hi);
        n++;
        insns[n] = insn(BPF_JMP | BPF_JA, 0, 0, (int16_t)(deny - (n + 1)), 0);
        n++;
    }
    insns[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
    insns[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    insns[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
    insns[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    return n;
}

static long sys_bpf(int cmd, union bpf_attr *attr)
{
    return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* The last non-empty line of the verifier's log. */
static const char *last_line(char *log)
{
    size_t len = strnlen(log, VERIFIER_LOG - 1);
    char *p;

    log[len] = '\0';
    while (len > 0 && (log[len - 1] == '\n' || log[len - 1] == ' '))
        log[--len] = '\0';
    p = strrchr(log, '\n');
    return p ? p + 1 : log;
}

int sl_devbpf_load(const struct sl_dev_deny *d, char *note, size_t size)
{
    struct bpf_insn insns[SL_DEVBPF_MAX_INSNS];
    union bpf_attr attr;
    char *log = NULL;
    int n, fd, rc;

    if ((n = sl_devbpf_build(d, insns, SL_DEVBPF_MAX_INSNS)) < 0) {
        notef(note, size, "device program: too many ranges");
        return n;
    }
    for (int pass = 0; pass < 2; pass++) {
        memset(&attr, 0, sizeof(attr));
        attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
        attr.insn_cnt = (uint32_t)n;
        attr.insns = (uint64_t)(uintptr_t)insns;
        attr.license = (uint64_t)(uintptr_t)DEVBPF_LICENSE;
        memcpy(attr.prog_name, DEVBPF_NAME, sizeof(DEVBPF_NAME));
        if (log) {
            attr.log_buf = (uint64_t)(uintptr_t)log;
            attr.log_size = VERIFIER_LOG;
            attr.log_level = 1;
        }
        if ((fd = (int)sys_bpf(BPF_PROG_LOAD, &attr)) >= 0) {
            free(log);
            return fd;
        }
        rc = -errno;
        /* A refusal by the verifier (EACCES, EINVAL) says why in its log:
         * load once more to get it. */
        if (pass > 0 || (rc != -EACCES && rc != -EINVAL) ||
            !(log = calloc(1, VERIFIER_LOG)))
            break;
    }
    if (log && log[0])
        notef(note, size, "bpf(BPF_PROG_LOAD): %s: %s", strerror(-rc),
              last_line(log));
    else
        notef(note, size, "bpf(BPF_PROG_LOAD): %s", strerror(-rc));
    free(log);
    return rc;
}

int sl_devbpf_attach(int prog_fd, int cgroup_fd)
{
    union bpf_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.target_fd = (uint32_t)cgroup_fd;
    attr.attach_bpf_fd = (uint32_t)prog_fd;
    attr.attach_type = BPF_CGROUP_DEVICE;
    attr.attach_flags = BPF_F_ALLOW_MULTI;
    return sys_bpf(BPF_PROG_ATTACH, &attr) < 0 ? -errno : 0;
}

int sl_devbpf_count(int cgroup_fd, uint32_t *count)
{
    union bpf_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.query.target_fd = (uint32_t)cgroup_fd;
    attr.query.attach_type = BPF_CGROUP_DEVICE;
    if (sys_bpf(BPF_PROG_QUERY, &attr) < 0)
        return -errno;
    *count = attr.query.prog_cnt;
    return 0;
}
