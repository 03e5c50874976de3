/*
 * slurmconf.c - what Slurm needs in gres.conf and slurm.conf for Sluice's
 * exact placement (`sluice slurm gres-conf`), and Slurm hostlists.
 *
 * Every GPU index I of a node is a GRES type of its own, gpu:gI, backed
 * by one device file, so that a job asking for --gres=gpu:g3:1 gets index
 * 3 and nothing else; the same device carries shard:gI (a count per GPU)
 * for fractions of exactly that GPU. A node's GPU model and topology
 * domain are node features (gpu_MODEL, domain_DOMAIN). docs/slurm.md says
 * why, and what was measured on Slurm 22.05.
 *
 * Pure: no I/O, no globals. Every input is checked in full before a line
 * is written, and every error names its flag.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../exec/exec.h"
#include "../util/buf.h"

#define HOSTLIST_TEXT_MAX (1u << 20) /* bytes of one hostlist expression */
#define RANGE_DIGITS_MAX  9          /* digits of a number in [...] */
#define MODEL_MAX         47         /* as Sluice's GPU model names */
#define DOMAIN_MAX        63         /* as struct sl_node_info.domain */
#define DEVICE_MAX        200        /* bytes of --device */

/* Names slurm.conf gives a meaning of its own (NodeName=DEFAULT sets the
 * defaults of later lines; Nodes=ALL is every node). */
static const char *const reserved_names[] = {"DEFAULT", "ALL"};

/* ---- hostlists ------------------------------------------------------- */

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

void sl_cli_hostlist_fini(struct sl_cli_hostlist *hl)
{
    if (!hl)
        return;
    for (size_t i = 0; i < hl->n; i++)
        free(hl->names[i]);
    free(hl->names);
    hl->names = NULL;
    hl->n = 0;
}

/* Append a copy of the name 'prefix' + 'digits' (may be NULL) to 'hl'. */
static int add_name(struct sl_cli_hostlist *hl, size_t *cap, const char *prefix,
                    size_t plen, const char *digits)
{
    size_t dlen = digits ? strlen(digits) : 0;
    char *name;

    if (hl->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        char **nn = realloc(hl->names, ncap * sizeof(*nn));
        if (!nn)
            return -ENOMEM;
        hl->names = nn;
        *cap = ncap;
    }
    if (!(name = malloc(plen + dlen + 1)))
        return -ENOMEM;
    memcpy(name, prefix, plen);
    if (dlen)
        memcpy(name + plen, digits, dlen);
    name[plen + dlen] = '\0';
    hl->names[hl->n++] = name;
    return 0;
}

/* Parse the decimal number of 'len' digits at 's' (len <= 9). */
static long digits_value(const char *s, size_t len)
{
    long v = 0;
    for (size_t i = 0; i < len; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The item of 'len' bytes at 's', shortened for an error message. */
#define ITEM(s, len) (int)((len) > 64 ? 64 : (len)), (s)

/* Expand one item (a name or PREFIX[RANGES]) of 'len' bytes at 's'. */
static int expand_item(const char *flag, const char *s, size_t len,
                       struct sl_cli_hostlist *hl, size_t *cap,
                       struct sl_error *err)
{
    const char *lb = memchr(s, '[', len), *p, *end = s + len;
    size_t plen = lb ? (size_t)(lb - s) : len;

    if (len == 0)
        return sl_errorf_field(err, -EINVAL, flag,
                               "%s: an empty name (two commas in a row, or "
                               "one at an end)",
                               flag);
    for (size_t i = 0; i < plen; i++)
        if (!name_char(s[i]))
            return sl_errorf_field(
                err, -EINVAL, flag,
                "%s: '%.*s': a node name is letters, digits, '.', '_' and "
                "'-' (and PREFIX[1-3,5] for several)",
                flag, ITEM(s, len));
    if (!lb) {
        if (len > SL_CLI_NODE_NAME_MAX)
            return sl_errorf_field(err, -EINVAL, flag,
                                   "%s: '%.*s...': a node name is at most %d "
                                   "characters",
                                   flag, 40, s, SL_CLI_NODE_NAME_MAX);
        if (hl->n >= SL_CLI_HOSTLIST_MAX)
            return sl_errorf_field(err, -EINVAL, flag,
                                   "%s: more than %d nodes", flag,
                                   SL_CLI_HOSTLIST_MAX);
        return add_name(hl, cap, s, len, NULL) < 0
                   ? sl_errorf(err, -ENOMEM, "%s: out of memory", flag)
                   : 0;
    }
    if (end[-1] != ']' || memchr(lb + 1, ']', (size_t)(end - lb - 1)) !=
                              end - 1)
        return sl_errorf_field(
            err, -EINVAL, flag,
            "%s: '%.*s': want PREFIX[RANGES] with nothing after ']' "
            "(e.g. n[1-3,5])",
            flag, ITEM(s, len));
    if (memchr(lb + 1, '[', (size_t)(end - lb - 1)))
        return sl_errorf_field(err, -EINVAL, flag,
                               "%s: '%.*s': one [...] per name", flag,
                               ITEM(s, len));
    /* RANGES: N or LO-HI, separated by commas; LO's digits set the width,
     * so n[01-10] is n01..n10 and n[8-10] is n8..n10, as in Slurm. */
    for (p = lb + 1; p < end - 1;) {
        const char *lo = p, *hi;
        size_t lo_len = 0, hi_len = 0;
        long a, b;

        while (p < end - 1 && *p >= '0' && *p <= '9')
            p++, lo_len++;
        hi = lo;
        hi_len = lo_len;
        if (p < end - 1 && *p == '-') {
            hi = ++p;
            hi_len = 0;
            while (p < end - 1 && *p >= '0' && *p <= '9')
                p++, hi_len++;
        }
        if (lo_len == 0 || hi_len == 0 || (p < end - 1 && *p != ','))
            return sl_errorf_field(
                err, -EINVAL, flag,
                "%s: '%.*s': inside [...] want numbers N or ranges LO-HI "
                "separated by commas",
                flag, ITEM(s, len));
        if (lo_len > RANGE_DIGITS_MAX || hi_len > RANGE_DIGITS_MAX)
            return sl_errorf_field(err, -EINVAL, flag,
                                   "%s: '%.*s': a number in [...] has at "
                                   "most %d digits",
                                   flag, ITEM(s, len), RANGE_DIGITS_MAX);
        a = digits_value(lo, lo_len);
        b = digits_value(hi, hi_len);
        if (b < a)
            return sl_errorf_field(err, -EINVAL, flag,
                                   "%s: '%.*s': range %.*s-%.*s goes down",
                                   flag, ITEM(s, len), (int)lo_len, lo,
                                   (int)hi_len, hi);
        if (b - a >= SL_CLI_HOSTLIST_MAX ||
            hl->n + (size_t)(b - a) >= SL_CLI_HOSTLIST_MAX)
            return sl_errorf_field(err, -EINVAL, flag,
                                   "%s: more than %d nodes", flag,
                                   SL_CLI_HOSTLIST_MAX);
        for (long v = a; v <= b; v++) {
            char num[24];
            int nlen = snprintf(num, sizeof(num), "%0*ld", (int)lo_len, v);
            if (plen + (size_t)nlen > SL_CLI_NODE_NAME_MAX)
                return sl_errorf_field(err, -EINVAL, flag,
                                       "%s: '%.*s': a node name is at most "
                                       "%d characters",
                                       flag, ITEM(s, len),
                                       SL_CLI_NODE_NAME_MAX);
            if (add_name(hl, cap, s, plen, num) < 0)
                return sl_errorf(err, -ENOMEM, "%s: out of memory", flag);
        }
        if (p < end - 1)
            p++; /* the ',' */
        if (p == end - 1 && p[-1] == ',')
            return sl_errorf_field(err, -EINVAL, flag,
                                   "%s: '%.*s': a comma at the end of [...]",
                                   flag, ITEM(s, len));
    }
    if (lb + 1 == end - 1)
        return sl_errorf_field(err, -EINVAL, flag, "%s: '%.*s': empty [...]",
                               flag, ITEM(s, len));
    return 0;
}

int sl_cli_hostlist_expand(const char *flag, const char *expr,
                           struct sl_cli_hostlist *out, struct sl_error *err)
{
    struct sl_cli_hostlist hl = {NULL, 0};
    char **sorted = NULL;
    size_t cap = 0, len = strnlen(expr, HOSTLIST_TEXT_MAX + 1);
    const char *p = expr, *end = expr + len;
    int rc = 0;

    out->names = NULL;
    out->n = 0;
    if (len > HOSTLIST_TEXT_MAX) {
        rc = sl_errorf_field(err, -EINVAL, flag, "%s: longer than %u bytes",
                             flag, HOSTLIST_TEXT_MAX);
        goto out;
    }
    if (len == 0) {
        rc = sl_errorf_field(err, -EINVAL, flag,
                             "%s: empty; want node names, e.g. n[1-3],gpu7",
                             flag);
        goto out;
    }
    /* Items end at a comma outside [...]. */
    while (p <= end) {
        const char *q = p;
        bool in = false;
        while (q < end && (in || *q != ',')) {
            if (*q == '[')
                in = true;
            else if (*q == ']')
                in = false;
            q++;
        }
        if (in) {
            rc = sl_errorf_field(err, -EINVAL, flag,
                                 "%s: '%.*s': missing ']'", flag,
                                 ITEM(p, (size_t)(q - p)));
            goto out;
        }
        if ((rc = expand_item(flag, p, (size_t)(q - p), &hl, &cap, err)) < 0)
            goto out;
        p = q + 1;
    }
    for (size_t i = 0; i < hl.n; i++)
        for (size_t k = 0; k < SL_ARRAY_LEN(reserved_names); k++)
            if (strcasecmp(hl.names[i], reserved_names[k]) == 0) {
                rc = sl_errorf_field(err, -EINVAL, flag,
                                     "%s: '%s' is not a node name: slurm.conf "
                                     "reserves it",
                                     flag, hl.names[i]);
                goto out;
            }
    if (!(sorted = malloc(hl.n * sizeof(*sorted)))) {
        rc = sl_errorf(err, -ENOMEM, "%s: out of memory", flag);
        goto out;
    }
    memcpy(sorted, hl.names, hl.n * sizeof(*sorted));
    qsort(sorted, hl.n, sizeof(*sorted), cmp_str_ptr);
    for (size_t i = 1; i < hl.n; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) {
            rc = sl_errorf_field(err, -EINVAL, flag,
                                 "%s: node '%s' is named twice", flag,
                                 sorted[i]);
            goto out;
        }
    *out = hl;
    hl.names = NULL;
    hl.n = 0;
out:
    free(sorted);
    sl_cli_hostlist_fini(&hl);
    return rc;
}

/* The length of 'name' without its trailing digits, and in *num the number
 * those digits make (-1 when there are none or more than 9). */
static size_t split_name(const char *name, long *num)
{
    size_t len = strlen(name), plen = len;

    while (plen > 0 && name[plen - 1] >= '0' && name[plen - 1] <= '9')
        plen--;
    *num = (plen < len && len - plen <= RANGE_DIGITS_MAX)
               ? digits_value(name + plen, len - plen)
               : -1;
    return plen;
}

void sl_cli_hostlist_compress(char *const *names, size_t n, struct sl_buf *out)
{
    size_t i = 0;

    while (i < n) {
        long num, v;
        size_t plen = split_name(names[i], &num), j = i + 1, ranges = 0;

        if (i > 0)
            sl_buf_adds(out, ",");
        /* A run: the names from i that share the prefix and have a number. */
        while (num >= 0 && j < n && split_name(names[j], &v) == plen && v >= 0 &&
               memcmp(names[j], names[i], plen) == 0)
            j++;
        if (num < 0 || j == i + 1) {
            sl_buf_adds(out, names[i]);
            i++;
            continue;
        }
        sl_buf_add(out, names[i], plen);
        sl_buf_adds(out, "[");
        /* Each range: its first name's digits set the width, and a later
         * name belongs to it when it is the next number at that width, so
         * that expanding the range gives back exactly these names. */
        while (i < j) {
            const char *lo = names[i] + plen;
            int width = (int)strlen(lo);
            size_t k = i + 1;
            long last = num;

            while (k < j) {
                char want[24];
                long next;
                split_name(names[k], &next);
                snprintf(want, sizeof(want), "%0*ld", width, last + 1);
                if (next != last + 1 || strcmp(names[k] + plen, want) != 0)
                    break;
                last = next;
                k++;
            }
            sl_buf_printf(out, "%s%s", ranges++ ? "," : "", lo);
            if (k > i + 1)
                sl_buf_printf(out, "-%s", names[k - 1] + plen);
            i = k;
            if (i < j)
                split_name(names[i], &num);
        }
        sl_buf_adds(out, "]");
    }
}

/* ---- per-node values (--model, --domain) --------------------------- */

/* Node names sorted, each with its index in the hostlist, for lookups. */
struct node_index {
    const char *name;
    size_t i;
};

static int cmp_node_index(const void *a, const void *b)
{
    return strcmp(((const struct node_index *)a)->name,
                  ((const struct node_index *)b)->name);
}

static bool value_ok(const char *v, size_t len, size_t max)
{
    if (len < 1 || len > max)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!name_char(v[i]))
            return false;
    return true;
}

/* Give each node of 'hl' its value from 'vals' (VALUE for every node not
 * named elsewhere, or HOSTLIST=VALUE) into of[] (pointers into vals).
 * Every node must get exactly one. 'what' names the value in messages
 * ("model"), 'upper' in examples ("MODEL"). */
static int map_values(const char *flag, const char *what, const char *upper,
                      size_t max, const char *const *vals, size_t nvals,
                      const struct sl_cli_hostlist *hl,
                      const struct node_index *idx, const char **of,
                      struct sl_error *err)
{
    struct sl_cli_hostlist sub = {NULL, 0};
    const char *dflt = NULL;
    char *nodes = NULL;
    int rc = 0;

    for (size_t i = 0; i < hl->n; i++)
        of[i] = NULL;
    for (size_t k = 0; k < nvals; k++) {
        const char *v = vals[k], *eq = strchr(v, '='), *val = eq ? eq + 1 : v;
        size_t vlen = strnlen(val, max + 1);

        if (!value_ok(val, vlen, max)) {
            rc = sl_errorf_field(err, -EINVAL, flag,
                                 "%s: '%.64s': a %s is 1 to %zu of "
                                 "[A-Za-z0-9._-]%s%s%s",
                                 flag, v, what, max,
                                 eq ? "" : " (or NODES=", eq ? "" : upper,
                                 eq ? "" : " for some nodes)");
            goto out;
        }
        if (!eq) {
            if (dflt) {
                rc = sl_errorf_field(err, -EINVAL, flag,
                                     "%s: given twice for every node ('%.64s' "
                                     "and '%.64s'); name the nodes: "
                                     "%s n[1-2]=%s",
                                     flag, dflt, v, flag, upper);
                goto out;
            }
            dflt = v;
            continue;
        }
        free(nodes);
        if (!(nodes = strndup(v, (size_t)(eq - v)))) {
            rc = sl_errorf(err, -ENOMEM, "%s: out of memory", flag);
            goto out;
        }
        sl_cli_hostlist_fini(&sub);
        if ((rc = sl_cli_hostlist_expand(flag, nodes, &sub, err)) < 0)
            goto out;
        for (size_t s = 0; s < sub.n; s++) {
            struct node_index key = {sub.names[s], 0};
            const struct node_index *hit =
                bsearch(&key, idx, hl->n, sizeof(*idx), cmp_node_index);
            if (!hit) {
                rc = sl_errorf_field(err, -EINVAL, flag,
                                     "%s: node '%s' is not in --nodes", flag,
                                     sub.names[s]);
                goto out;
            }
            if (of[hit->i]) {
                rc = sl_errorf_field(err, -EINVAL, flag,
                                     "%s: node '%s' is given two values "
                                     "('%s' and '%s')",
                                     flag, sub.names[s], of[hit->i], val);
                goto out;
            }
            of[hit->i] = val;
        }
    }
    for (size_t i = 0; i < hl->n; i++) {
        if (of[i])
            continue;
        if (!dflt) {
            rc = sl_errorf_field(err, -EINVAL, flag,
                                 "%s: node '%s' has no %s (give one %s for "
                                 "every node, or NODES=%s covering it)",
                                 flag, hl->names[i], what, what, upper);
            goto out;
        }
        of[i] = dflt;
    }
out:
    free(nodes);
    sl_cli_hostlist_fini(&sub);
    return rc;
}

/* ---- the configuration ----------------------------------------------- */

/* --device: an absolute path with one %d, the GPU index. */
static int check_device(const char *dev, struct sl_error *err)
{
    size_t len = strnlen(dev, DEVICE_MAX + 1);
    const char *pct = strchr(dev, '%');

    if (len > DEVICE_MAX)
        return sl_errorf_field(err, -EINVAL, "--device",
                               "--device: longer than %d bytes", DEVICE_MAX);
    if (dev[0] != '/')
        return sl_errorf_field(err, -EINVAL, "--device",
                               "--device: '%.64s': want an absolute path "
                               "with %%d for the GPU index, e.g. "
                               "/dev/nvidia%%d",
                               dev);
    if (!pct || pct[1] != 'd' || strchr(pct + 1, '%'))
        return sl_errorf_field(err, -EINVAL, "--device",
                               "--device: '%.64s': want exactly one %%d (the "
                               "GPU index) and no other %%",
                               dev);
    for (size_t i = 0; i < len; i++)
        if (!name_char(dev[i]) && dev[i] != '/' && dev[i] != '%' &&
            dev[i] != '+')
            return sl_errorf_field(err, -EINVAL, "--device",
                                   "--device: '%.64s': a path of letters, "
                                   "digits and / . _ - + (gres.conf gives "
                                   "others a meaning)",
                                   dev);
    return 0;
}

/* 'dev' (checked: one %d) with the index 'i' in place of %d. */
static void add_device(struct sl_buf *out, const char *dev, int64_t i)
{
    const char *pct = strchr(dev, '%');
    sl_buf_add(out, dev, (size_t)(pct - dev));
    sl_buf_printf(out, "%lld%s", (long long)i, pct + 2);
}

/* One slurm.conf NodeName line for 'names' (all with 'model', 'domain'). */
static void node_line(struct sl_buf *out, const struct sl_cli_gres_opts *o,
                      char *const *names, size_t n, const char *model,
                      const char *domain)
{
    sl_buf_adds(out, "NodeName=");
    sl_cli_hostlist_compress(names, n, out);
    sl_buf_adds(out, " Gres=");
    for (int64_t i = 0; i < o->gpus; i++)
        sl_buf_printf(out, "%sgpu:g%lld:1", i ? "," : "", (long long)i);
    for (int64_t i = 0; o->shards > 0 && i < o->gpus; i++)
        sl_buf_printf(out, ",shard:g%lld:%lld", (long long)i,
                      (long long)o->shards);
    sl_buf_printf(out, " Feature=gpu_%s", model);
    if (domain)
        sl_buf_printf(out, ",domain_%s", domain);
    sl_buf_adds(out, "\n");
}

/* A node's values, and its place in the list (ties sort by it). */
struct node_group {
    const char *model, *domain; /* domain may be NULL */
    size_t i;
};

static int cmp_values(const struct node_group *x, const struct node_group *y)
{
    int c = strcmp(x->model, y->model);
    return c ? c : strcmp(x->domain ? x->domain : "", y->domain ? y->domain : "");
}

static int cmp_group(const void *a, const void *b)
{
    const struct node_group *x = a, *y = b;
    int c = cmp_values(x, y);
    return c ? c : (x->i < y->i ? -1 : x->i > y->i);
}

/* The nodes that share values: groups[start..start+len) once sorted;
 * 'first' is the place of its first node, which orders the lines. */
struct group_run {
    size_t start, len, first;
};

static int cmp_run_first(const void *a, const void *b)
{
    size_t x = ((const struct group_run *)a)->first;
    size_t y = ((const struct group_run *)b)->first;
    return x < y ? -1 : x > y;
}

int sl_cli_gres_conf(const struct sl_cli_gres_opts *o, struct sl_buf *out,
                     struct sl_error *err)
{
    struct sl_cli_hostlist hl = {NULL, 0};
    struct node_index *idx = NULL;
    struct node_group *groups = NULL;
    struct group_run *runs = NULL;
    const char **model_of = NULL, **domain_of = NULL;
    char **members = NULL;
    size_t nruns = 0;
    struct sl_buf all;
    int rc;

    sl_buf_init(&all);
    if (!o->nodes) {
        rc = sl_errorf_field(err, -EINVAL, "--nodes",
                             "--nodes: required (the nodes, e.g. n[1-3])");
        goto out;
    }
    if (o->gpus < 1 || o->gpus > SL_EXEC_MAX_GPUS) {
        rc = sl_errorf_field(err, -EINVAL, "--gpus",
                             "--gpus: required, 1 to %d GPUs per node",
                             SL_EXEC_MAX_GPUS);
        goto out;
    }
    if (o->nmodels == 0) {
        rc = sl_errorf_field(err, -EINVAL, "--model",
                             "--model: required (the GPU model, e.g. H100, "
                             "or NODES=MODEL per group of nodes)");
        goto out;
    }
    /* A fraction is gpu_milli of 1000; with S shards per GPU a job takes
     * gpu_milli * S / 1000 of them, whole only when S is a multiple of
     * 1000 (else rounding makes Slurm refuse what Sluice found free). */
    if (o->shards < 0 || o->shards > SL_CLI_SHARDS_MAX ||
        o->shards % 1000 != 0) {
        rc = sl_errorf_field(err, -EINVAL, "--shards",
                             "--shards: must be 0 (no fractions) or a multiple "
                             "of 1000 up to %d, got %lld",
                             SL_CLI_SHARDS_MAX, (long long)o->shards);
        goto out;
    }
    if ((rc = check_device(o->device, err)) < 0)
        goto out;
    if ((rc = sl_cli_hostlist_expand("--nodes", o->nodes, &hl, err)) < 0)
        goto out;
    if (!(idx = malloc(hl.n * sizeof(*idx))) ||
        !(model_of = malloc(hl.n * sizeof(*model_of))) ||
        !(domain_of = calloc(hl.n, sizeof(*domain_of))) ||
        !(groups = malloc(hl.n * sizeof(*groups))) ||
        !(runs = malloc(hl.n * sizeof(*runs))) ||
        !(members = malloc(hl.n * sizeof(*members)))) {
        rc = sl_errorf(err, -ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < hl.n; i++)
        idx[i] = (struct node_index){hl.names[i], i};
    qsort(idx, hl.n, sizeof(*idx), cmp_node_index);
    if ((rc = map_values("--model", "model", "MODEL", MODEL_MAX, o->models,
                         o->nmodels, &hl, idx, model_of, err)) < 0)
        goto out;
    if (o->ndomains &&
        (rc = map_values("--domain", "domain", "DOMAIN", DOMAIN_MAX, o->domains,
                         o->ndomains, &hl, idx, domain_of, err)) < 0)
        goto out;

    if (o->part != SL_CLI_SLURM_NODES) {
        sl_cli_hostlist_compress(hl.names, hl.n, &all);
        sl_buf_adds(out,
                    "# gres.conf: GPU index I is GRES type gI, one device each "
                    "(pin with\n"
                    "# --gres=gpu:g3:1)");
        if (o->shards)
            sl_buf_adds(out, ", with its own shards (a fraction of that GPU:\n"
                             "# --gres=shard:g3:250)");
        sl_buf_adds(out, ". See docs/slurm.md.\n");
        sl_buf_printf(out, "NodeName=%s AutoDetect=off\n", all.data);
        for (int64_t i = 0; i < o->gpus; i++) {
            sl_buf_printf(out, "NodeName=%s Name=gpu Type=g%lld File=",
                          all.data, (long long)i);
            add_device(out, o->device, i);
            sl_buf_adds(out, "\n");
        }
        for (int64_t i = 0; o->shards > 0 && i < o->gpus; i++) {
            sl_buf_printf(out, "NodeName=%s Name=shard Type=g%lld Count=%lld File=",
                          all.data, (long long)i, (long long)o->shards);
            add_device(out, o->device, i);
            sl_buf_adds(out, "\n");
        }
    }
    if (o->part != SL_CLI_SLURM_GRES) {
        sl_buf_adds(out, "# slurm.conf: add Gres= and Feature= to these "
                         "nodes' lines (keep CPUs=,\n"
                         "# RealMemory= and the rest). See docs/slurm.md.\n");
        sl_buf_printf(out, "GresTypes=gpu%s\n", o->shards ? ",shard" : "");
        if (o->per_node) {
            for (size_t i = 0; i < hl.n; i++)
                node_line(out, o, &hl.names[i], 1, model_of[i], domain_of[i]);
        } else {
            for (size_t i = 0; i < hl.n; i++)
                groups[i] = (struct node_group){model_of[i], domain_of[i], i};
            qsort(groups, hl.n, sizeof(*groups), cmp_group);
            for (size_t i = 0; i < hl.n; i++) {
                if (i == 0 || cmp_values(&groups[i], &groups[i - 1]) != 0)
                    runs[nruns++] = (struct group_run){i, 0, groups[i].i};
                runs[nruns - 1].len++;
            }
            qsort(runs, nruns, sizeof(*runs), cmp_run_first);
            for (size_t r = 0; r < nruns; r++) {
                const struct node_group *g = &groups[runs[r].start];
                for (size_t k = 0; k < runs[r].len; k++)
                    members[k] = hl.names[g[k].i];
                node_line(out, o, members, runs[r].len, g->model, g->domain);
            }
        }
    }
    if (out->failed || all.failed)
        rc = sl_errorf(err, -ENOMEM, "out of memory");
out:
    sl_buf_fini(&all);
    free(members);
    free(runs);
    free(groups);
    free(domain_of);
    free(model_of);
    free(idx);
    sl_cli_hostlist_fini(&hl);
    return rc;
}
