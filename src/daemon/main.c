/*
 * main.c - sluiced: configuration (file, then flags), wiring of the engine,
 * the API and the HTTP server, signals and clean shutdown.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../api/api.h"
#include "../core/spec.h"
#include "../http/http.h"
#include "../ident/ident.h"
#include "../ident/oidc.h"
#include "../http/tls.h"
#include "../engine/engine.h"
#include "../exec/slurm.h"
#include "../store/backend.h"
#include "../store/copy.h"
#include "../store/store.h"
#include "config.h"
#include "ha.h"

#define SLUICE_VERSION "0.1.0"
static void usage(FILE *f)
{
    fprintf(f,
            "usage: sluiced [--dev] [--config FILE] [--listen HOST:PORT]\n"
            "               [--data-dir DIR] [--store PATH|URL] [--fake-gpus SPEC]\n"
            "               [--ha-name NAME] [--advertise-url URL] [--ha-lease D]\n"
            "               [--identity FILE]\n"
            "               [--fake-nodes FILE] [--executor local|simulated|slurm]\n"
            "               [--slurm-partition P --slurm-output-dir DIR [--slurm-bin DIR]\n"
            "                [--slurm-api auto|library|tools] [--slurm-jobcomp FILE]\n"
            "                [--slurm-poll D] [--slurm-stage on|off]]\n"
            "               [--sync full|normal] [--log-level debug|info|warn|error]\n"
            "               [--job-user USER|none] [--allow-daemon-user USER]\n"
            "               [--kill-invalid-depend on|off]\n"
            "               [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]\n"
            "               [--tls-job-ca FILE]]\n"
            "               [--insecure-http]\n"
            "       sluiced migrate --store PATH|URL\n"
            "       sluiced copy-store --from SQLITE-PATH --to POSTGRES-URL\n"
            "\n"
            "  --dev              development defaults: data dir ./.sluice, listen\n"
            "                     127.0.0.1:8470, SQLite store, local executor\n"
            "  --config FILE      YAML or JSON with the same settings (flags win)\n"
            "  --listen HOST:PORT address to serve the API on\n"
            "  --data-dir DIR     store, logs and task records (default /var/lib/sluice)\n"
            "  --store PATH|URL   SQLite file (default DIR/sluice.db), or a PostgreSQL\n"
            "                     URL postgres://USER@HOST:PORT/DB (the password from\n"
            "                     PGPASSFILE or PGPASSWORD): several sluiced may share\n"
            "                     one; one leads, the others redirect (docs/ha.md)\n"
            "  --ha-name NAME     this daemon among those (default HOST:PORT)\n"
            "  --advertise-url URL  where the others send clients (default\n"
            "                     http://LISTEN)\n"
            "  --ha-lease D       the leader's lease (default 6s): a takeover after it\n"
            "                     runs out\n"
            "  --identity FILE    sign-in through LDAP/Active Directory or OIDC, and\n"
            "                     the rules mapping their groups to teams and roles\n"
            "                     (docs/identity.md)\n");
    fprintf(f,
            "  --fake-gpus SPEC   declare GPUs instead of NVML, e.g. 8xH100 or\n"
            "                     4xA100-80GB,2xT4\n"
            "  --fake-nodes FILE  a node list (sn,cpu_milli,memory_mib,gpu,model[,domain])\n"
            "                     to schedule on instead of this host; tasks still run here\n"
            "  --executor KIND    local (default): run jobs as processes; simulated:\n"
            "                     run nothing (scheduler load tests; jobs say so);\n"
            "                     slurm: a Slurm cluster runs each placement (docs/slurm.md)\n"
            "  --slurm-partition P  slurm: the partition Sluice places in\n"
            "  --slurm-output-dir DIR  slurm: a directory shared with the nodes, where\n"
            "                     tasks write their output (writable by the job accounts)\n"
            "  --slurm-bin DIR    slurm: where sbatch, squeue, scontrol, scancel are\n"
            "  --slurm-api auto|library|tools  slurm: submit jobs through Slurm's C API\n"
            "                     (libslurm) or sbatch; auto (default): the API when it\n"
            "                     loads and no --slurm-bin is given\n"
            "  --slurm-jobcomp FILE  slurm: Slurm's jobcomp/filetxt file, for the ends\n"
            "                     of jobs Slurm forgot while sluiced was down\n"
            "  --slurm-poll D     slurm: how often Slurm is asked (default 1s)\n"
            "  --slurm-stage on|off  slurm: queue a queue's next jobs in Slurm behind its\n"
            "                     running ones, to start as those complete (default off)\n"
            "  --sync full|normal full (default): fsync every group commit;\n"
            "                     normal: survive a crash of sluiced, not of the host\n"
            "  --job-user USER    the Unix account jobs of users without a mapping\n"
            "                     (kind: User spec.unixUser) run as (default nobody);\n"
            "                     none: refuse their jobs\n"
            "  --allow-daemon-user USER\n"
            "                     the one account a job may run as although it has\n"
            "                     sluiced's own uid (default: none; --dev as a user\n"
            "                     other than root: that user)\n"
            "  --kill-invalid-depend on|off\n"
            "                     on (default): a job whose dependency can never be\n"
            "                     satisfied ends Cancelled; off: it stays Pending\n"
            "                     (reason DependencyNeverSatisfied)\n"
            "  --interactive-detach-grace D\n"
            "                     an interactive job's terminal with nobody attached\n"
            "                     is hung up (SIGHUP) after D (default 10s; 0s..1d)\n"
            "  --interactive-idle-timeout D\n"
            "                     an interactive job whose GPUs have been idle for D\n"
            "                     is ended (default off; 1s..30d)\n"
            "\n"
            "Connection limits (sluiced(8), CONNECTION LIMITS):\n"
            "  --max-connections N           at once (default 4096, fitted to\n"
            "                                RLIMIT_NOFILE)\n"
            "  --max-connections-per-peer N  per IPv4 address or IPv6 /64\n"
            "                                (default 512; 0 = no limit)\n"
            "  --header-timeout D            a request head, from its first byte\n"
            "                                (default 10s)\n"
            "  --body-timeout D              a request body, from its head (30s)\n"
            "  --send-timeout D              an answer the peer takes nothing of (30s)\n"
            "  --idle-timeout D              a kept-alive connection between\n"
            "                                requests (60s)\n"
            "\n"
            "TLS (sluiced(8), TLS; SIGHUP reloads the files):\n"
            "  --tls-cert FILE      serve HTTPS with this PEM certificate (and chain)\n"
            "  --tls-key FILE       its PEM private key (mode 0600 or stricter)\n"
            "  --tls-client-ca FILE accept client certificates from this CA: a\n"
            "                       verified one's subject CN is the Sluice user\n"
            "  --tls-job-ca FILE    give jobs SLUICE_CA_CERT=FILE, the CA that signed\n"
            "                       --tls-cert, for their sluice calls to the API\n"
            "  --insecure-http      serve plain HTTP on a non-loopback --listen\n"
            "                       (tokens cross the network in clear)\n");
}

/* Requests reach the API once it exists; until then, 503, or with several
 * daemons on one store, a follower's answers (ha.h). */
struct gate {
    _Atomic(struct sl_api *) api;
    _Atomic(struct sl_ha *) ha;   /* NULL = one daemon (or not yet set) */
};

static void gate_handle(struct sl_http_req *r, void *arg)
{
    struct gate *g = arg;
    struct sl_api *api = atomic_load_explicit(&g->api, memory_order_acquire);
    struct sl_ha *ha = atomic_load_explicit(&g->ha, memory_order_acquire);

    if (ha) {
        if (!api) {
            sl_ha_follower_handle(ha, r);
            return;
        }
        sl_http_add_header(r, "Sluice-Role", "leader");
    }
    if (!api) {
        sl_http_add_header(r, "Retry-After", "1");
        sl_http_reply_error(r, 503, "unavailable", NULL, "sluiced is starting");
        return;
    }
    sl_api_handle(r, api);
}

static void say_busy(const char *path, const char *flag, const char *what, pid_t pid)
{
    if (pid > 0)
        fprintf(stderr, "sluiced: %s %s is in use by sluiced pid %d (lock %s)\n", flag,
                what, (int)pid, path);
    else
        fprintf(stderr, "sluiced: %s %s is in use by another sluiced (lock %s)\n", flag,
                what, path);
}

/* Whether another sluiced holds the lock at 'path' (said on stderr, with
 * its pid); checked before anything is bound or created, so that a second
 * daemon on a live data dir is told so rather than "address in use". */
static bool busy(const char *path, const char *flag, const char *what)
{
    pid_t pid = 0;

    if (sl_lock_file_held(path, &pid) != 1)
        return false;
    say_busy(path, flag, what, pid);
    return true;
}

/* Take the lock at 'path' for the daemon's life. Returns the descriptor,
 * or -1 with the reason on stderr. */
static int lock_or_say(const char *path, const char *flag, const char *what)
{
    pid_t pid = 0;
    int fd = sl_lock_file(path, &pid);

    if (fd == -EAGAIN) {
        say_busy(path, flag, what, pid);
        return -1;
    }
    if (fd < 0) {
        fprintf(stderr, "sluiced: %s %s: cannot lock %s: %s\n", flag, what, path,
                strerror(-fd));
        return -1;
    }
    return fd;
}

/* The data dir: made 0700 when absent; made private when it is not (a
 * group- or world-accessible one is fixed, and said); then locked for
 * this daemon. Returns 0, or -1 with the reason on stderr. */
static int data_dir_open(const struct sl_config *cfg, const char *lock_path, int *lock_fd)
{
    struct sl_error err = {0};
    int rc, fixed = 0;

    if ((rc = sl_mkdir_p(cfg->data_dir, 0700)) < 0) {
        fprintf(stderr, "sluiced: --data-dir %s: %s\n", cfg->data_dir, strerror(-rc));
        return -1;
    }
    /* The data dir, and its logs/ and run/, two levels down. */
    if ((rc = sl_dir_private(cfg->data_dir, 2, &fixed, &err)) < 0) {
        fprintf(stderr, "sluiced: --data-dir %s must be private to sluiced: %s\n",
                cfg->data_dir, err.text);
        return -1;
    }
    if (fixed)
        sl_warn("msg=\"the data dir was readable by others: made private\" data_dir=%s "
                "entries=%d", cfg->data_dir, fixed);
    if ((*lock_fd = lock_or_say(lock_path, "--data-dir", cfg->data_dir)) < 0)
        return -1;
    return 0;
}

/* Connections are descriptors: take the hard RLIMIT_NOFILE as the soft
 * one (the HTTP server fits its table below it). */
static void raise_nofile(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
            sl_warn("msg=\"cannot raise the open files limit\" soft=%llu hard=%llu "
                    "error=\"%s\"", (unsigned long long)was,
                    (unsigned long long)rl.rlim_max, strerror(errno));
    }
}

/* Read the settings: the config file, then the flags. Returns -1 to go
 * on, or the exit status (0 after --help or --version). */
static int read_settings(int argc, char **argv, struct sl_config *cfg)
{
    static const struct option opts[] = {
        /* every option but these five and --insecure-http (file key
         * insecureHttp: on) is a row of config.c's table */
        {"dev", no_argument, NULL, 'd'},
        {"config", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"listen", required_argument, NULL, 'S'},
        {"data-dir", required_argument, NULL, 'S'},
        {"store", required_argument, NULL, 'S'},
        {"fake-gpus", required_argument, NULL, 'S'},
        {"fake-nodes", required_argument, NULL, 'S'},
        {"executor", required_argument, NULL, 'S'},
        {"slurm-partition", required_argument, NULL, 'S'},
        {"slurm-output-dir", required_argument, NULL, 'S'},
        {"slurm-bin", required_argument, NULL, 'S'},
        {"slurm-api", required_argument, NULL, 'S'},
        {"slurm-jobcomp", required_argument, NULL, 'S'},
        {"slurm-poll", required_argument, NULL, 'S'},
        {"slurm-stage", required_argument, NULL, 'S'},
        {"sync", required_argument, NULL, 'S'},
        {"job-user", required_argument, NULL, 'S'},
        {"allow-daemon-user", required_argument, NULL, 'S'},
        {"kill-invalid-depend", required_argument, NULL, 'S'},
        {"interactive-detach-grace", required_argument, NULL, 'S'},
        {"interactive-idle-timeout", required_argument, NULL, 'S'},
        {"log-level", required_argument, NULL, 'S'},
        {"max-connections", required_argument, NULL, 'S'},
        {"max-connections-per-peer", required_argument, NULL, 'S'},
        {"header-timeout", required_argument, NULL, 'S'},
        {"body-timeout", required_argument, NULL, 'S'},
        {"send-timeout", required_argument, NULL, 'S'},
        {"idle-timeout", required_argument, NULL, 'S'},
        {"ha-name", required_argument, NULL, 'S'},
        {"advertise-url", required_argument, NULL, 'S'},
        {"ha-lease", required_argument, NULL, 'S'},
        {"identity", required_argument, NULL, 'S'},
        {"tls-cert", required_argument, NULL, 'S'},
        {"tls-key", required_argument, NULL, 'S'},
        {"tls-client-ca", required_argument, NULL, 'S'},
        {"tls-job-ca", required_argument, NULL, 'S'},
        {"insecure-http", no_argument, NULL, 'I'},
        {NULL, 0, NULL, 0},
    };
    struct sl_error err = {0};
    const char *config_path = NULL;
    bool dev = false;
    int opt, idx = 0;

    /* First pass: --config and --dev, so that flags override the file. */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == 'c')
            config_path = optarg;
        else if (opt == 'd')
            dev = true;
    }
    sl_config_init(cfg, dev);
    if (config_path && sl_config_load_file(cfg, config_path, &err) < 0) {
        fprintf(stderr, "sluiced: %s\n", err.text);
        return 1;
    }
    optind = 1;
    opterr = 1;
    while ((opt = getopt_long(argc, argv, "h", opts, &idx)) != -1) {
        switch (opt) {
        case 'd':
        case 'c':
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("sluiced %s\n", SLUICE_VERSION);
            return 0;
        case 'I':
            cfg->insecure_http = true;
            break;
        case 'S':
            if (sl_config_set_flag(cfg, opts[idx].name, optarg, &err) < 0) {
                fprintf(stderr, "sluiced: %s\n", err.text);
                return 1;
            }
            break;
        default:
            usage(stderr);
            return 1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sluiced: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 1;
    }
    return -1;
}

/* Whether HOST:PORT names a loopback address only: 127.0.0.0/8, ::1 or
 * localhost. */
static bool listen_loopback(const char *listen)
{
    char host[128];
    const char *colon = strrchr(listen, ':');
    struct in_addr a4;
    size_t n = colon ? (size_t)(colon - listen) : 0;

    if (!colon || n >= sizeof(host))
        return false;
    memcpy(host, listen, n);
    host[n] = '\0';
    if (strcmp(host, "localhost") == 0 || strcmp(host, "[::1]") == 0)
        return true;
    return inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

/* The TLS settings as a whole, and the refusal of plain HTTP beyond
 * loopback. Returns 0 or -EINVAL with 'err' saying why. */
static int tls_settings_check(const struct sl_config *cfg, struct sl_error *err)
{
    if (!cfg->tls_cert[0] != !cfg->tls_key[0])
        return sl_errorf(err, -EINVAL, "--tls-cert and --tls-key go together: give both "
                                       "or neither");
    if (cfg->tls_client_ca[0] && !cfg->tls_cert[0])
        return sl_errorf(err, -EINVAL, "--tls-client-ca needs --tls-cert and --tls-key: "
                                       "client certificates come only over TLS");
    if (cfg->tls_job_ca[0] && !cfg->tls_cert[0])
        return sl_errorf(err, -EINVAL, "--tls-job-ca needs --tls-cert and --tls-key: it is "
                                       "the CA jobs verify the API's certificate with");
    if (cfg->tls_job_ca[0] && (cfg->tls_job_ca[0] != '/' || access(cfg->tls_job_ca, R_OK) != 0))
        return sl_errorf(err, -EINVAL, "--tls-job-ca %.256s: %s", cfg->tls_job_ca,
                         cfg->tls_job_ca[0] != '/' ? "must be an absolute path (jobs run "
                                                     "elsewhere)"
                                                   : strerror(errno));
    if (!cfg->tls_cert[0] && !cfg->insecure_http && !listen_loopback(cfg->listen))
        return sl_errorf(err, -EINVAL,
                         "--listen %.128s is not a loopback address, and without TLS "
                         "bearer tokens and job data would cross the network in clear: "
                         "give --tls-cert FILE --tls-key FILE, or --insecure-http when "
                         "something else protects the network (a TLS proxy in front)",
                         cfg->listen);
    return 0;
}

/* SIGHUP: read the TLS files again; a failure keeps the context in force
 * and is logged. */
static void tls_reload(struct sl_tls *tls, const struct sl_config *cfg)
{
    struct sl_error err = {0};

    if (!tls)
        sl_info("msg=\"SIGHUP: nothing to reload (no TLS)\"");
    else if (sl_tls_reload(tls, &err) < 0)
        sl_error("msg=\"TLS reload failed: the old certificate stays in force\" "
                 "error=\"%s\"", err.text);
    else
        sl_info("msg=\"TLS certificate reloaded\" cert=%s", cfg->tls_cert);
}

/* The process: its log level, a private umask, the heap's trimming, and
 * signals (the main thread waits for 'sigs'; every later thread inherits
 * the block; SIGPIPE is ignored for sockets). */
static void process_setup(const struct sl_config *cfg, sigset_t *sigs)
{
    sl_log_set_level(cfg->log_level);
    /* Every file sluiced makes (store, WAL, keys, tokens, run records,
     * logs) is private, whatever umask it was started with; tasks get
     * 022 back (src/exec/proc.c). */
    umask(077);
    /* Requests allocate on one thread and free on another; keep freed
     * memory in the heap rather than trimming and re-growing it. */
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_TOP_PAD, 64 << 20);
    sigemptyset(sigs);
    sigaddset(sigs, SIGTERM);
    sigaddset(sigs, SIGINT);
    sigaddset(sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* The admin token of a new store: saved to DATA/admin.token (0600) and
 * printed once. Returns 0 or -1 with the reason on stderr. */
static int admin_token_save(const struct sl_config *cfg, char *admin_token)
{
    char path[1200];
    size_t n = strlen(admin_token);
    int wrc;

    snprintf(path, sizeof(path), "%s/admin.token", cfg->data_dir);
    admin_token[n] = '\n';
    wrc = sl_write_file_atomic(path, admin_token, n + 1, 0600);
    admin_token[n] = '\0';
    if (wrc < 0) {
        fprintf(stderr, "sluiced: cannot write %s: %s\n", path, strerror(-wrc));
        return -1;
    }
    printf("admin token: %s\n(saved to %s, mode 0600)\n", admin_token, path);
    fflush(stdout);
    return 0;
}

/* The engine's settings from the daemon's; 'api_url' (160 bytes) gets the
 * address tasks reach the API on (a wildcard address through loopback). */
static void engine_config(const struct sl_config *cfg, struct sl_engine_config *ecfg,
                          char *api_url)
{
    const char *scheme = cfg->tls_cert[0] ? "https" : "http";

    if (strncmp(cfg->listen, "0.0.0.0:", 8) == 0)
        snprintf(api_url, 160, "%s://127.0.0.1:%s", scheme, cfg->listen + 8);
    else if (strncmp(cfg->listen, "[::]:", 5) == 0)
        snprintf(api_url, 160, "%s://[::1]:%s", scheme, cfg->listen + 5);
    else
        snprintf(api_url, 160, "%s://%s", scheme, cfg->listen);
    *ecfg = (struct sl_engine_config){
        .data_dir = cfg->data_dir,
        .api_url = api_url,
        .job_ca_cert = cfg->tls_job_ca[0] ? cfg->tls_job_ca : NULL,
        .store_path = cfg->store[0] ? cfg->store : NULL,
        .sync_full = cfg->sync_full,
        .fake_gpus = cfg->fake_gpus[0] ? cfg->fake_gpus : NULL,
        .fake_nodes = cfg->fake_nodes[0] ? cfg->fake_nodes : NULL,
        .executor = cfg->executor,
        .slurm_partition = cfg->slurm_partition[0] ? cfg->slurm_partition : NULL,
        .slurm_output_dir = cfg->slurm_output_dir[0] ? cfg->slurm_output_dir : NULL,
        .slurm_bin = cfg->slurm_bin[0] ? cfg->slurm_bin : NULL,
        .slurm_api = cfg->slurm_api[0] ? cfg->slurm_api : NULL,
        .slurm_jobcomp = cfg->slurm_jobcomp[0] ? cfg->slurm_jobcomp : NULL,
        .slurm_poll_ms = cfg->slurm_poll_ms,
        .slurm_stage = cfg->slurm_stage,
        .log_cap_bytes = cfg->log_cap_bytes,
        .retry_backoff_ms = cfg->retry_backoff_ms,
        .cancel_grace_ms = cfg->cancel_grace_ms,
        .detach_grace_ms = cfg->detach_grace_ms,
        .interactive_idle_timeout_ms = cfg->interactive_idle_timeout_ms,
        .keep_invalid_depend = !cfg->kill_invalid_depend,
        .job_user = cfg->job_user,
        .allow_daemon_user = cfg->allow_daemon_user,
    };
}

/* The lease's thread for a store several daemons share: this one's name
 * (--ha-name, else HOST:PORT) and where it serves (--advertise-url, else
 * http://LISTEN). */
static int ha_start(const struct sl_config *cfg, struct gate *g, struct sl_error *err)
{
    char name[128], url[256], host[64];
    const char *port = strrchr(cfg->listen, ':');
    struct sl_ha_config hc;
    struct sl_ha *ha;

    if (cfg->ha_lease_ms < 300)
        return sl_errorf(err, -EINVAL, "--ha-lease: at least 300ms, got %lldms",
                         (long long)cfg->ha_lease_ms);
    if (gethostname(host, sizeof(host) - 1) < 0)
        sl_strlcpy(host, "localhost", sizeof(host));
    host[sizeof(host) - 1] = '\0';
    if (cfg->ha_name[0])
        sl_strlcpy(name, cfg->ha_name, sizeof(name));
    else
        snprintf(name, sizeof(name), "%s:%s", host, port ? port + 1 : cfg->listen);
    if (cfg->advertise_url[0]) {
        if (strncmp(cfg->advertise_url, "http://", 7) != 0 &&
            strncmp(cfg->advertise_url, "https://", 8) != 0)
            return sl_errorf(err, -EINVAL, "--advertise-url: must start with http:// or "
                             "https://, got '%.64s'", cfg->advertise_url);
        sl_strlcpy(url, cfg->advertise_url, sizeof(url));
    } else if (strncmp(cfg->listen, "0.0.0.0:", 8) == 0 ||
               strncmp(cfg->listen, "[::]:", 5) == 0) {
        /* every address: the others reach this one by its host name */
        snprintf(url, sizeof(url), "%s://%s:%s", cfg->tls_cert[0] ? "https" : "http", host,
                 port ? port + 1 : "8470");
    } else {
        snprintf(url, sizeof(url), "%s://%s", cfg->tls_cert[0] ? "https" : "http",
                 cfg->listen);
    }
    hc = (struct sl_ha_config){cfg->store, name, url, cfg->ha_lease_ms};
    ha = sl_ha_start(&hc, err);
    atomic_store_explicit(&g->ha, ha, memory_order_release);
    return ha ? 0 : -EIO;
}

static json_t *ha_status(void *arg) { return sl_ha_status_json(arg); }
static void ha_metrics(void *arg, struct sl_buf *b) { sl_ha_metrics(arg, b); }

/* The value of flag 'name' among argv[2..]: "--name V" or "--name=V";
 * NULL when absent. */
static const char *sub_flag(int argc, char **argv, const char *name)
{
    size_t n = strlen(name);

    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], name) == 0 && i + 1 < argc)
            return argv[i + 1];
        if (strncmp(argv[i], name, n) == 0 && argv[i][n] == '=')
            return argv[i] + n + 1;
    }
    return NULL;
}

/* sluiced migrate --store URL|PATH: bring a store to this build's schema
 * and exit (docs/ha.md, "Upgrading"); sluiced copy-store --from SQLITE
 * --to POSTGRES: copy a live SQLite store into an empty PostgreSQL one,
 * verified (src/store/copy.h). Returns the exit status. */
static int subcommand(int argc, char **argv)
{
    static const char *const migrate_flags[] = {"--store", NULL};
    static const char *const copy_flags[] = {"--from", "--to", NULL};
    const char *const *known = strcmp(argv[1], "migrate") == 0 ? migrate_flags : copy_flags;
    struct sl_error err = {0};

    /* only the subcommand's flags, each with its value */
    for (int i = 2; i < argc; i++) {
        size_t n = strcspn(argv[i], "=");
        bool ok = false;
        for (const char *const *k = known; *k && !ok; k++)
            ok = strlen(*k) == n && strncmp(argv[i], *k, n) == 0;
        if (!ok) {
            fprintf(stderr, "sluiced %s: unknown argument '%s'\n", argv[1], argv[i]);
            return 2;
        }
        if (!argv[i][n] && ++i >= argc) {
            fprintf(stderr, "sluiced %s: %s needs a value\n", argv[1], argv[i - 1]);
            return 2;
        }
    }
    if (strcmp(argv[1], "migrate") == 0) {
        const char *store = sub_flag(argc, argv, "--store");
        struct sl_store *st;
        char shown[512];
        if (!store) {
            fprintf(stderr, "usage: sluiced migrate --store PATH|postgres://...\n");
            return 2;
        }
        sl_pg_redact(store, shown, sizeof(shown));
        if (!(st = sl_store_open(store, true, false, &err))) {
            fprintf(stderr, "sluiced migrate: %s\n", err.text);
            return 1;
        }
        sl_store_close(st);
        printf("%s: at schema version %d (this sluiced's)\n", shown,
               strncmp(store, "postgres", 8) == 0 ? (int)sl_postgres_nmigrations
                                                  : (int)sl_sqlite_nmigrations);
        return 0;
    }
    {
        const char *from = sub_flag(argc, argv, "--from"), *to = sub_flag(argc, argv, "--to");
        if (!from || !to) {
            fprintf(stderr, "usage: sluiced copy-store --from PATH|sqlite:PATH "
                            "--to postgres://USER@HOST:PORT/DB\n");
            return 2;
        }
        if (sl_store_copy(from, to, stdout, &err) < 0) {
            fprintf(stderr, "sluiced copy-store: %s; nothing was committed to the target\n",
                    err.text);
            return 1;
        }
        return 0;
    }
}

int main(int argc, char **argv)
{
    struct sl_config cfg;
    struct sl_error err = {0};
    struct sl_engine_config ecfg;
    char api_url[160];
    struct sl_engine *e = NULL;
    struct sl_api *api = NULL;
    struct sl_http *http = NULL;
    struct sl_tls *tls = NULL;
    char *admin_token = NULL, why[256], lock_path[1100], store_lock[1200];
    struct gate gate = {NULL, NULL};
    sigset_t sigs;
    int sig = 0, rc, lock_fd = -1, store_lock_fd = -1;
    int64_t epoch = 0;
    bool shared, lost, ident_loaded = false;
    struct sl_ident ident = {.nrules = 0};

    if (argc >= 2 && (strcmp(argv[1], "migrate") == 0 || strcmp(argv[1], "copy-store") == 0))
        return subcommand(argc, argv);
    if ((rc = read_settings(argc, argv, &cfg)) >= 0)
        return rc;
    rc = 1;
    if (tls_settings_check(&cfg, &err) < 0) {
        fprintf(stderr, "sluiced: %s\n", err.text);
        return 1;
    }
    process_setup(&cfg, &sigs);
    if (cfg.identity[0]) {
        /* before anything is started: a bad file starts nothing */
        if (sl_ident_load(&ident, cfg.identity, &err) < 0) {
            fprintf(stderr, "sluiced: --identity %s\n", err.text);
            goto out;
        }
        if (ident.has_oidc) {
            /* its settings and jwksFile checked now, not after the port
             * and the store are taken */
            struct sl_oidc *check = sl_ident_oidc_create(&ident.oidc, &err);
            if (!check) {
                fprintf(stderr, "sluiced: --identity %s: %s\n", cfg.identity, err.text);
                goto out;
            }
            sl_oidc_destroy(check);
        }
        ident_loaded = true;
    }
    if (cfg.dev && geteuid() != 0 && !cfg.allow_daemon_user[0]) {
        /* A developer's own sluiced can run jobs only as that developer. */
        struct passwd *pw = getpwuid(geteuid());
        if (pw && sl_unix_name_valid(pw->pw_name))
            sl_strlcpy(cfg.allow_daemon_user, pw->pw_name, sizeof(cfg.allow_daemon_user));
    }
    snprintf(lock_path, sizeof(lock_path), "%s/sluiced.lock", cfg.data_dir);
    if (busy(lock_path, "--data-dir", cfg.data_dir))
        goto out;
    /* The port first: a daemon that cannot listen writes nothing (no
     * store, token or key). Until the engine is ready every request is
     * answered 503. */
    raise_nofile();
    /* Slurm's C API (src/exec/slurm_lib.c) sets SLURM_CONF as it reads its
     * configuration, after threads have started. Set here, before any, to
     * the file Slurm's tools read anyway, its setenv only replaces it, and
     * no getenv of another thread meets an environment being grown. */
    if (strcmp(cfg.executor, "slurm") == 0 && !getenv("SLURM_CONF") &&
        access(SL_SLURM_DEFAULT_CONF, R_OK) == 0)
        setenv("SLURM_CONF", SL_SLURM_DEFAULT_CONF, 0);
    if (cfg.tls_cert[0]) {
        struct sl_tls_config tc = {cfg.tls_cert, cfg.tls_key,
                                   cfg.tls_client_ca[0] ? cfg.tls_client_ca : NULL};
        if (!(tls = sl_tls_create(&tc, &err))) {
            fprintf(stderr, "sluiced: %s\n", err.text);
            goto out;
        }
        cfg.http.tls = tls;
    }
    if (!(http = sl_http_start(cfg.listen, &cfg.http, gate_handle, &gate, why,
                               sizeof(why)))) {
        fprintf(stderr, "sluiced: %s\n", why);
        goto out;
    }
    if (data_dir_open(&cfg, lock_path, &lock_fd) < 0)
        goto out;
    shared = strncmp(cfg.store, "postgres://", 11) == 0 ||
             strncmp(cfg.store, "postgresql://", 13) == 0;
    if (shared) {
        /* Several daemons may share the store: the lease says which one
         * leads (decision 0015); until this one does, it follows. */
        if (ha_start(&cfg, &gate, &err) < 0) {
            fprintf(stderr, "sluiced: %s\n", err.text);
            goto out;
        }
        sl_info("msg=\"following until this daemon holds the lease\" lease_ms=%lld",
                (long long)cfg.ha_lease_ms);
        while (!(epoch = sl_ha_wait_leader(gate.ha, &sigs, &sig)) && sig == SIGHUP)
            tls_reload(tls, &cfg); /* a follower reloads too */
        if (!epoch) {
            sl_info("msg=\"shutting down\" signal=%s", sl_signal_name(sig));
            rc = 0;
            goto out;
        }
    } else if (cfg.store[0]) {
        /* A store outside the data dir is one daemon's too. */
        const char *path = strncmp(cfg.store, "sqlite:", 7) == 0 ? cfg.store + 7 : cfg.store;
        snprintf(store_lock, sizeof(store_lock), "%s.lock", path);
        if ((store_lock_fd = lock_or_say(store_lock, "--store", cfg.store)) < 0)
            goto out;
    }
    engine_config(&cfg, &ecfg, api_url);
    ecfg.ha_epoch = epoch;
    if (!(e = sl_engine_create(&ecfg, &admin_token, &err))) {
        fprintf(stderr, "sluiced: %s\n", err.text);
        goto out;
    }
    if (gate.ha)
        sl_ha_attach(gate.ha, e);
    if (admin_token && admin_token_save(&cfg, admin_token) < 0)
        goto out;
    if (!(api = sl_api_create(e, &err))) {
        fprintf(stderr, "sluiced: %s\n", err.text);
        goto out;
    }
    if (gate.ha)
        sl_api_set_ha(api, ha_status, ha_metrics, gate.ha);
    if (ident_loaded && sl_api_set_identity(api, &ident, &err) < 0) {
        fprintf(stderr, "sluiced: --identity %s: %s\n", cfg.identity, err.text);
        goto out;
    }
    if (sl_engine_start(e) < 0) {
        fprintf(stderr, "sluiced: cannot start the engine thread\n");
        goto out;
    }
    atomic_store_explicit(&gate.api, api, memory_order_release);
    sl_info("msg=\"sluiced listening\" url=%s://%s data_dir=%s sync=%s version=%s",
            tls ? "https" : "http", cfg.listen, cfg.data_dir,
            cfg.sync_full ? "full" : "normal", SLUICE_VERSION);
    /* SIGHUP reloads the TLS files (new connections get them; a reload
     * that fails keeps the old ones); SIGTERM and SIGINT stop. */
    while (sigwait(&sigs, &sig) == 0 && sig == SIGHUP)
        tls_reload(tls, &cfg);
    sl_info("msg=\"shutting down\" signal=%s", sl_signal_name(sig));
    rc = 0;
out:
    /* Order: stop accepting, let the engine finish what is queued (it
     * answers every suspended request), then stop the server. Running
     * tasks keep running; the next start re-adopts them. */
    sl_http_quiesce(http);
    sl_api_quiesce(api);
    sl_engine_stop(e);
    sl_http_stop(http);
    sl_tls_destroy(tls);
    lost = e && sl_engine_lost(e);
    sl_api_destroy(api);
    sl_engine_destroy(e);
    sl_ident_free(&ident);
    if (lost || sl_ha_lost(gate.ha)) {
        /* EX_TEMPFAIL: a supervisor starts it again, as a follower */
        fprintf(stderr, "sluiced: this daemon lost the lease and stopped\n");
        rc = 75;
    }
    /* The engine has committed its last group: let the lease go now, so
     * that a follower takes over at once. */
    sl_ha_stop(gate.ha, true);
    /* The locks go last, with the process's files closed. */
    if (store_lock_fd >= 0)
        close(store_lock_fd);
    if (lock_fd >= 0)
        close(lock_fd);
    if (admin_token) {
        memset(admin_token, 0, strlen(admin_token));
        free(admin_token);
    }
    return rc;
}
