/*
 * policy.h - admission policy: kind: Policy and kind: Dataset manifests,
 * image scan summaries (imported from Trivy JSON reports), and the verdict
 * on a job submission. docs/policy.md has the manifests and every rule.
 *
 * Plain data throughout (no pointers), so that the structs can live in
 * struct sl_manifest and be copied with memcpy. Pure functions: the caller
 * (the daemon's engine) supplies the datasets and scans it knows.
 */
#ifndef SL_POLICY_H
#define SL_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../util/util.h"

#define SL_POLICY_LIST_MAX 16     /* entries of each list of a Policy */
#define SL_POLICY_PATTERN_MAX 128 /* bytes of a registry prefix or glob */
#define SL_DATASET_ACCESS_MAX 32

/* Finding severities, lowest first, as Trivy names them. */
enum sl_severity { SL_SEV_UNKNOWN, SL_SEV_LOW, SL_SEV_MEDIUM, SL_SEV_HIGH, SL_SEV_CRITICAL,
                   SL_SEV_COUNT };
const char *sl_severity_name(int s);  /* "unknown", "low", ... */

/* kind: Policy. Every list is optional; an empty selector governs every
 * job. */
struct sl_policy {
    char name[64];
    int nteams, nqueues;
    char teams[SL_POLICY_LIST_MAX][64];   /* spec.teams */
    char queues[SL_POLICY_LIST_MAX][64];  /* spec.queues */
    /* spec.images */
    int nregistries, ndeny, ndigest;
    char registries[SL_POLICY_LIST_MAX][SL_POLICY_PATTERN_MAX]; /* prefixes */
    char deny[SL_POLICY_LIST_MAX][SL_POLICY_PATTERN_MAX];       /* fnmatch globs */
    char require_digest[SL_POLICY_LIST_MAX][64];                /* priority classes */
    bool require_image;
    int max_severity;             /* refuse findings at or above; -1 = no gate */
    bool require_scan;            /* refuse images never scanned */
    /* spec.network */
    unsigned networks;            /* allowed: bit 1 << enum sl_network; 0 = all */
    int network_default;          /* enum sl_network; -1 = none */
    /* spec.caps */
    int64_t max_gpu_milli;        /* per job, summed over tasks; -1 = none */
    int64_t max_runtime_ms;       /* jobs must set maxRuntime <= this; 0 = none */
    /* spec.models */
    int napprovers;
    char approvers[5][16];        /* roles that move models between stages */
};

/* kind: Dataset: one version of a dataset, and who may use it. */
struct sl_dataset {
    char name[64];
    char version[64];
    char digest[72];              /* "sha256:<64 hex>" or "" */
    char owner[64];               /* a team; always read-write */
    char path[512];
    char description[257];
    int naccess;
    struct {
        char team[64];
        bool rw;
    } access[SL_DATASET_ACCESS_MAX];
};

/* What a scan found in an image, by digest. */
struct sl_scan {
    char digest[72];              /* "sha256:<64 hex>" */
    char artifact[256];           /* the image as scanned */
    int64_t at_ms;                /* when it was imported */
    int counts[SL_SEV_COUNT];
    int top;                      /* the highest severity found; -1 = none */
    int nids;
    char ids[5][64];              /* some findings at the highest severity */
};

/* Parse the "spec" of a Policy / Dataset manifest at path P ("spec");
 * errors name the field. The name comes from metadata.name. */
int sl_policy_parse(const json_t *spec, const char *P, const char *name, struct sl_policy *p,
                    struct sl_error *err);
json_t *sl_policy_json(const struct sl_policy *p);
int sl_dataset_parse(const json_t *spec, const char *P, const char *name, struct sl_dataset *d,
                     struct sl_error *err);
json_t *sl_dataset_json(const struct sl_dataset *d);

/* A Trivy JSON report (`trivy image -f json`, schema version 2): the image
 * digest from Metadata.RepoDigests (else Metadata.ImageID), ArtifactName,
 * and the findings (vulnerabilities, failed misconfigurations, secrets) by
 * severity. At most 16 MiB. */
int sl_trivy_parse(const char *buf, size_t len, struct sl_scan *out, struct sl_error *err);
json_t *sl_scan_json(const struct sl_scan *s);
int sl_scan_from_json(const json_t *j, struct sl_scan *out);

/* A version (1..63 of A-Z a-z 0-9 . _ -); a digest "sha256:<64 lowercase
 * hex>". */
bool sl_version_valid(const char *s);
bool sl_digest_valid(const char *d);

/* An image reference split up; registry "docker.io" when none is named. */
struct sl_image_ref {
    char registry[128];
    char repository[256];
    char tag[128];                /* "" = none */
    char digest[72];              /* "" = not pinned */
};
int sl_image_ref_parse(const char *ref, struct sl_image_ref *out);

/* The verdict on a job. */
struct sl_job_spec;
struct sl_admit_in {
    const struct sl_job_spec *spec;
    const char *team, *queue, *pclass;  /* as resolved for the job */
    /* the caller's tables; NULL when unknown */
    const struct sl_dataset *(*dataset)(void *arg, const char *name, const char *version);
    const struct sl_scan *(*scan)(void *arg, const char *digest);
    void *arg;
};
struct sl_verdict {
    bool allowed;
    char policy[64];              /* the refusing Policy; "" for built-in rules */
    char rule[64];                /* e.g. "images.allowedRegistries" */
    char field[96];               /* the job's field at fault */
    char message[384];            /* what a user can act on */
    int network;                  /* enum sl_network the job gets */
    int ndatasets;
    struct {
        char name[64], version[64], digest[72];
        bool rw;
    } datasets[64];
};
/* Evaluate every policy that governs the job (all must admit; the first
 * refusal in policy-name order, rules in the documented order) and the
 * built-in dataset rules. Returns 0 (see out->allowed) or -EINVAL. */
int sl_admit(const struct sl_policy *policies, size_t n, const struct sl_admit_in *in,
             struct sl_verdict *out);
/* Whether 'role' may move models between stages: the approvers of the
 * policies that name any, else admin and team-admin. */
bool sl_policy_may_approve(const struct sl_policy *policies, size_t n, const char *role);

#endif
