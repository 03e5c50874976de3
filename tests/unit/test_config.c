/*
 * test_config.c - sluiced's settings (src/daemon/config.h): defaults, the
 * config file in YAML and JSON, flags, and refusals that name the setting
 * as the user wrote it and change nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/daemon/config.h"
#include "../tap.h"

static int load(struct sl_config *c, const char *text, struct sl_error *err)
{
    return sl_config_load_text(c, text, strlen(text), "f.yaml", err);
}

static void defaults(void)
{
    struct sl_config c;

    sl_config_init(&c, false);
    is_str(c.data_dir, "/var/lib/sluice", "the data dir is /var/lib/sluice by default");
    is_str(c.listen, "127.0.0.1:8470", "the API listens on loopback by default");
    is_str(c.job_user, "nobody", "unmapped users' jobs run as nobody by default");
    ok(c.sync_full && strcmp(c.executor, "local") == 0 && !c.dev,
       "sync full, the local executor, not --dev");
    is_int(c.http.max_conns, 4096, "4096 connections by default");
    sl_config_init(&c, true);
    is_str(c.data_dir, "./.sluice", "--dev keeps its data in ./.sluice");
    ok(c.dev, "and says it is --dev");
}

static void file(void)
{
    struct sl_config c;
    struct sl_error err = {"", ""};

    sl_config_init(&c, false);
    is_int(load(&c, "listen: 0.0.0.0:9000\nlogCap: 100Mi\ncancelGrace: 1m\n"
                    "maxConnectionsPerPeer: 0\nsync: normal\nlogLevel: warn\n"
                    "executor: simulated\njobUser: sluice-job\n", &err),
           0, "a YAML file of settings loads (%s)", err.text);
    is_str(c.listen, "0.0.0.0:9000", "listen from the file");
    is_int(c.log_cap_bytes, 100LL << 20, "logCap 100Mi is 104857600 bytes");
    is_int(c.cancel_grace_ms, 60000, "cancelGrace 1m is 60000 ms");
    is_int(c.http.max_conns_per_peer, 0, "maxConnectionsPerPeer 0 switches the limit off");
    ok(!c.sync_full && c.log_level == SL_LOG_WARN && strcmp(c.executor, "simulated") == 0,
       "sync, logLevel and executor from the file");
    is_str(c.job_user, "sluice-job", "jobUser from the file");
    is_int(load(&c, "{\"maxConnections\": 12, \"idleTimeout\": \"5s\"}", &err), 0,
           "a JSON file loads, integers as integers");
    ok(c.http.max_conns == 12 && c.http.idle_timeout_ms == 5000,
       "maxConnections and idleTimeout from JSON");
}

static void refusals(void)
{
    static const struct {
        const char *text;
        const char *msg;
    } bad[] = {
        /* file, the start of its message */
        {"logCap: 12\n", "--config f.yaml: logCap: must be a size of at least 4096"},
        {"nope: 1\n", "--config f.yaml: nope: unknown setting"},
        {"listen: [1]\n", "--config f.yaml: listen: must be a string"},
        {"- a\n", "--config f.yaml: must be a mapping"},
        {"jobUser: 'root;x'\n", "--config f.yaml: jobUser: must be a Unix account name"},
        {"headerTimeout: 0s\n", "--config f.yaml: headerTimeout: must be a positive duration"},
        {"maxConnections: 0\n", "--config f.yaml: maxConnections: must be a whole number"},
        {"executor: docker\n", "--config f.yaml: executor: must be one of local, simulated"},
        {"listen: ''\n", "--config f.yaml: listen: must be 1 to 127 characters"},
        {"slurmStage: maybe\n", "--config f.yaml: slurmStage: must be on or off, got 'maybe'"},
        {"interactiveIdleTimeout: 31d\n",
         "--config f.yaml: interactiveIdleTimeout: must be off or a duration from 1s to 30d"},
        {"a: [\n", "--config f.yaml: "},
    };
    struct sl_config c, before;
    struct sl_error err;

    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        sl_config_init(&c, false);
        before = c;
        err = (struct sl_error){"", ""};
        ok(load(&c, bad[i].text, &err) < 0 &&
               strncmp(err.text, bad[i].msg, strlen(bad[i].msg)) == 0,
           "%zu: refused, saying \"%s...\" (%s)", i, bad[i].msg, err.text);
        ok(memcmp(&c, &before, sizeof(c)) == 0, "%zu: and nothing was set", i);
    }
    {
        char *big = malloc(SL_CONFIG_MAX_BYTES + 2);
        memset(big, '#', SL_CONFIG_MAX_BYTES + 1);
        big[SL_CONFIG_MAX_BYTES + 1] = '\0';
        is_int(load(&c, big, &err), -EFBIG, "a file over 256 KiB is refused");
        free(big);
    }
}

static void flags(void)
{
    struct sl_config c;
    struct sl_error err = {"", ""};

    sl_config_init(&c, false);
    is_int(sl_config_set_flag(&c, "log-level", "debug", &err), 0, "--log-level debug");
    ok(!c.slurm_stage, "staging is off by default");
    is_int(sl_config_set_flag(&c, "slurm-stage", "on", &err), 0, "--slurm-stage on");
    ok(c.slurm_stage, "turns staging on");
    is_int(sl_config_set_flag(&c, "slurm-stage", "true", &err), -EINVAL, "--slurm-stage true");
    is_str(err.text, "--slurm-stage: must be on or off, got 'true'", "is refused, naming the flag");
    ok(c.slurm_stage, "and changes nothing");
    ok(c.kill_invalid_depend, "a job whose dependency can never hold is ended by default");
    is_int(sl_config_set_flag(&c, "kill-invalid-depend", "off", &err), 0,
           "--kill-invalid-depend off");
    ok(!c.kill_invalid_depend, "keeps such jobs pending");
    ok(c.log_level == SL_LOG_DEBUG, "sets the log level");
    is_int(c.interactive_idle_timeout_ms, 0, "idle interactive sessions are never ended by "
                                             "default");
    is_int(sl_config_set_flag(&c, "interactive-idle-timeout", "2h", &err), 0,
           "--interactive-idle-timeout 2h");
    is_int(c.interactive_idle_timeout_ms, 7200000, "ends them after 2 hours");
    is_int(sl_config_set_flag(&c, "interactive-idle-timeout", "0s", &err), -EINVAL,
           "--interactive-idle-timeout 0s");
    is_str(err.text,
           "--interactive-idle-timeout: must be off or a duration from 1s to 30d such as 2h, "
           "got '0s'",
           "is refused, saying what it takes");
    is_int(c.interactive_idle_timeout_ms, 7200000, "and changes nothing");
    is_int(sl_config_set_flag(&c, "interactive-idle-timeout", "off", &err), 0,
           "--interactive-idle-timeout off");
    is_int(c.interactive_idle_timeout_ms, 0, "switches it off");
    is_int(sl_config_set_flag(&c, "max-connections", "0", &err), -EINVAL,
           "--max-connections 0 is refused");
    is_str(err.text, "--max-connections: must be a whole number from 1 to 1000000, got '0'",
           "naming the flag, not the file's key");
    is_int(sl_config_set_flag(&c, "log-cap", "1Gi", &err), -ENOENT,
           "a setting without a flag (logCap) has none");
    is_int(sl_config_set(&c, "sendTimeout", "2s", "", &err), 0, "a key set directly");
    is_int(c.http.send_timeout_ms, 2000, "sendTimeout 2s");
    /* several daemons on one store */
    is_int(c.ha_lease_ms, 6000, "the lease is 6 s by default");
    is_int(sl_config_set_flag(&c, "ha-lease", "1500ms", &err), 0, "--ha-lease 1500ms");
    is_int(c.ha_lease_ms, 1500, "sets it");
    is_int(sl_config_set_flag(&c, "ha-lease", "soon", &err), -EINVAL, "--ha-lease soon");
    ok(strstr(err.text, "--ha-lease") != NULL, "is refused naming the flag: %s", err.text);
    is_int(sl_config_set(&c, "haName", "sched-a", "", &err), 0, "haName in a file");
    is_str(c.ha_name, "sched-a", "sets the daemon's name");
    is_int(sl_config_set_flag(&c, "advertise-url", "http://sched-a:8470", &err), 0,
           "--advertise-url");
    is_str(c.advertise_url, "http://sched-a:8470", "sets where it is reached");
    /* TLS */
    ok(!c.tls_cert[0] && !c.tls_key[0] && !c.insecure_http, "no TLS and no --insecure-http "
                                                            "by default");
    is_int(sl_config_set_flag(&c, "tls-cert", "/etc/sluice/server.pem", &err), 0, "--tls-cert");
    is_int(sl_config_set(&c, "tlsKey", "/etc/sluice/server.key", "", &err), 0, "tlsKey");
    is_int(sl_config_set_flag(&c, "tls-client-ca", "/etc/sluice/users-ca.pem", &err), 0,
           "--tls-client-ca");
    ok(strcmp(c.tls_cert, "/etc/sluice/server.pem") == 0 &&
           strcmp(c.tls_key, "/etc/sluice/server.key") == 0 &&
           strcmp(c.tls_client_ca, "/etc/sluice/users-ca.pem") == 0,
       "set the three files");
    is_int(sl_config_set(&c, "tlsJobCa", "/etc/sluice/ca.pem", "", &err), 0, "tlsJobCa");
    is_str(c.tls_job_ca, "/etc/sluice/ca.pem", "sets the CA jobs are given");
    is_int(sl_config_set(&c, "insecureHttp", "on", "", &err), 0, "insecureHttp: on");
    ok(c.insecure_http, "sets it");
    is_int(sl_config_set(&c, "insecureHttp", "yes", "--config f: ", &err), -EINVAL,
           "insecureHttp: yes");
    is_str(err.text, "--config f: insecureHttp: must be on or off, got 'yes'", "is refused");
    is_int(sl_config_set_flag(&c, "insecure-http", "on", &err), -ENOENT,
           "--insecure-http is main's bare flag, not a table flag");
}

int main(void)
{
    defaults();
    file();
    refusals();
    flags();
    return done_testing();
}
