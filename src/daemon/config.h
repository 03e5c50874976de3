/*
 * config.h - sluiced's settings: their defaults, the config file (YAML or
 * JSON, --config) and the flags that override it, one validator for both.
 *
 * Every setting is a row of one table (config.c: its file key, its flag,
 * its kind and where it lands), so a new setting is a new row and the file
 * and the flag cannot drift apart. A value is checked completely when it
 * is set, and a refusal names the key as the user wrote it ("--config
 * F: logCap: ..." or "--log-cap: ..."). Not thread-safe; main() owns it.
 */
#ifndef SL_DAEMON_CONFIG_H
#define SL_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../exec/executor.h"
#include "../http/http.h"
#include "../util/util.h"

#define SL_CONFIG_MAX_BYTES (256 * 1024) /* of a config file */

struct sl_config {
    char listen[128];             /* HOST:PORT */
    char data_dir[1024];
    char store[1100];             /* "" = DATA/sluice.db */
    char fake_gpus[256];          /* "" = discover */
    char fake_nodes[1100];        /* "" = this host */
    char executor[32];            /* src/exec/executor.h: local, simulated,
                                     slurm */
    char slurm_partition[64];     /* slurm: the partition Sluice places in */
    char slurm_output_dir[1024];  /* slurm: shared directory of task output */
    char slurm_bin[1024];         /* slurm: where its tools are; "" = PATH */
    char slurm_api[16];           /* slurm: auto (""), library or tools */
    char slurm_jobcomp[1024];     /* slurm: its jobcomp/filetxt file; "" =
                                     none */
    int64_t slurm_poll_ms;        /* slurm: how often it is asked */
    bool slurm_stage;             /* slurm: stage a queue's next jobs behind
                                     its running ones (docs/slurm.md) */
    bool dev;
    bool sync_full;
    int64_t log_cap_bytes;
    int64_t retry_backoff_ms;
    int64_t cancel_grace_ms;
    int64_t detach_grace_ms;      /* an interactive job's terminal with
                                     nobody attached is hung up after this
                                     (default 10 s) */
    int64_t interactive_idle_timeout_ms; /* an interactive job idle this
                                     long is ended (engine.h); 0 = off */
    bool kill_invalid_depend;     /* end a job whose dependency can never
                                     be satisfied (default on) */
    enum sl_log_level log_level;
    char job_user[64];            /* "none" = refuse unmapped users */
    char allow_daemon_user[64];   /* the one account allowed to have the
                                     daemon's uid; "" = none */
    struct sl_http_config http;   /* connection limits and timeouts */
    /* several daemons on one PostgreSQL store (docs/ha.md) */
    char ha_name[128];            /* this daemon among them; "" = HOST:PORT */
    char advertise_url[256];      /* where the others send clients; "" =
                                     http://LISTEN */
    int64_t ha_lease_ms;          /* the leader's lease (default 6 s) */
    char identity[1024];          /* the identity file (docs/identity.md):
                                     LDAP, OIDC and the group rules; "" =
                                     Sluice's own tokens only */
    /* TLS (src/http/tls.h); "" = none */
    char tls_cert[1024];          /* PEM certificate and chain */
    char tls_key[1024];           /* PEM private key, private to sluiced */
    char tls_client_ca[1024];     /* PEM CA of client certificates */
    char tls_job_ca[1024];        /* PEM CA jobs verify the API with
                                     (their SLUICE_CA_CERT); "" = none */
    bool insecure_http;           /* serve plain HTTP beyond loopback */
};

/* The defaults, with --dev's when 'dev'. */
void sl_config_init(struct sl_config *cfg, bool dev);

/* Set the setting of config-file key 'key' from text 'val'. 'origin'
 * prefixes the message ("--config F: "; may be ""). Returns 0, or -EINVAL
 * (unknown key, bad value) with 'err' saying "<origin><key>: why"; 'cfg'
 * is unchanged then. */
int sl_config_set(struct sl_config *cfg, const char *key, const char *val,
                  const char *origin, struct sl_error *err);

/* Set the setting of long flag 'flag' (without its dashes, e.g.
 * "log-level"). Returns 0, -ENOENT when no setting has that flag, or
 * -EINVAL with 'err' saying "--<flag>: why". */
int sl_config_set_flag(struct sl_config *cfg, const char *flag, const char *val,
                       struct sl_error *err);

/* Apply a config document text[0..len) (a YAML or JSON mapping of keys to
 * strings or integers; at most SL_CONFIG_MAX_BYTES). 'name' is the file's
 * name for messages. Returns 0, or -EINVAL / -EFBIG / -ENOMEM with 'err'
 * saying "--config <name>: ..."; settings before the faulty key may have
 * been applied (main() exits on any error). */
int sl_config_load_text(struct sl_config *cfg, const char *text, size_t len,
                        const char *name, struct sl_error *err);

/* sl_config_load_text of the file at 'path'. */
int sl_config_load_file(struct sl_config *cfg, const char *path, struct sl_error *err);

#endif
