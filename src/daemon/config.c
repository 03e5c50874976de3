/*
 * config.c - sluiced's settings table, and the config file and flags that
 * fill it (config.h). A value is checked in full before anything is
 * written, so a refused value leaves the settings as they were.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/spec.h"

enum kind {
    K_STRING,                     /* 1..size-1 bytes */
    K_BOOL_SYNC,                  /* full | normal */
    K_ONOFF,                      /* on | off */
    K_BYTES,                      /* a size >= 4096 */
    K_DURATION,                   /* >= 0 */
    K_LOGLEVEL,
    K_EXECUTOR,                   /* a row of src/exec/executor.c */
    K_ACCOUNT,                    /* a Unix account name */
    K_COUNT,                      /* int, 1..1000000 */
    K_LIMIT,                      /* int, 0 (none)..1000000 */
    K_TIMEOUT,                    /* int64 ms, a positive duration */
    K_GRACE,                      /* int64 ms, 0..SL_EXEC_GRACE_MAX_MS */
    K_OFF_DURATION,               /* int64 ms: off (0) or 1s..30d */
};

/* Columns: config-file key, long flag (NULL = file only), kind, where the
 * value lands, its buffer's size (strings). */
static const struct setting {
    const char *key;
    const char *flag;
    enum kind kind;
    size_t offset;
    size_t size;
} settings[] = {
    {"listen", "listen", K_STRING, offsetof(struct sl_config, listen), 128},
    {"dataDir", "data-dir", K_STRING, offsetof(struct sl_config, data_dir), 1024},
    {"store", "store", K_STRING, offsetof(struct sl_config, store), 1100},
    {"fakeGpus", "fake-gpus", K_STRING, offsetof(struct sl_config, fake_gpus), 256},
    {"fakeNodes", "fake-nodes", K_STRING, offsetof(struct sl_config, fake_nodes), 1100},
    {"executor", "executor", K_EXECUTOR, offsetof(struct sl_config, executor), 32},
    {"sync", "sync", K_BOOL_SYNC, offsetof(struct sl_config, sync_full), 0},
    {"slurmPartition", "slurm-partition", K_STRING, offsetof(struct sl_config, slurm_partition),
     64},
    {"slurmOutputDir", "slurm-output-dir", K_STRING,
     offsetof(struct sl_config, slurm_output_dir), 1024},
    {"slurmBin", "slurm-bin", K_STRING, offsetof(struct sl_config, slurm_bin), 1024},
    {"slurmApi", "slurm-api", K_STRING, offsetof(struct sl_config, slurm_api), 16},
    {"slurmJobcomp", "slurm-jobcomp", K_STRING, offsetof(struct sl_config, slurm_jobcomp),
     1024},
    {"slurmPoll", "slurm-poll", K_TIMEOUT, offsetof(struct sl_config, slurm_poll_ms), 0},
    {"slurmStage", "slurm-stage", K_ONOFF, offsetof(struct sl_config, slurm_stage), 0},
    {"logCap", NULL, K_BYTES, offsetof(struct sl_config, log_cap_bytes), 0},
    {"retryBackoff", NULL, K_DURATION, offsetof(struct sl_config, retry_backoff_ms), 0},
    {"cancelGrace", NULL, K_DURATION, offsetof(struct sl_config, cancel_grace_ms), 0},
    {"killInvalidDepend", "kill-invalid-depend", K_ONOFF,
     offsetof(struct sl_config, kill_invalid_depend), 0},
    {"interactiveDetachGrace", "interactive-detach-grace", K_GRACE,
     offsetof(struct sl_config, detach_grace_ms), 0},
    {"interactiveIdleTimeout", "interactive-idle-timeout", K_OFF_DURATION,
     offsetof(struct sl_config, interactive_idle_timeout_ms), 0},
    {"logLevel", "log-level", K_LOGLEVEL, offsetof(struct sl_config, log_level), 0},
    {"jobUser", "job-user", K_ACCOUNT, offsetof(struct sl_config, job_user), 64},
    {"allowDaemonUser", "allow-daemon-user", K_ACCOUNT,
     offsetof(struct sl_config, allow_daemon_user), 64},
    {"maxConnections", "max-connections", K_COUNT,
     offsetof(struct sl_config, http.max_conns), 0},
    {"maxConnectionsPerPeer", "max-connections-per-peer", K_LIMIT,
     offsetof(struct sl_config, http.max_conns_per_peer), 0},
    {"headerTimeout", "header-timeout", K_TIMEOUT,
     offsetof(struct sl_config, http.header_timeout_ms), 0},
    {"bodyTimeout", "body-timeout", K_TIMEOUT, offsetof(struct sl_config, http.body_timeout_ms),
     0},
    {"sendTimeout", "send-timeout", K_TIMEOUT, offsetof(struct sl_config, http.send_timeout_ms),
     0},
    {"idleTimeout", "idle-timeout", K_TIMEOUT, offsetof(struct sl_config, http.idle_timeout_ms),
     0},
    {"haName", "ha-name", K_STRING, offsetof(struct sl_config, ha_name), 128},
    {"advertiseUrl", "advertise-url", K_STRING, offsetof(struct sl_config, advertise_url), 256},
    {"identity", "identity", K_STRING, offsetof(struct sl_config, identity), 1024},
    {"haLease", "ha-lease", K_TIMEOUT, offsetof(struct sl_config, ha_lease_ms), 0},
    {"tlsCert", "tls-cert", K_STRING, offsetof(struct sl_config, tls_cert), 1024},
    {"tlsKey", "tls-key", K_STRING, offsetof(struct sl_config, tls_key), 1024},
    {"tlsClientCa", "tls-client-ca", K_STRING, offsetof(struct sl_config, tls_client_ca), 1024},
    {"tlsJobCa", "tls-job-ca", K_STRING, offsetof(struct sl_config, tls_job_ca), 1024},
    /* the flag --insecure-http takes no value: main.c sets it */
    {"insecureHttp", NULL, K_ONOFF, offsetof(struct sl_config, insecure_http), 0},
};

static const char *const log_levels[] = {"debug", "info", "warn", "error"};

void sl_config_init(struct sl_config *cfg, bool dev)
{
    *cfg = (struct sl_config){
        .dev = dev,
        .sync_full = true,
        .log_cap_bytes = 64LL << 20,
        .ha_lease_ms = 6000,
        .retry_backoff_ms = 5000,
        .cancel_grace_ms = 10000,
        .detach_grace_ms = 10000,
        .kill_invalid_depend = true,
        .log_level = SL_LOG_INFO,
        .job_user = "nobody",
        .executor = "local",
        .slurm_poll_ms = 1000,
        .http = SL_HTTP_CONFIG_DEFAULT,
    };
    sl_strlcpy(cfg->listen, "127.0.0.1:8470", sizeof(cfg->listen));
    sl_strlcpy(cfg->data_dir, dev ? "./.sluice" : "/var/lib/sluice", sizeof(cfg->data_dir));
}

/* Check 'val' for setting 's' and, when it is good, store it. 'name' is
 * how the user named the setting ("<origin><key>" or "--<flag>"). */
static int set_value(struct sl_config *cfg, const struct setting *s, const char *val,
                     const char *name, struct sl_error *err)
{
    char *dst = (char *)cfg + s->offset;
    int64_t v;

    switch (s->kind) {
    case K_STRING:
        if (!*val || strlen(val) >= s->size)
            return sl_errorf(err, -EINVAL, "%s: must be 1 to %zu characters", name,
                             s->size - 1);
        sl_strlcpy(dst, val, s->size);
        return 0;
    case K_BOOL_SYNC:
        if (strcmp(val, "full") && strcmp(val, "normal"))
            return sl_errorf(err, -EINVAL, "%s: must be full or normal, got '%.64s'", name,
                             val);
        *(bool *)dst = strcmp(val, "full") == 0;
        return 0;
    case K_ONOFF:
        if (strcmp(val, "on") && strcmp(val, "off"))
            return sl_errorf(err, -EINVAL, "%s: must be on or off, got '%.64s'", name, val);
        *(bool *)dst = strcmp(val, "on") == 0;
        return 0;
    case K_BYTES:
        if (sl_parse_bytes(val, &v) < 0 || v < 4096)
            return sl_errorf(err, -EINVAL,
                             "%s: must be a size of at least 4096 bytes such as 100Mi, "
                             "got '%.64s'", name, val);
        *(int64_t *)dst = v;
        return 0;
    case K_DURATION:
        if (sl_parse_duration_ms(val, &v) < 0)
            return sl_errorf(err, -EINVAL, "%s: must be a duration such as 10s, got '%.64s'",
                             name, val);
        *(int64_t *)dst = v;
        return 0;
    case K_COUNT:
    case K_LIMIT:
        if (sl_parse_int64(val, s->kind == K_COUNT ? 1 : 0, 1000000, &v) < 0)
            return sl_errorf(err, -EINVAL,
                             "%s: must be a whole number from %d to 1000000, got '%.64s'",
                             name, s->kind == K_COUNT ? 1 : 0, val);
        *(int *)dst = (int)v;
        return 0;
    case K_TIMEOUT:
        if (sl_parse_duration_ms(val, &v) < 0 || v < 1)
            return sl_errorf(err, -EINVAL,
                             "%s: must be a positive duration such as 10s, got '%.64s'", name,
                             val);
        *(int64_t *)dst = v;
        return 0;
    case K_GRACE:
        if (sl_parse_duration_ms(val, &v) < 0 || v > SL_EXEC_GRACE_MAX_MS)
            return sl_errorf(err, -EINVAL,
                             "%s: must be a duration from 0s to 1d such as 10s, got '%.64s'",
                             name, val);
        *(int64_t *)dst = v;
        return 0;
    case K_OFF_DURATION:
        if (strcmp(val, "off") == 0) {
            v = 0;
        } else if (sl_parse_duration_ms(val, &v) < 0 || v < 1000 || v > 30 * 86400000LL) {
            return sl_errorf(err, -EINVAL,
                             "%s: must be off or a duration from 1s to 30d such as 2h, got "
                             "'%.64s'", name, val);
        }
        *(int64_t *)dst = v;
        return 0;
    case K_EXECUTOR: {
        char kinds[128];
        if (!sl_executor_kind_valid(val))
            return sl_errorf(err, -EINVAL, "%s: must be one of %s, got '%.64s'", name,
                             sl_executor_kinds(kinds, sizeof(kinds)), val);
        sl_strlcpy(dst, val, s->size);
        return 0;
    }
    case K_ACCOUNT:
        /* A Unix account name as useradd takes it; whether it exists is
         * the engine's check, at start. */
        if (!sl_unix_name_valid(val) || strlen(val) >= s->size)
            return sl_errorf(err, -EINVAL,
                             "%s: must be a Unix account name (1 to 32 of a-z, 0-9, '_', "
                             "'-', starting with a letter or '_'), got '%.40s'", name, val);
        sl_strlcpy(dst, val, s->size);
        return 0;
    case K_LOGLEVEL:
        for (size_t i = 0; i < SL_ARRAY_LEN(log_levels); i++)
            if (strcmp(val, log_levels[i]) == 0) {
                *(enum sl_log_level *)dst = (enum sl_log_level)i;
                return 0;
            }
        return sl_errorf(err, -EINVAL, "%s: must be debug, info, warn or error, got '%.64s'",
                         name, val);
    }
    return sl_errorf(err, -EINVAL, "%s: unknown kind of setting", name);
}

int sl_config_set(struct sl_config *cfg, const char *key, const char *val,
                  const char *origin, struct sl_error *err)
{
    char name[160];

    snprintf(name, sizeof(name), "%s%.64s", origin, key);
    for (size_t i = 0; i < SL_ARRAY_LEN(settings); i++)
        if (strcmp(settings[i].key, key) == 0)
            return set_value(cfg, &settings[i], val, name, err);
    return sl_errorf(err, -EINVAL, "%s: unknown setting", name);
}

int sl_config_set_flag(struct sl_config *cfg, const char *flag, const char *val,
                       struct sl_error *err)
{
    char name[64];

    for (size_t i = 0; i < SL_ARRAY_LEN(settings); i++)
        if (settings[i].flag && strcmp(settings[i].flag, flag) == 0) {
            snprintf(name, sizeof(name), "--%s", flag);
            return set_value(cfg, &settings[i], val, name, err);
        }
    return -ENOENT;
}

int sl_config_load_text(struct sl_config *cfg, const char *text, size_t len,
                        const char *name, struct sl_error *err)
{
    char origin[1100];
    json_t *doc = NULL, *v;
    const char *key;
    int rc;

    if (len > SL_CONFIG_MAX_BYTES)
        return sl_errorf(err, -EFBIG, "--config %s: larger than %d KiB", name,
                         SL_CONFIG_MAX_BYTES / 1024);
    if ((rc = sl_doc_decode(text, len, false, &doc, err)) < 0)
        return sl_errorf(err, rc, "--config %s: %s", name, err->text);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return sl_errorf(err, -EINVAL, "--config %s: must be a mapping", name);
    }
    snprintf(origin, sizeof(origin), "--config %s: ", name);
    json_object_foreach(doc, key, v) {
        char num[32];
        const char *val = json_string_value(v);
        if (json_is_integer(v)) {
            snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
            val = num;
        }
        if (!val) {
            rc = sl_errorf(err, -EINVAL, "%s%.64s: must be a string", origin, key);
            break;
        }
        if ((rc = sl_config_set(cfg, key, val, origin, err)) < 0)
            break;
    }
    json_decref(doc);
    return rc;
}

int sl_config_load_file(struct sl_config *cfg, const char *path, struct sl_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc;

    if ((rc = sl_read_file(path, SL_CONFIG_MAX_BYTES, &buf, &len)) < 0)
        return sl_errorf(err, rc, "--config %s: %s", path,
                         rc == -EFBIG ? "larger than 256 KiB" : strerror(-rc));
    rc = sl_config_load_text(cfg, buf, len, path, err);
    free(buf);
    return rc;
}
