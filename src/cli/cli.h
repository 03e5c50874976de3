/*
 * cli.h - private interfaces of the `sluice` command-line tool.
 *
 * Layout: main.c holds the command table and global options; args.c parses
 * options and argument values (pure); format.c turns API objects into
 * tables, CSV and human units (pure); jobdoc.c builds the job document of
 * `sluice run` (pure); slurmconf.c writes the Slurm configuration of
 * `sluice slurm gres-conf` and reads Slurm hostlists (pure); call.c talks
 * to the server through libsluice and maps answers to exit codes;
 * cmd_<name>.c is one command each.
 *
 * Every command handler returns an exit code (enum sl_cli_exit) and has already
 * written the one error line when that code is not SL_CLI_OK. Single-threaded.
 */
#ifndef SL_CLI_H
#define SL_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../client/client.h"
#include "../util/csv.h"
#include "../util/util.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.1.0"
#endif

#define SL_CLI_DEFAULT_SERVER     "http://127.0.0.1:8470"
#define SL_CLI_DEFAULT_TOKEN_FILE ".sluice/admin.token"
#define SL_CLI_MAX_INPUT                                                       \
    ((size_t)1 << 20)              /* bytes read by -f FILE; the API cap */
#define SL_CLI_MAX_TOKEN_FILE 8192 /* bytes read from a token file */
#define SL_CLI_PATH_MAX       2048 /* bytes of a request path */

/* Exit codes (SPEC.md section 5). */
enum sl_cli_exit {
    SL_CLI_OK = 0,
    SL_CLI_USAGE = 1,   /* bad arguments, unreadable local input */
    SL_CLI_REFUSED = 2, /* the server answered 4xx */
    SL_CLI_FAILED = 3,  /* 5xx, no answer, or an answer we cannot read */
};

enum sl_cli_output { SL_CLI_OUT_TABLE, SL_CLI_OUT_JSON, SL_CLI_OUT_CSV };

struct sl_cli_command;

/* What the global options said, and the client made from them. */
struct sl_cli_ctx {
    const char *server;        /* --server; NULL: $SLUICE_SERVER or default */
    const char *token;         /* --token; NULL: env, token file */
    const char *ca_cert;       /* --ca-cert; NULL: $SLUICE_CA_CERT or the
                                  system's store */
    bool insecure;             /* --insecure: https without verification */
    const char *cert, *key;    /* --cert, --key; NULL: $SLUICE_CLIENT_CERT,
                                  $SLUICE_CLIENT_KEY or none */
    enum sl_cli_output output; /* -o; default table */
    bool wide;                 /* -o wide: a table with more columns
                                  (output is SL_CLI_OUT_TABLE) */
    bool watch;                /* --watch: run again and again (jobs,
                                  nodes, queues; main.c) */
    int64_t interval_ms;       /* --interval; 0 = the default, 2 s */
    const struct sl_cli_command *cmd; /* the command running; NULL before */
    struct sl_client *client;         /* owned; made by sl_cli_client() */
    char *const *envp;         /* the client's environment, for `run
                                  --export`; NULL = none */
    const char *cwd;           /* the client's directory (realpath), the
                                  default of `run --chdir`; "" = it could
                                  not be resolved; NULL = no default */
};

/* One row of the command table in main.c. */
struct sl_cli_command {
    const char *name;
    int (*run)(struct sl_cli_ctx *ctx, int argc,
               char **argv); /* argv[0] = name */
    const char *help;        /* one line for `sluice help` */
    const char *usage;       /* synopsis and options for `sluice help NAME` */
};

/* ---- main.c ---- */

/* Print the usage of 'cmd' (or the general usage when NULL) to 'fp'. */
void sl_cli_usage(FILE *fp, const struct sl_cli_command *cmd);

/* ---- args.c: option parsing ---- */

/* A command's option: "--name" and/or "-c". 'id' > 0 is what sl_cli_next
 * returns for it. A table ends with a row whose id is 0. */
struct sl_cli_opt {
    const char *name; /* long name without "--"; NULL if none */
    char short_name;  /* '\0' if none */
    bool has_arg;     /* takes a value: "--name V", "--name=V", "-cV" */
    int id;
};

/* What sl_cli_next returns besides an option id. */
enum {
    SL_CLI_ARG_END = 0,         /* no more arguments */
    SL_CLI_ARG_POS = -1000,     /* a positional argument in *val */
    SL_CLI_ARG_HELP = -1001,    /* -h / --help */
    SL_CLI_ARG_VERSION = -1002, /* --version */
    SL_CLI_ARG_ERROR = -1003,   /* err says what; a usage error */
};

struct sl_cli_parser {
    int argc;
    char **argv;
    int i;            /* next argument to look at */
    bool rest;        /* everything from i on is positional */
    bool stop_at_pos; /* the first positional ends option parsing */
    bool dashdash;    /* a "--" was seen */
    const char *bundle; /* short flags left of a bundle ("-it": "t") */
};

/* Start parsing argv[first..argc). With 'stop_at_pos', the first
 * positional argument and everything after it are positional (for the
 * command name, and for `run CMD ARGS...`). "--" always ends options. */
void sl_cli_parser_init(struct sl_cli_parser *p, int argc, char **argv,
                        int first, bool stop_at_pos);

/* The next option of 'opts' (may be NULL: globals only) or global option.
 * Global options (--server, --token, -o/--output) are applied to 'ctx' and
 * skipped. Returns an option id with its value in *val (NULL when it takes
 * none), or one of the SL_CLI_ARG_* values. */
int sl_cli_next(struct sl_cli_parser *p, const struct sl_cli_opt *opts,
                struct sl_cli_ctx *ctx, const char **val, struct sl_error *err);

/* Whether --watch may run command 'cmd' again and again (jobs, nodes,
 * queues). */
bool sl_cli_watchable(const char *cmd);

/* Parse an integer flag value in [min, max]. On failure err says
 * "--tasks: must be an integer from 1 to 1024, got 'x'". */
int sl_cli_int_arg(const char *flag, const char *v, int64_t min, int64_t max,
                   int64_t *out, struct sl_error *err);

/* Parse a job id (a positive integer). */
int sl_cli_job_id(const char *v, int64_t *out, struct sl_error *err);

/* arrays.c: job arrays. The jobs of list 'all' with each array's elements
 * as one line (a copy of its first listed element with "display_id"
 * ID_[ARRAY] and "state" its elements counted by state, "Running:2,
 * Pending:8"), or with 'expand' each element with "display_id" ID_INDEX.
 * Returns 0 or -ENOMEM. */
int sl_cli_jobs_group(json_t *all, bool expand);
/* What `cancel ARG` names, appended to *t (realloc'd, *n counts): ID_INDEX
 * the pending or running element INDEX of array ID (its own job id); the
 * id of an array, the array (cancelled whole by DELETE /v1/arrays/ID);
 * any other id, that job. Returns 0, or -EINVAL/-ENOENT/-ENOMEM with
 * 'err'. */
struct sl_cli_target {
    int64_t id;
    bool array;                   /* the array whose id this is */
};
int sl_cli_cancel_targets(struct sl_cli_ctx *ctx, const char *arg, struct sl_cli_target **t,
                          size_t *n, struct sl_error *err);

/* Parse the value of `jobs --state`: a state name (any case), a comma list
 * of them, or "all". Writes the canonical form to 'out' ("Pending,Running"
 * or "all"). */
int sl_cli_states_parse(const char *v, char *out, size_t size,
                        struct sl_error *err);

/* The canonical spelling of a job state name (any case), or NULL. */
const char *sl_cli_state_canonical(const char *name, size_t len);

/* True for Succeeded, Failed, Cancelled, Lost, Timeout (any case). */
bool sl_cli_state_finished(const char *state);

/* Read 'path' ("-" = standard input) fully, at most 'cap' bytes, into a
 * new NUL-terminated buffer. Returns 0 or a negated errno with err set
 * ("job.yaml: larger than 1 MiB"). */
int sl_cli_read_input(const char *path, size_t cap, char **out, size_t *len,
                      struct sl_error *err);

/* The content type for a document: "application/json" when the first
 * non-blank byte is '{' (or '[' when 'json_array_ok'), else
 * "application/yaml". NULL when the document is blank. */
const char *sl_cli_doc_type(const char *buf, size_t len, bool json_array_ok);

/* ---- format.c: human units, tables, CSV ---- */

/* Rounded down to its two largest units, a zero second one left out:
 * "3m12s", "45s", "2h5m", "3d4h", "5m", "2h", "3d"; negative -> "0s". */
char *sl_cli_fmt_duration(int64_t ms, char *buf, size_t size);
/* "16.0Gi", "512.0Mi", "100B". */
char *sl_cli_fmt_bytes(int64_t bytes, char *buf, size_t size);
/* milli-units as a decimal: 500 -> "0.5", 2000 -> "2", 1250 -> "1.25". */
char *sl_cli_fmt_milli(int64_t milli, char *buf, size_t size);
/* Parse RFC 3339 ("2026-12-02T11:00:00.000Z", "+01:00" offsets too) into
 * epoch ms. Returns 0 or -EINVAL. */
int sl_cli_parse_time(const char *s, int64_t *out_ms);

/* A time as people write one for --from and --to, relative to now_ms:
 * what sl_parse_when_ms takes (2026-12-01, RFC 3339, epoch ms), "now",
 * "today" and "yesterday" (midnight UTC), or a duration ago written with
 * a minus sign ("-7d", "-90m", "-1h30m"). Returns 0 with *out_ms set, or
 * -EINVAL. */
int sl_cli_parse_when_rel(const char *s, int64_t now_ms, int64_t *out_ms);

/* A string member, or NULL when absent, null or not a string. */
const char *sl_cli_jstr(const json_t *obj, const char *key);

/* The CLI's digits after the point for figures printed in full (CSV,
 * show): fixed notation, fewest decimals that read back, at most these.
 * A JSON number in full is sl_csv_number (util/csv.h). */
#define SL_CLI_DECIMALS SL_CSV_DECIMALS

/* An integer member (integer, or a real with no fraction): sl_csv_integer. */
bool sl_cli_jint(const json_t *obj, const char *key, int64_t *out);

/* The job's spec section: job.spec.spec when job.spec is the whole
 * normalised document (apiVersion, kind, metadata, spec), else job.spec. */
const json_t *sl_cli_job_spec(const json_t *job);

/* Total GPUs a job asks for, from its spec: tasks x gpus ("2") or
 * tasks x gpuMilli as a decimal ("0.5"); "0" for none. */
char *sl_cli_job_gpus(const json_t *job, char *buf, size_t size);
/* Pending: age since submission; running: time since start; finished:
 * run time (from start, or from submission if it never started). */
char *sl_cli_job_time(const json_t *job, int64_t now_ms, char *buf,
                      size_t size);

/* A job's STATE cell: its state, "Running (idle)" while its GPUs are
 * idle-but-allocated, "Running (idle session)" for an interactive job so
 * (the job object's "idle"). Returns buf. */
char *sl_cli_job_state_cell(const json_t *job, char *buf, size_t size);
/* A Running job's "idle" in words ("idle interactive session: GPUs idle
 * for 12m (since T); the idle timeout ends it at T2"), or NULL when it is
 * not idle. */
const char *sl_cli_job_idle_text(const json_t *job, int64_t now_ms, char *buf, size_t size);

/* A table of strings, printed aligned (table mode) or as CSV. Cells hold
 * copies; a NULL cell prints "-" in a table and empty in CSV. */
struct sl_cli_table;
struct sl_cli_table *sl_cli_table_create(size_t ncols,
                                         const char *const *header);
void sl_cli_table_destroy(struct sl_cli_table *t);
/* Limit column 'col' to 'width' characters in table mode ("..." marks the
 * cut); CSV is never cut. */
void sl_cli_table_max_width(struct sl_cli_table *t, size_t col, size_t width);
/* Append a row of ncols cells. Returns 0 or -ENOMEM. */
int sl_cli_table_add(struct sl_cli_table *t, const char *const *cells);
size_t sl_cli_table_rows(const struct sl_cli_table *t);
/* Print the header (when the table has one) and rows; table mode puts
 * 'indent' spaces before each line, CSV is util/csv.h's (and nothing is
 * printed of it on -ENOMEM). Returns 0, -EIO or -ENOMEM. */
int sl_cli_table_print(struct sl_cli_table *t, FILE *fp, enum sl_cli_output fmt,
                       size_t indent);
/* Print one row (or the header, row == SIZE_MAX) in table mode, with the
 * widths of the whole table. */
void sl_cli_table_print_row(struct sl_cli_table *t, FILE *fp, size_t row,
                            size_t indent);

/* Copy 's' for a terminal: control characters become spaces or '?'. */
char *sl_cli_sanitize(const char *s, char *buf, size_t size);
/* Join a JSON array of strings as a shell would need them typed. Returns
 * a new string (free()) or NULL on -ENOMEM. */
char *sl_cli_shell_join(const json_t *argv);

/* The columns of `jobs` and the row of one job, for table or CSV. */
struct sl_cli_table *sl_cli_jobs_table(enum sl_cli_output fmt);
int sl_cli_jobs_table_add(struct sl_cli_table *t, enum sl_cli_output fmt,
                          const json_t *job, int64_t now_ms);

/* An amount member in units (GPUs, CPUs: integer or decimal) as milli-units,
 * rounded to the nearest (0.2 sent as 0.20000000000000001 is 200). False
 * when absent, not a number or beyond +-9e12 units. */
bool sl_cli_jmilli(const json_t *obj, const char *key, int64_t *out);
/* A byte count member (integer, or a real rounded to the nearest). */
bool sl_cli_jbytes(const json_t *obj, const char *key, int64_t *out);

/* One blocker of GET /v1/jobs/{id}/explain in words, into buf (cut to
 * 'size'): "quota: queue research holds 16 of 16 GPUs; this job needs 2
 * more", "nodes: 0 of 1 tasks fit; of 4 nodes, 3 lack free GPUs",
 * "preempting: waiting for jobs 4, 5 to stop". Without 'label' the leading
 * "quota: " is left out (for the CSV detail column). Server strings are
 * copied as they are: sanitise before a terminal. Returns buf. */
char *sl_cli_why_blocker(const json_t *blocker, bool label, char *buf,
                         size_t size);

/* A queue object's GPUs as used/nominal: "3/4", "0.5/2", "3/-" when the
 * queue has no GPU quota. Returns buf. */
char *sl_cli_queue_gpus(const json_t *queue, char *buf, size_t size);

/* ---- jobdoc.c: the document `sluice run` submits ---- */

/* How `sluice run` stays with its job: not at all (it prints the id), or
 * attached to an interactive job's terminal (-i: bytes as they come; -t:
 * the local terminal in raw mode, its size sent). */
enum sl_cli_attach { SL_CLI_ATTACH_NONE, SL_CLI_ATTACH_PIPE, SL_CLI_ATTACH_TTY };

/* Parse the options of `sluice run` from argv[1..] (argv[0] = "run") and
 * build the job document (-i or -t: spec.interactive, and the client's
 * TERM in spec.env unless given). Returns 0 and *out (new reference) with
 * *attach (may be NULL) the enum sl_cli_attach asked for, SL_CLI_ARG_HELP
 * or SL_CLI_ARG_VERSION when asked, or -EINVAL with err naming the flag. */
int sl_cli_run_doc(struct sl_cli_ctx *ctx, int argc, char **argv, json_t **out, int *attach,
                   struct sl_error *err);

/* ---- attach.c: a terminal on an interactive job ---- */

/* Wait for job 'id' to run (its pending reason on stderr as it changes;
 * SIGINT, SIGTERM or SIGHUP cancel it when 'owned', the job this command
 * submitted, else only stop the wait), then carry its terminal until the
 * session ends; 'tty': the local terminal in raw mode and its size sent.
 * Returns the command's exit code, or an exit code of sluice's after
 * saying why (130 when interrupted). */
int sl_cli_attach_job(struct sl_cli_ctx *ctx, int64_t id, bool tty, bool owned);

/* ---- export.c: `sluice run --export` (pure) ---- */

/* Add to 'env' (a JSON object of strings; a name it has already keeps its
 * value) the variables of 'envp' ("K=V", NULL-terminated; may be NULL)
 * that 'policy' sends:
 *   NULL or "ALL": every one whose name is a variable name, except those
 *     sl_cli_export_skipped names; values over 4096 bytes or not UTF-8
 *     are left out;
 *   "NONE": none;
 *   "A,B,...": those named, when set; a value over 4096 bytes or not UTF-8
 *     is refused.
 * More than SL_MAX_ENV variables in 'env', or more than 64 KiB of names
 * and values sent, is refused. Returns 0, or -EINVAL/-ENOMEM with 'err'
 * naming --export; 'env' may then hold some of the variables. */
int sl_cli_export_env(const char *policy, char *const *envp, json_t *env,
                      struct sl_error *err);

/* Whether --export ALL leaves 'name' out: the executor's own variables
 * (HOME, USER, LOGNAME, SHELL, CUDA_VISIBLE_DEVICES,
 * NVIDIA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, SLUICE_*), the client's
 * session (PWD, OLDPWD, SHLVL, _, SSH_*, DISPLAY, XAUTHORITY, XDG_RUNTIME_DIR,
 * KRB5CCNAME, ...), and names with TOKEN, SECRET, PASSWORD, PASSWD,
 * CREDENTIAL, APIKEY, API_KEY, ACCESS_KEY, PRIVATE_KEY, AUTH or COOKIE in
 * them, in any case. */
bool sl_cli_export_skipped(const char *name);

/* ---- slurmconf.c: `sluice slurm gres-conf` (pure) ---- */

struct sl_buf;

#define SL_CLI_HOSTLIST_MAX  65536   /* nodes one hostlist may name */
#define SL_CLI_NODE_NAME_MAX 63      /* bytes of a node name */
#define SL_CLI_SHARDS_MAX    1000000 /* --shards: shards per GPU */
#define SL_CLI_SLURM_VALUES  256     /* --model or --domain values */

/* The node names of a Slurm hostlist, in the order written. */
struct sl_cli_hostlist {
    char **names; /* owned, each owned */
    size_t n;
};

/* Expand a Slurm hostlist: items separated by commas, each a node name or
 * PREFIX[RANGES], RANGES a comma list of N and LO-HI whose LO's digits set
 * the width (n[01-10] is n01..n10, as in Slurm). Names are 1 to 63 of
 * [A-Za-z0-9._-], never DEFAULT or ALL (slurm.conf reserves them), never
 * twice; at most SL_CLI_HOSTLIST_MAX. Errors begin with 'flag'. Returns 0
 * with *out filled (release with sl_cli_hostlist_fini), or -EINVAL /
 * -ENOMEM with err set and *out empty. */
int sl_cli_hostlist_expand(const char *flag, const char *expr,
                           struct sl_cli_hostlist *out, struct sl_error *err);
void sl_cli_hostlist_fini(struct sl_cli_hostlist *hl); /* NULL-safe */

/* Append to 'out' a hostlist naming names[0..n) in order: names that share
 * a prefix and follow each other become PREFIX[LO-HI,...]. Expanding it
 * gives back exactly these names. */
void sl_cli_hostlist_compress(char *const *names, size_t n,
                              struct sl_buf *out);

/* Which file's lines sl_cli_gres_conf writes. */
enum sl_cli_slurm_part {
    SL_CLI_SLURM_BOTH,  /* gres.conf, then slurm.conf */
    SL_CLI_SLURM_GRES,  /* gres.conf only */
    SL_CLI_SLURM_NODES, /* slurm.conf only */
};

/* What `sluice slurm gres-conf` was given (borrowed strings). */
struct sl_cli_gres_opts {
    const char *nodes;          /* --nodes: a hostlist; required */
    int64_t gpus;               /* --gpus: per node, 1..SL_EXEC_MAX_GPUS */
    const char *device;         /* --device: absolute path, one %d = index */
    int64_t shards;             /* --shards: per GPU, 0 or 1000 x k */
    const char *const *models;  /* --model: MODEL, or NODES=MODEL */
    size_t nmodels;             /* >= 1 */
    const char *const *domains; /* --domain: DOMAIN, or NODES=DOMAIN */
    size_t ndomains;            /* 0 = no domain features */
    bool per_node;              /* one slurm.conf NodeName line per node */
    enum sl_cli_slurm_part part;
};

/* Append the gres.conf and/or slurm.conf lines for 'o' to 'out': per GPU
 * index I a gres.conf line Name=gpu Type=gI File=DEVICE(I) and, with
 * shards, Name=shard Type=gI Count=SHARDS on the same file; per group of
 * nodes with one model and domain a slurm.conf NodeName line with Gres=
 * and Feature=gpu_MODEL[,domain_DOMAIN]. A value without NODES= is for
 * every node no NODES=VALUE names; each node gets exactly one model, and
 * one domain or (no --domain) none. Returns 0, or -EINVAL with err naming
 * the flag (then nothing was appended) or -ENOMEM. */
int sl_cli_gres_conf(const struct sl_cli_gres_opts *o, struct sl_buf *out,
                     struct sl_error *err);

/* ---- call.c: the server ---- */

/* "sluice: <message>" on stderr, one line. */
void sl_cli_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print err as a usage error and return SL_CLI_USAGE. */
int sl_cli_usage_error(const struct sl_error *err);

/* The client for ctx's server and token, made on first use. Returns 0 or
 * an exit code after printing why. */
int sl_cli_client(struct sl_cli_ctx *ctx, struct sl_client **out);

/* Send a request; on anything but 2xx print the error (prefixed with
 * 'what' when not NULL, e.g. "job 42") and return its exit code. On
 * SL_CLI_OK, *resp holds the answer (caller releases it with
 * sl_response_fini; it is released already on failure). */
int sl_cli_request(struct sl_cli_ctx *ctx, const char *method, const char *path,
                   const char *content_type, const char *body, size_t len,
                   const char *what, struct sl_response *resp);

/* As sl_cli_request for a GET, except that when no answer came (the
 * server is unreachable, the connection broke) or the answer is a 5xx,
 * nothing is printed: why goes to why[0..size) and SL_CLI_FAILED is
 * returned with *transient set (a caller may try again). */
/* GET 'path' and decode a 200 answer; NULL on any failure, saying nothing
 * (for what the command can do without). New reference. */
json_t *sl_cli_get_quiet(struct sl_cli_ctx *ctx, const char *path);

int sl_cli_get_transient(struct sl_cli_ctx *ctx, const char *path, const char *what,
                         struct sl_response *resp, bool *transient, char *why,
                         size_t size);

/* As sl_cli_request, with the 2xx answer decoded as a JSON object (or array
 * when 'array_ok') into *out (new reference). */
int sl_cli_call_json(struct sl_cli_ctx *ctx, const char *method,
                     const char *path, const char *content_type,
                     const char *body, size_t len, const char *what,
                     json_t **out);

/* The exit code for a transport rc and HTTP status (the one table). */
int sl_cli_exit_code(int rc, long status);

/* -o yaml: sl_cli_print_json prints YAML instead (the same document; a
 * process-wide switch, set by the -o parser). */
void sl_cli_set_yaml(bool on);
bool sl_cli_yaml(void);
/* 'v' as YAML, block style, strings double-quoted (valid YAML 1.2 that
 * loads to the same document as its JSON) to stdout. 0 or -EIO. */
int sl_cli_print_yaml(const json_t *v);
/* Print 'v' as JSON (2-space indent) and a newline to stdout; as YAML
 * after sl_cli_set_yaml(true). */
int sl_cli_print_json(const json_t *v);

/* What a command over several jobs collected, once all are done: 'all'
 * (a JSON array) with -o json or yaml, table 't' with -o csv; nothing
 * when either is empty or for other formats (each line was printed as it
 * came). */
void sl_cli_print_collected(const struct sl_cli_ctx *ctx, const json_t *all,
                            struct sl_cli_table *t);

/* Flush stdout; on a write error say so and return SL_CLI_FAILED. */
int sl_cli_finish_output(int code);

/* ---- commands ---- */
int sl_cli_cmd_submit(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_run(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_shell(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_attach(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_jobs(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_show(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_logs(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_cancel(struct sl_cli_ctx *ctx, int argc, char **argv);
/* hold, release, requeue (argv[0] names which) */
int sl_cli_cmd_jobctl(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_update(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_nodes(struct sl_cli_ctx *ctx, int argc, char **argv);
/* drain, cordon, uncordon (argv[0] names which) */
int sl_cli_cmd_node_state(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_apply(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_whoami(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_login(struct sl_cli_ctx *ctx, int argc, char **argv);
/* Where `sluice login` keeps its token: $XDG_CONFIG_HOME/sluice/token, else
 * $HOME/.config/sluice/token. Returns 0 or -ENOENT (neither set). */
int sl_cli_login_token_path(char *buf, size_t size);
int sl_cli_cmd_status(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_token(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_sim(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_why(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_queues(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_report(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_budgets(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_carbon(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_audit(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_lineage(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_models(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_scan(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_slurm(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_get(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_describe(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_delete(struct sl_cli_ctx *ctx, int argc, char **argv);
int sl_cli_cmd_diff(struct sl_cli_ctx *ctx, int argc, char **argv);

/* Parse "-f FILE" (required) for apply and diff, and "--replace" when
 * 'replace' is not NULL (apply; refused for diff). Returns SL_CLI_OK,
 * SL_CLI_DONE or SL_CLI_USAGE (printed). */
int sl_cli_parse_apply(struct sl_cli_ctx *ctx, int argc, char **argv, const char **path,
                       bool *replace);

/* The handling every command gives -h, --version and bad options: print
 * the usage, the version or the error. Returns 0 for an ordinary option
 * or positional, SL_CLI_DONE when the command should stop and exit 0, or
 * SL_CLI_USAGE. */
#define SL_CLI_DONE (-1)
int sl_cli_arg_special(struct sl_cli_ctx *ctx, int id,
                       const struct sl_error *err);

/* Parse a command that takes global options and up to 'max' positionals
 * into pos[], their count into *npos. Returns SL_CLI_OK, SL_CLI_DONE or
 * SL_CLI_USAGE (printed). */
int sl_cli_parse_simple(struct sl_cli_ctx *ctx, int argc, char **argv,
                        const char **pos, int max, int *npos);

/* Read FILE (bounded by SL_CLI_MAX_INPUT), pick its content type, POST it to
 * 'api_path' and decode the JSON answer into *out. Returns an exit code. */
int sl_cli_post_document(struct sl_cli_ctx *ctx, const char *path,
                         const char *api_path, bool json_array_ok,
                         json_t **out);

/* Print a created job: its id, or the object with -o json. */
int sl_cli_print_created(struct sl_cli_ctx *ctx, const json_t *job);

#endif
