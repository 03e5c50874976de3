/*
 * oidc_probe.c - drive src/ident/oidc.c against a provider from a shell
 * or Python test (tests/integration/oidc_idp.t against fake_idp.py).
 *
 *   oidc-probe ISSUER CA_FILE discover          -> "ok keys=N"
 *   oidc-probe ISSUER CA_FILE device-start      -> "ok DEVICE_CODE USER_CODE INTERVAL EXPIRES"
 *   oidc-probe ISSUER CA_FILE poll DEVICE_CODE  -> "ok ID_TOKEN" or "rc=N TEXT"
 *   oidc-probe ISSUER CA_FILE verify            -> the token on stdin;
 *                                                  "ok USER SUBJECT GROUP,..." or "rc=N TEXT"
 * client_id is "sluice" unless $OIDC_CLIENT_ID; the secret comes from
 * $OIDC_CLIENT_SECRET (never argv). Exit status 0 on "ok", else 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/ident/oidc.h"

static int fail(int rc, const struct sl_error *err)
{
    printf("rc=%d %s\n", rc, err->text);
    return 1;
}

int main(int argc, char **argv)
{
    struct sl_oidc_config cfg;
    struct sl_error err = {0};
    struct sl_oidc *o;
    const char *cmd;
    int rc, status = 1;

    if (argc < 4) {
        fprintf(stderr, "usage: oidc-probe ISSUER CA_FILE discover|device-start|poll CODE|verify\n");
        return 2;
    }
    cmd = argv[3];
    sl_oidc_config_init(&cfg);
    sl_strlcpy(cfg.issuer, argv[1], sizeof(cfg.issuer));
    sl_strlcpy(cfg.ca_file, argv[2], sizeof(cfg.ca_file));
    sl_strlcpy(cfg.client_id, getenv("OIDC_CLIENT_ID") ? getenv("OIDC_CLIENT_ID") : "sluice",
               sizeof(cfg.client_id));
    if (getenv("OIDC_CLIENT_SECRET"))
        sl_strlcpy(cfg.client_secret, getenv("OIDC_CLIENT_SECRET"), sizeof(cfg.client_secret));
    o = sl_oidc_create(&cfg, &err);
    if (!o)
        return fail(-errno, &err);
    if ((rc = sl_oidc_discover(o, &err)) < 0) {
        status = fail(rc, &err);
    } else if (strcmp(cmd, "discover") == 0) {
        printf("ok keys=%zu\n", sl_oidc_key_count(o));
        status = 0;
    } else if (strcmp(cmd, "device-start") == 0) {
        struct sl_oidc_device d;
        if ((rc = sl_oidc_device_start(o, NULL, &d, &err)) < 0) {
            status = fail(rc, &err);
        } else {
            printf("ok %s %s %lld %lld %s\n", d.device_code, d.user_code, (long long)d.interval_s,
                   (long long)d.expires_in_s, d.verification_uri);
            status = 0;
        }
    } else if (strcmp(cmd, "poll") == 0 && argc == 5) {
        char *tok = NULL;
        if ((rc = sl_oidc_device_poll(o, argv[4], &tok, &err)) < 0) {
            status = fail(rc, &err);
        } else {
            printf("ok %s\n", tok);
            status = 0;
        }
        free(tok);
    } else if (strcmp(cmd, "verify") == 0) {
        static char tok[SL_OIDC_TOKEN_MAX + 2];
        struct sl_oidc_identity id;
        size_t n = fread(tok, 1, sizeof(tok) - 1, stdin);
        while (n && (tok[n - 1] == '\n' || tok[n - 1] == '\r'))
            n--;
        if ((rc = sl_oidc_verify(o, tok, n, sl_now_ms(), &id, &err)) < 0) {
            status = fail(rc, &err);
        } else {
            printf("ok %s %s ", id.user, id.subject);
            for (size_t i = 0; i < id.ngroups; i++)
                printf("%s%s", i ? "," : "", id.groups[i]);
            printf("\n");
            status = 0;
        }
        sl_oidc_identity_clear(&id);
    } else {
        fprintf(stderr, "oidc-probe: unknown command %s\n", cmd);
        status = 2;
    }
    sl_oidc_destroy(o);
    return status;
}
