/*
 * fuzz_config.c - libFuzzer target for sluiced's config file
 * (src/daemon/config.c, sl_config_load_text: a YAML or JSON mapping of
 * settings).
 *
 * Beyond the sanitizers: whatever the file, the settings it leaves are
 * within what the table allows (strings NUL-terminated and non-empty where
 * set, sizes, counts and timeouts in range, a log level and an executor
 * that exist, account names valid), and a refusal says "--config NAME: ".
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/daemon/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_config: %s\n", what);
    abort();
}

static void check_str(const char *s, size_t size, bool nonempty, const char *what)
{
    if (strnlen(s, size) == size || (nonempty && !s[0]))
        fail(what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl_config cfg;
    struct sl_error err = {"", ""};
    int rc;

    sl_config_init(&cfg, size & 1);
    rc = sl_config_load_text(&cfg, (const char *)data, size, "fuzz.yaml", &err);
    if (rc < 0) {
        if (rc != -EINVAL && rc != -EFBIG && rc != -ENOMEM)
            fail("a refusal with an rc the contract does not list");
        if (strncmp(err.text, "--config fuzz.yaml: ", 20) != 0)
            fail("a refusal that does not name the file");
    }
    /* Refused or not, what was set is valid. */
    check_str(cfg.listen, sizeof(cfg.listen), true, "listen");
    check_str(cfg.data_dir, sizeof(cfg.data_dir), true, "dataDir");
    check_str(cfg.store, sizeof(cfg.store), false, "store");
    check_str(cfg.fake_gpus, sizeof(cfg.fake_gpus), false, "fakeGpus");
    check_str(cfg.fake_nodes, sizeof(cfg.fake_nodes), false, "fakeNodes");
    check_str(cfg.job_user, sizeof(cfg.job_user), true, "jobUser");
    check_str(cfg.allow_daemon_user, sizeof(cfg.allow_daemon_user), false, "allowDaemonUser");
    if (!sl_unix_name_valid(cfg.job_user) ||
        (cfg.allow_daemon_user[0] && !sl_unix_name_valid(cfg.allow_daemon_user)))
        fail("an account name that is not one");
    if (cfg.log_cap_bytes < 4096 || cfg.retry_backoff_ms < 0 || cfg.cancel_grace_ms < 0)
        fail("a size or duration out of range");
    if ((int)cfg.log_level < SL_LOG_DEBUG || (int)cfg.log_level > SL_LOG_ERROR)
        fail("a log level that does not exist");
    if (!sl_executor_kind_valid(cfg.executor))
        fail("an executor that does not exist");
    if (cfg.http.max_conns < 1 || cfg.http.max_conns > 1000000 ||
        cfg.http.max_conns_per_peer < 0 || cfg.http.max_conns_per_peer > 1000000 ||
        cfg.http.header_timeout_ms < 1 || cfg.http.body_timeout_ms < 1 ||
        cfg.http.send_timeout_ms < 1 || cfg.http.idle_timeout_ms < 1)
        fail("a connection limit or timeout out of range");
    return 0;
}
