/*
 * test_manifest.c - the manifests parser (src/core: spec.h, manifest.c,
 * fields.c, normalise.c): each manifest kind with the exact field path of
 * every refusal, resource lists, Queue quotas and limits, Cohort,
 * PriorityClass, Scheduler, the limits of a file, and the normalised
 * manifest spec round trip. The job spec is in test_spec.c.
 */
#include <errno.h>
#include <stdlib.h>

#include "../../src/core/spec.h"
#include "../../src/util/buf.h"
#include "../tap.h"

static int mparse(const char *doc, struct sl_manifest **m, size_t *n,
                  struct sl_error *err)
{
    memset(err, 0, sizeof(*err));
    return sl_manifests_parse(doc, strlen(doc), m, n, err);
}

static void mrefused(const char *doc, const char *field, const char *text,
                     const char *name)
{
    struct sl_manifest *m = NULL;
    struct sl_error err;
    size_t n = 0;
    int rc = mparse(doc, &m, &n, &err);

    if (!ok(rc == -EINVAL && !strcmp(err.field, field) &&
                strstr(err.text, text) && !m,
            "%s", name))
        diag("rc %d, field \"%s\" (want \"%s\"), text \"%s\" (want \"%s\")",
             rc, err.field, field, err.text, text);
    free(m);
}

static void manifests(void)
{
    static const char *all =
        "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: team-a}\n"
        "spec: {defaultQueue: research}\n"
        "---\n"
        "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: research}\n"
        "spec: {team: team-a}\n"
        "---\n"
        "apiVersion: sluice/v1\nkind: PriorityClass\n"
        "metadata: {name: production}\n"
        "spec: {value: 1000, preemptible: false, default: true}\n"
        "---\n"
        "apiVersion: sluice/v1\nkind: PriorityClass\nmetadata: {name: batch}\n"
        "spec: {value: -5}\n"
        "---\n"
        "apiVersion: sluice/v1\nkind: User\nmetadata: {name: alice}\n"
        "spec: {team: team-a, role: admin, unixUser: alice_1}\n"
        "---\n"
        "apiVersion: sluice/v1\nkind: User\nmetadata: {name: bob}\n"
        "spec: {team: team-a}\n"
        "---\n"
        "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: team-b}\n";
    struct sl_manifest *m = NULL;
    struct sl_error err;
    size_t n = 0;

    if (!ok(mparse(all, &m, &n, &err) == 0 && n == 7,
            "a file of seven manifests of every kind parses")) {
        diag("%s: %s", err.field, err.text);
        free(m);
        return;
    }
    ok(m[0].kind == SL_KIND_TEAM && !strcmp(m[0].name, "team-a") &&
           !strcmp(m[0].u.team.default_queue, "research"),
       "a Team with its default queue is read");
    ok(m[1].kind == SL_KIND_QUEUE && !strcmp(m[1].name, "research") &&
           !strcmp(m[1].u.queue.team, "team-a"),
       "a Queue with its team is read");
    ok(m[2].kind == SL_KIND_PRIORITY_CLASS && m[2].u.pclass.value == 1000 &&
           !m[2].u.pclass.preemptible && m[2].u.pclass.is_default,
       "a PriorityClass with every field is read");
    ok(m[3].u.pclass.value == -5 && m[3].u.pclass.preemptible &&
           !m[3].u.pclass.is_default,
       "a PriorityClass defaults to preemptible and not default");
    ok(m[4].kind == SL_KIND_USER && !strcmp(m[4].u.user.team, "team-a") &&
           !strcmp(m[4].u.user.role, "admin") &&
           !strcmp(m[4].u.user.unix_user, "alice_1"),
       "a User with role and unixUser is read");
    ok(!strcmp(m[5].u.user.role, "member") && !m[5].u.user.unix_user[0],
       "a User defaults to role member and no unix user");
    ok(m[6].kind == SL_KIND_TEAM && !m[6].u.team.default_queue[0],
       "a Team without spec is read");
    free(m);
    m = NULL;

    ok(mparse("[{\"apiVersion\": \"sluice/v1\", \"kind\": \"Team\", "
              "\"metadata\": {\"name\": \"t\"}}, {\"apiVersion\": "
              "\"sluice/v1\", \"kind\": \"Queue\", \"metadata\": {\"name\": "
              "\"q\"}, \"spec\": {\"team\": \"t\"}}]",
              &m, &n, &err) == 0 &&
           n == 2 && m[1].kind == SL_KIND_QUEUE,
       "a JSON array of manifests parses");
    free(m);
    m = NULL;
    ok(mparse("{\"apiVersion\": \"sluice/v1\", \"kind\": \"Team\", "
              "\"metadata\": {\"name\": \"t\"}}",
              &m, &n, &err) == 0 &&
           n == 1,
       "a single JSON manifest parses");
    free(m);

    mrefused("apiVersion: sluice/v1\nkind: Team\nmetadata: {name: t}\n---\n"
             "apiVersion: sluice/v1\nkind: Job\nspec: {command: [x]}\n",
             "[1].kind", "sluice submit", "a Job in a manifest file is refused");
    mrefused("apiVersion: sluice/v1\nkind: Job\nspec: {command: [x]}\n", "kind",
             "sluice submit", "a lone Job manifest is refused without index");
    mrefused("apiVersion: sluice/v1\nkind: Network\nmetadata: {name: c}\n",
             "kind",
             "one of Team, Queue, PriorityClass, User, Cohort, Scheduler, "
             "Pricing, Budget, Policy or Dataset, got \"Network\"",
             "an unknown kind is refused");
    mrefused("apiVersion: sluice/v1\nkind: Team\n", "metadata", "is required",
             "metadata is required");
    mrefused("apiVersion: sluice/v1\nkind: Team\nmetadata: {}\n",
             "metadata.name", "is required", "metadata.name is required");
    mrefused("apiVersion: sluice/v1\nkind: Team\nmetadata: {name: T}\n",
             "metadata.name", "got \"T\"", "a bad manifest name is refused");
    mrefused("apiVersion: sluice/v1\nkind: Team\nmetadata: {name: t, x: 1}\n",
             "metadata.x", "unknown field",
             "an unknown metadata field is refused");
    mrefused("apiVersion: sluice/v1\nkind: Team\nmetadata: {name: t}\n---\n"
             "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: q}\n"
             "spec: {}\n",
             "[1].spec.team", "is required",
             "a Queue without team is refused with the document index");
    mrefused("apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: q}\n",
             "spec", "is required", "a Queue without spec is refused");
    mrefused("apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: q}\n"
             "spec: {team: t, priority: 5}\n",
             "spec.priority", "unknown field",
             "an unknown Queue field is refused");
    mrefused("apiVersion: sluice/v1\nkind: Team\nmetadata: {name: t}\n"
             "spec: {defaultQueue: Q}\n",
             "spec.defaultQueue", "got \"Q\"",
             "a bad default queue is refused");
    mrefused("apiVersion: sluice/v1\nkind: PriorityClass\nmetadata: {name: p}\n"
             "spec: {preemptible: true}\n",
             "spec.value", "is required", "a PriorityClass needs a value");
    mrefused("apiVersion: sluice/v1\nkind: PriorityClass\nmetadata: {name: p}\n"
             "spec: {value: 1000001}\n",
             "spec.value", "from -1000000 to 1000000, got 1000001",
             "a priority value above the bound is refused");
    mrefused("apiVersion: sluice/v1\nkind: PriorityClass\nmetadata: {name: p}\n"
             "spec: {value: \"5\"}\n",
             "spec.value", "got \"5\"", "a quoted priority value is refused");
    mrefused("apiVersion: sluice/v1\nkind: PriorityClass\nmetadata: {name: p}\n"
             "spec: {value: 5, preemptible: yes}\n",
             "spec.preemptible", "true or false, got \"yes\"",
             "yes is not a boolean");
    mrefused("apiVersion: sluice/v1\nkind: User\nmetadata: {name: u}\n"
             "spec: {team: t, role: root}\n",
             "spec.role", "one of admin, member, viewer, team-admin or auditor, got \"root\"",
             "an unknown role is refused");
    mrefused("apiVersion: sluice/v1\nkind: User\nmetadata: {name: u}\n"
             "spec: {role: admin}\n",
             "spec.team", "is required", "a User needs a team");
    mrefused("apiVersion: sluice/v1\nkind: User\nmetadata: {name: u}\n"
             "spec: {team: t, unixUser: 9lives}\n",
             "spec.unixUser", "got \"9lives\"",
             "a unix user starting with a digit is refused");
    mrefused("apiVersion: sluice/v1\nkind: User\nmetadata: {name: u}\n"
             "spec: {team: t, unixUser: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}\n",
             "spec.unixUser", "[a-z_][a-z0-9_-]{0,31}",
             "a 33-character unix user is refused");
    mrefused("apiVersion: sluice/v1\nkind: Team\nmetadata: {name: t}\n---\n"
             "apiVersion: sluice/v1\nkind: Team\nmetadata: {name: t}\n",
             "[1].metadata.name", "declared twice",
             "the same object twice in a file is refused");
    mrefused("kind: Team\nmetadata: {name: t}\n", "apiVersion", "is required",
             "a manifest needs an apiVersion");
    mrefused("---\n---\n", "", "no manifests", "an empty file is refused");
    mrefused("[1, 2]", "[0]", "must be an object",
             "a JSON array of non-objects is refused");

    {
        struct sl_buf b = {0};
        for (int i = 0; i < 1001; i++)
            sl_buf_printf(&b, "---\n{apiVersion: sluice/v1, kind: Team, metadata: "
                    "{name: t%d}}\n",
                i);
        mrefused(b.data, "", "at most 1000 manifests",
                 "more than 1000 manifests are refused");
        b.len = 0;
        for (int i = 0; i < 1000; i++)
            sl_buf_printf(&b, "---\n{apiVersion: sluice/v1, kind: Team, metadata: "
                    "{name: t%d}}\n",
                i);
        m = NULL;
        ok(mparse(b.data, &m, &n, &err) == 0 && n == 1000,
           "1000 manifests are accepted");
        free(m);
        sl_buf_fini(&b);
    }
}

/* ---- manifests of the scheduler: resource lists, Queue, Cohort,
 * PriorityClass, Scheduler ---- */

/* A one-manifest document of 'kind' whose spec is the flow mapping
 * {<spec>}; a Queue gets "team: t, " and a PriorityClass "value: 1, " in
 * front, a Scheduler is named "default", the others "x". */
static const char *mdoc(const char *kind, const char *spec)
{
    static char text[8192];
    const char *pre = !strcmp(kind, "Queue")           ? "team: t, "
                      : !strcmp(kind, "PriorityClass") ? "value: 1, "
                                                       : "";

    snprintf(text, sizeof(text),
             "apiVersion: sluice/v1\nkind: %s\nmetadata: {name: %s}\n"
             "spec: {%s%s}\n",
             kind, strcmp(kind, "Scheduler") ? "x" : "default", pre, spec);
    return text;
}

/* Parse one manifest of 'kind' with spec {<spec>} into *m; true on success
 * (a diagnostic otherwise). */
static bool mone(const char *kind, const char *spec, struct sl_manifest *m)
{
    struct sl_manifest *ms = NULL;
    struct sl_error err;
    size_t n = 0;
    int rc = mparse(mdoc(kind, spec), &ms, &n, &err);

    if (rc != 0 || n != 1) {
        diag("%s {%s}: rc %d, %s: %s", kind, spec, rc, err.field, err.text);
        free(ms);
        return false;
    }
    *m = ms[0];
    free(ms);
    return true;
}

/* A manifest refused for a null 'field'. */
static bool mnull(const char *kind, const char *spec, const char *field)
{
    struct sl_manifest *ms = NULL;
    struct sl_error err = {"", ""};
    size_t n = 0;
    int rc = mparse(mdoc(kind, spec), &ms, &n, &err);

    free(ms);
    if (rc == -EINVAL && strcmp(err.field, field) == 0 && strstr(err.text, "null"))
        return true;
    diag("%s {%s}: rc %d, %s: %s", kind, spec, rc, err.field, err.text);
    return false;
}

struct mbad_case {
    const char *kind;  /* manifest kind, for mdoc() */
    const char *spec;  /* contents of the spec flow mapping */
    const char *field; /* the field path named */
    const char *text;  /* a fragment of the reason */
    const char *name;  /* test name */
};

static const struct mbad_case mbad[] = {
    /* kind, spec contents, field, text fragment, test name */

    /* resource lists, through spec.nominal */
    {"Queue", "nominal: {gpus: \"4\"}", "spec.nominal.gpus",
     "must be a number of GPUs from 0 to 1000000 with at most 3 decimals, "
     "got \"4\"",
     "a resource list refuses gpus as a string"},
    {"Queue", "nominal: {gpus: -1}", "spec.nominal.gpus", "got -1",
     "a resource list refuses negative gpus"},
    {"Queue", "nominal: {gpus: -0.5}", "spec.nominal.gpus", "got -0.5",
     "a resource list refuses negative fractional gpus"},
    {"Queue", "nominal: {gpus: 0.0005}", "spec.nominal.gpus", "got 0.0005",
     "a resource list refuses gpus with a fourth decimal"},
    {"Queue", "nominal: {gpus: 0.1234}", "spec.nominal.gpus", "got 0.1234",
     "a resource list refuses gpus with four decimals"},
    {"Queue", "nominal: {gpus: 1.0001}", "spec.nominal.gpus", "got 1.0001",
     "a resource list refuses 1.0001 gpus"},
    {"Queue", "nominal: {gpus: 999999.9995}", "spec.nominal.gpus",
     "got 999999.9995",
     "a fourth decimal is refused on a large amount too"},
    {"Queue", "nominal: {gpus: 1.5e-3}", "spec.nominal.gpus", "got 0.0015",
     "a resource list refuses 1.5e-3 gpus (four decimals)"},
    {"Queue", "nominal: {gpus: 1e-9}", "spec.nominal.gpus", "with at most 3",
     "a resource list refuses a tiny exponent number of gpus"},
    {"Queue", "nominal: {gpus: true}", "spec.nominal.gpus", "got true",
     "a resource list refuses gpus as a boolean"},
    {"Queue", "nominal: {gpus: [1]}", "spec.nominal.gpus", "got an array",
     "a resource list refuses gpus as an array"},
    {"Queue", "nominal: {gpus: 1000001}", "spec.nominal.gpus", "got 1000001",
     "a resource list refuses more than 1000000 gpus"},
    {"Queue", "nominal: {gpus: 1000000.001}", "spec.nominal.gpus",
     "got 1000000.001", "a resource list refuses 1000000.001 gpus"},
    {"Queue", "nominal: {gpus: 1e300}", "spec.nominal.gpus", "got 1e+300",
     "a resource list refuses a huge number of gpus"},
    {"Queue", "nominal: {gpusByModel: A100}", "spec.nominal.gpusByModel",
     "must be an object of GPU model: amount, got \"A100\"",
     "gpusByModel must be an object"},
    {"Queue", "nominal: {gpusByModel: {\"H 100\": 1}}",
     "spec.nominal.gpusByModel.H 100", "1 to 47 characters",
     "gpusByModel refuses a model name with a space"},
    {"Queue", "nominal: {gpusByModel: {\"\": 1}}", "spec.nominal.gpusByModel.",
     "1 to 47 characters", "gpusByModel refuses an empty model name"},
    {"Queue",
     "nominal: {gpusByModel: "
     "{aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: 1}}",
     "spec.nominal.gpusByModel.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...",
     "1 to 47 characters", "gpusByModel refuses a 48-character model name"},
    {"Queue", "nominal: {gpusByModel: {\"A\\u00e9\": 1}}",
     "spec.nominal.gpusByModel.A\xc3\xa9", "1 to 47 characters",
     "gpusByModel refuses a non-ASCII model name"},
    {"Queue", "nominal: {gpusByModel: {A100: 8, H100: 1, a100: 2}}",
     "spec.nominal.gpusByModel.a100",
     "names the GPU model \"A100\" again (model names are case-insensitive)",
     "gpusByModel refuses models that differ only in case, at the second"},
    {"Queue", "nominal: {gpusByModel: {A100: \"8\"}}",
     "spec.nominal.gpusByModel.A100", "number of GPUs",
     "gpusByModel refuses a string amount"},
    {"Queue", "nominal: {gpusByModel: {A100: -8}}",
     "spec.nominal.gpusByModel.A100", "got -8",
     "gpusByModel refuses a negative amount"},
    {"Queue", "nominal: {gpusByModel: {A100: 0.0005}}",
     "spec.nominal.gpusByModel.A100", "got 0.0005",
     "gpusByModel refuses a fourth decimal"},
    {"Queue", "nominal: {gpusByModel: {A100: 1000001}}",
     "spec.nominal.gpusByModel.A100", "got 1000001",
     "gpusByModel refuses more than 1000000 GPUs"},
    {"Queue", "nominal: {gpusByModel: {A100: false}}",
     "spec.nominal.gpusByModel.A100", "got false",
     "gpusByModel refuses a boolean amount"},
    {"Queue", "nominal: {cpus: four}", "spec.nominal.cpus",
     "a CPU amount of 0 or more such as 4, 0.5 or \"250m\", got \"four\"",
     "a resource list refuses cpus as a word"},
    {"Queue", "nominal: {cpus: -1}", "spec.nominal.cpus", "got -1",
     "a resource list refuses negative cpus"},
    {"Queue", "nominal: {cpus: 0.0001}", "spec.nominal.cpus",
     "multiple of 0.001", "a resource list refuses cpus finer than milli"},
    {"Queue", "nominal: {cpus: \"1.5m\"}", "spec.nominal.cpus", "got \"1.5m\"",
     "a resource list refuses a fractional milli-CPU"},
    {"Queue", "nominal: {cpus: 1000001}", "spec.nominal.cpus", "got 1000001",
     "a resource list refuses more than 1000000 cpus"},
    {"Queue", "nominal: {cpus: true}", "spec.nominal.cpus", "got true",
     "a resource list refuses cpus as a boolean"},
    {"Queue", "nominal: {memory: -1}", "spec.nominal.memory",
     "a memory size from 0 to 1Pi such as \"16Gi\" or a number of bytes, "
     "got -1",
     "a resource list refuses negative memory"},
    {"Queue", "nominal: {memory: 12Qi}", "spec.nominal.memory", "got \"12Qi\"",
     "a resource list refuses memory with an unknown unit"},
    {"Queue", "nominal: {memory: 1.5}", "spec.nominal.memory", "got 1.5",
     "a resource list refuses memory as a decimal number"},
    {"Queue", "nominal: {memory: 1025Ti}", "spec.nominal.memory",
     "got \"1025Ti\"", "a resource list refuses memory above 1Pi"},
    {"Queue", "nominal: {memory: true}", "spec.nominal.memory", "got true",
     "a resource list refuses memory as a boolean"},
    {"Queue", "nominal: {gpu: 1}", "spec.nominal.gpu", "unknown field",
     "an unknown field in a resource list is named"},
    {"Queue", "nominal: {gpuMilli: 500}", "spec.nominal.gpuMilli",
     "unknown field", "a job's gpuMilli is no resource list field"},
    {"Queue", "nominal: 4", "spec.nominal", "must be an object, got 4",
     "a resource list must be an object"},
    {"Queue", "userLimit: {gpus: 0.0001}", "spec.userLimit.gpus",
     "got 0.0001", "userLimit is checked as a resource list"},
    {"Queue", "userLimit: {cpus: x}", "spec.userLimit.cpus", "got \"x\"",
     "userLimit cpus are named by their path"},
    {"Queue", "cohort: c, nominal: {gpus: 4}, borrowingLimit: {memory: x}",
     "spec.borrowingLimit.memory", "got \"x\"",
     "borrowingLimit is checked as a resource list"},
    {"Queue", "cohort: c, nominal: {gpus: 4}, lendingLimit: {gpus: x}",
     "spec.lendingLimit.gpus", "got \"x\"",
     "lendingLimit is checked as a resource list"},

    /* Queue */
    {"Queue", "cohort: Gpu-Pool", "spec.cohort", "got \"Gpu-Pool\"",
     "a cohort name with capitals is refused"},
    {"Queue", "cohort: 5", "spec.cohort", "must be a string, got 5",
     "a numeric cohort is refused"},
    {"Queue", "weight: 0", "spec.weight",
     "must be a weight from 0.001 to 1000 with at most 3 decimals, got 0",
     "a weight of 0 is refused"},
    {"Queue", "weight: 0.0005", "spec.weight", "got 0.0005",
     "a weight below 0.001 is refused"},
    {"Queue", "weight: 1.0005", "spec.weight", "got 1.0005",
     "a weight with four decimals is refused"},
    {"Queue", "weight: 1000.001", "spec.weight", "got 1000.001",
     "a weight above 1000 is refused"},
    {"Queue", "weight: 1001", "spec.weight", "got 1001",
     "an integer weight above 1000 is refused"},
    {"Queue", "weight: -1", "spec.weight", "got -1",
     "a negative weight is refused"},
    {"Queue", "weight: \"2\"", "spec.weight", "got \"2\"",
     "a quoted weight is refused"},
    {"Queue", "weight: true", "spec.weight", "got true",
     "a boolean weight is refused"},
    {"Queue", "nominal: {gpus: 4}, borrowingLimit: {gpus: 2}",
     "spec.borrowingLimit",
     "needs spec.cohort (borrowing happens inside a cohort)",
     "borrowingLimit without a cohort is refused"},
    {"Queue", "borrowingLimit: {}", "spec.borrowingLimit", "needs spec.cohort",
     "even an empty borrowingLimit needs a cohort"},
    {"Queue", "nominal: {gpus: 4}, lendingLimit: {gpus: 2}",
     "spec.lendingLimit", "needs spec.cohort (lending happens inside a cohort)",
     "lendingLimit without a cohort is refused"},
    {"Queue", "cohort: c, borrowingLimit: {gpus: 2}",
     "spec.borrowingLimit.gpus", "needs spec.nominal.gpus",
     "borrowingLimit gpus without nominal is refused"},
    {"Queue", "cohort: c, nominal: {gpus: 1}, borrowingLimit: {cpus: 2}",
     "spec.borrowingLimit.cpus", "needs spec.nominal.cpus",
     "borrowingLimit cpus without nominal cpus is refused"},
    {"Queue", "cohort: c, nominal: {gpus: 1}, borrowingLimit: {memory: 1Gi}",
     "spec.borrowingLimit.memory", "needs spec.nominal.memory",
     "borrowingLimit memory without nominal memory is refused"},
    {"Queue",
     "cohort: c, nominal: {gpus: 8, gpusByModel: {A100: 8}}, "
     "borrowingLimit: {gpusByModel: {A100: 1, H100: 2}}",
     "spec.borrowingLimit.gpusByModel.H100",
     "needs spec.nominal.gpusByModel.H100",
     "a borrowingLimit model missing from nominal is refused"},
    {"Queue", "cohort: c, lendingLimit: {gpus: 0}", "spec.lendingLimit.gpus",
     "needs spec.nominal.gpus", "lendingLimit gpus without nominal is refused"},
    {"Queue", "cohort: c, nominal: {gpus: 16}, lendingLimit: {gpus: 16.5}",
     "spec.lendingLimit.gpus",
     "must be at most spec.nominal.gpus (16), got 16.5",
     "lending more GPUs than nominal is refused"},
    {"Queue", "cohort: c, nominal: {gpus: 0.5}, lendingLimit: {gpus: 0.501}",
     "spec.lendingLimit.gpus",
     "must be at most spec.nominal.gpus (0.5), got 0.501",
     "lending one milli-GPU more than nominal is refused"},
    {"Queue", "cohort: c, nominal: {cpus: 2}, lendingLimit: {cpus: \"2001m\"}",
     "spec.lendingLimit.cpus", "at most spec.nominal.cpus (2), got 2.001",
     "lending more CPUs than nominal is refused"},
    {"Queue", "cohort: c, nominal: {memory: 1Gi}, lendingLimit: {memory: 1025Mi}",
     "spec.lendingLimit.memory",
     "at most spec.nominal.memory (1073741824), got 1074790400",
     "lending more memory than nominal is refused"},
    {"Queue",
     "cohort: c, nominal: {gpusByModel: {A100: 8}}, "
     "lendingLimit: {gpusByModel: {a100: 9}}",
     "spec.lendingLimit.gpusByModel.a100",
     "at most spec.nominal.gpusByModel.a100 (8), got 9",
     "lending more of a model than nominal is refused, matching its case"},
    {"Queue", "preemption: {withinQueue: lowerPriority}",
     "spec.preemption.withinQueue",
     "one of LowerPriority or Never, got \"lowerPriority\"",
     "withinQueue is case-sensitive and lists its values"},
    {"Queue", "preemption: {withinQueue: 1}", "spec.preemption.withinQueue",
     "got 1", "a numeric withinQueue is refused"},
    {"Queue", "preemption: {reclaimWithinCohort: Always}",
     "spec.preemption.reclaimWithinCohort",
     "one of Any, LowerPriority or Never, got \"Always\"",
     "an unknown reclaimWithinCohort is refused with the values"},
    {"Queue", "preemption: {reclaim: Any}", "spec.preemption.reclaim",
     "unknown field", "an unknown preemption field is refused"},
    {"Queue", "preemption: Never", "spec.preemption",
     "must be an object, got \"Never\"", "preemption must be an object"},
    {"Queue", "quota: {gpus: 1}", "spec.quota", "unknown field",
     "an unknown Queue field is still refused"},

    /* Cohort */
    {"Cohort", "description: 5", "spec.description", "must be a string, got 5",
     "a numeric description is refused"},
    {"Cohort", "description: \"a\\tb\"", "spec.description",
     "must not contain control characters", "a tab in a description is refused"},
    {"Cohort", "description: \"line\\nline\"", "spec.description",
     "found one at byte 4", "a newline in a description is refused"},
    {"Cohort", "description: \"a\\x7f\"", "spec.description",
     "control characters", "DEL in a description is refused"},
    {"Cohort", "description: \"a\\u0085\"", "spec.description",
     "control characters", "a C1 control in a description is refused"},
    {"Cohort", "members: [q]", "spec.members", "unknown field",
     "an unknown Cohort field is refused"},

    /* PriorityClass */
    {"PriorityClass", "opportunistic: yes", "spec.opportunistic",
     "true or false, got \"yes\"", "opportunistic must be a boolean"},
    {"PriorityClass", "preemptible: false, opportunistic: true",
     "spec.opportunistic", "cannot be true with preemptible: false",
     "an opportunistic class that is not preemptible is refused"},
    {"PriorityClass", "opportunistic: true, preemptible: false",
     "spec.opportunistic", "opportunistic jobs are the first to be preempted",
     "the refusal names opportunistic whatever the order"},
    {"PriorityClass", "minRuntime: 31d", "spec.minRuntime",
     "a duration from 0s to 30d, such as 90s, 1h30m or 2h, got \"31d\"",
     "a minRuntime above 30 days is refused"},
    {"PriorityClass", "minRuntime: 30d1s", "spec.minRuntime", "got \"30d1s\"",
     "a minRuntime one second above 30 days is refused"},
    {"PriorityClass", "minRuntime: 2592001", "spec.minRuntime",
     "got 2592001", "a minRuntime above 30 days in seconds is refused"},
    {"PriorityClass", "minRuntime: -1", "spec.minRuntime", "got -1",
     "a negative minRuntime is refused"},
    {"PriorityClass", "minRuntime: soon", "spec.minRuntime", "got \"soon\"",
     "a minRuntime that is no duration is refused"},
    {"PriorityClass", "minRuntime: 1.5", "spec.minRuntime", "got 1.5",
     "a decimal minRuntime is refused"},
    {"PriorityClass", "minRuntime: true", "spec.minRuntime", "got true",
     "a boolean minRuntime is refused"},

    /* Scheduler */
    {"Scheduler", "placement: FGD", "spec.placement",
     "one of fgd, bestfit, packing, clustering, dotprod, random or spread, "
     "got \"FGD\"",
     "placement is case-sensitive and lists every policy"},
    {"Scheduler", "placement: firstfit", "spec.placement", "got \"firstfit\"",
     "an unknown placement is refused"},
    {"Scheduler", "placement: 1", "spec.placement", "got 1",
     "a numeric placement is refused"},
    {"Scheduler", "backfill: yes", "spec.backfill", "true or false, got \"yes\"",
     "backfill must be a boolean"},
    {"Scheduler", "reservations: 0", "spec.reservations",
     "an integer from 1 to 64, got 0", "zero reservations are refused"},
    {"Scheduler", "reservations: 65", "spec.reservations", "got 65",
     "more than 64 reservations are refused"},
    {"Scheduler", "reservations: 1.5", "spec.reservations", "got 1.5",
     "fractional reservations are refused"},
    {"Scheduler", "reservations: \"2\"", "spec.reservations", "got \"2\"",
     "quoted reservations are refused"},
    {"Scheduler", "fairShare: {halfLife: 3651d}", "spec.fairShare.halfLife",
     "a duration from 0s to 3650d", "a halfLife above 3650 days is refused"},
    {"Scheduler", "fairShare: {halfLife: -1}", "spec.fairShare.halfLife",
     "got -1", "a negative halfLife is refused"},
    {"Scheduler", "fairShare: {halfLife: week}", "spec.fairShare.halfLife",
     "got \"week\"", "a halfLife that is no duration is refused"},
    {"Scheduler", "fairShare: {window: 7d}", "spec.fairShare.window",
     "unknown field", "an unknown fairShare field is refused"},
    {"Scheduler", "fairShare: 7d", "spec.fairShare", "must be an object",
     "fairShare must be an object"},
    {"Scheduler", "preemption: {enabled: 1}", "spec.preemption.enabled",
     "true or false, got 1", "preemption.enabled must be a boolean"},
    {"Scheduler", "preemption: {minRuntime: 31d}", "spec.preemption.minRuntime",
     "a duration from 0s to 30d", "a default minRuntime above 30 days is refused"},
    {"Scheduler", "preemption: {minRuntime: -5}", "spec.preemption.minRuntime",
     "got -5", "a negative default minRuntime is refused"},
    {"Scheduler", "preemption: {withinQueue: Never}",
     "spec.preemption.withinQueue", "unknown field",
     "a Queue preemption field is no Scheduler field"},
    {"Scheduler", "preemption: true", "spec.preemption", "must be an object",
     "Scheduler preemption must be an object"},
    {"Scheduler", "modelWeights: [H100]", "spec.modelWeights",
     "must be an object of GPU model: amount, got an array",
     "modelWeights must be an object"},
    {"Scheduler", "modelWeights: {H100: 0}", "spec.modelWeights.H100",
     "must be a weight from 0.001 to 1000 with at most 3 decimals, got 0",
     "a model weight of 0 is refused"},
    {"Scheduler", "modelWeights: {H100: 1000.001}", "spec.modelWeights.H100",
     "got 1000.001", "a model weight above 1000 is refused"},
    {"Scheduler", "modelWeights: {H100: 0.0005}", "spec.modelWeights.H100",
     "got 0.0005", "a model weight below 0.001 is refused"},
    {"Scheduler", "modelWeights: {H100: 2.0001}", "spec.modelWeights.H100",
     "got 2.0001", "a model weight with four decimals is refused"},
    {"Scheduler", "modelWeights: {H100: \"3\"}", "spec.modelWeights.H100",
     "got \"3\"", "a quoted model weight is refused"},
    {"Scheduler", "modelWeights: {H100: 3, h100: 2}", "spec.modelWeights.h100",
     "names the GPU model \"H100\" again",
     "model weights that differ only in case are refused at the second"},
    {"Scheduler", "modelWeights: {\"T4 \": 1}", "spec.modelWeights.T4 ",
     "1 to 47 characters", "a model weight with a bad model name is refused"},
    {"Scheduler", "policy: fgd", "spec.policy", "unknown field",
     "an unknown Scheduler field is refused"},
};

static void mbad_cases(void)
{
    for (size_t i = 0; i < sizeof(mbad) / sizeof(mbad[0]); i++)
        mrefused(mdoc(mbad[i].kind, mbad[i].spec), mbad[i].field, mbad[i].text,
                 mbad[i].name);
}

static void res_lists(void)
{
    struct sl_manifest m;
    struct sl_res_list l;
    struct sl_res_list *r = &m.u.queue.nominal;
    bool all = true;

    memset(&l, 0x55, sizeof(l));
    sl_res_list_init(&l);
    ok(l.gpu_milli == -1 && l.cpu_milli == -1 && l.mem_bytes == -1 &&
           l.nmodels == 0,
       "sl_res_list_init marks every amount not given");

    if (ok(mone("Queue",
                "nominal: {gpus: 16, gpusByModel: {A100: 8, H100: 0.5}, "
                "cpus: 128, memory: 1Ti}",
                &m),
           "the resource list of the brief parses")) {
        is_int(r->gpu_milli, 16000, "gpus: 16 is 16000 milli-GPUs");
        is_int(r->nmodels, 2, "gpusByModel has two models");
        is_str(r->model[0], "A100", "the first model is kept as written");
        is_int(r->model_milli[0], 8000, "A100: 8 is 8000 milli-GPUs");
        is_str(r->model[1], "H100", "the models keep the document's order");
        is_int(r->model_milli[1], 500, "H100: 0.5 is 500 milli-GPUs");
        is_int(r->cpu_milli, 128000, "cpus: 128 is 128000 milli-CPUs");
        is_int(r->mem_bytes, 1LL << 40, "memory: 1Ti is 2^40 bytes");
    }
    if (mone("Queue", "nominal: {}", &m))
        ok(r->gpu_milli == -1 && r->cpu_milli == -1 && r->mem_bytes == -1 &&
               r->nmodels == 0,
           "an empty resource list gives nothing");
    ok(mnull("Queue", "nominal: ~", "spec.nominal") &&
           mnull("Queue", "userLimit: {gpus: ~}", "spec.userLimit.gpus") &&
           mnull("Queue", "userLimit: {cpus: 2, memory: ~}", "spec.userLimit.memory") &&
           mnull("Queue", "nominal: {gpusByModel: ~}", "spec.nominal.gpusByModel"),
       "null lists and null amounts are refused, each named");
    ok(mone("Queue", "nominal: {gpus: 0, gpusByModel: {A100: 0}, cpus: 0, "
                     "memory: 0}",
            &m) &&
           r->gpu_milli == 0 && r->model_milli[0] == 0 && r->cpu_milli == 0 &&
           r->mem_bytes == 0,
       "zero is a valid amount of every resource in a list");
    ok(mone("Queue", "nominal: {cpus: \"0\", memory: \"0Gi\"}", &m) &&
           r->cpu_milli == 0 && r->mem_bytes == 0,
       "zero is valid written as a string too");
    ok(mone("Queue", "nominal: {gpus: 0.001}", &m) && r->gpu_milli == 1,
       "gpus: 0.001 is 1 milli-GPU");
    ok(mone("Queue", "nominal: {gpus: 0.1}", &m) && r->gpu_milli == 100,
       "gpus: 0.1 is exactly 100 milli-GPUs");
    ok(mone("Queue", "nominal: {gpus: 0.3}", &m) && r->gpu_milli == 300,
       "gpus: 0.3 is exactly 300 milli-GPUs");
    ok(mone("Queue", "nominal: {gpus: 2.0}", &m) && r->gpu_milli == 2000,
       "gpus: 2.0 is 2000 milli-GPUs");
    ok(mone("Queue", "nominal: {gpus: 1e3}", &m) && r->gpu_milli == 1000000,
       "gpus: 1e3 is 1000 GPUs");
    ok(mone("Queue", "nominal: {gpus: 2.5e-1}", &m) && r->gpu_milli == 250,
       "gpus: 2.5e-1 is 250 milli-GPUs");
    ok(mone("Queue", "nominal: {gpus: 0.0}", &m) && r->gpu_milli == 0,
       "gpus: 0.0 is zero");
    {
        struct sl_manifest *ms = NULL;
        struct sl_error err = {"", ""};
        size_t n = 0;
        ok(mparse(mdoc("Queue", "nominal: {gpus: -0.0}"), &ms, &n, &err) == -EINVAL &&
               strstr(err.text, "-0 is not a number"),
           "gpus: -0.0 is refused: one meaning or none (%s)", err.text);
        free(ms);
    }
    ok(mone("Queue", "nominal: {gpus: 1000000}", &m) &&
           r->gpu_milli == 1000000000,
       "gpus: 1000000 is the largest whole amount");
    ok(mone("Queue", "nominal: {gpus: 999999.999}", &m) &&
           r->gpu_milli == 999999999,
       "gpus: 999999.999 keeps its last milli");
    ok(mone("Queue", "nominal: {gpusByModel: {A100: 1000000, T4: 0.25}}", &m) &&
           r->model_milli[0] == 1000000000 && r->model_milli[1] == 250,
       "gpusByModel amounts follow the gpus rule");
    ok(mone("Queue", "nominal: {gpusByModel: {A100.80GB_sxm-4: 1}}", &m) &&
           !strcmp(r->model[0], "A100.80GB_sxm-4"),
       "a model name may hold '.', '_' and '-'");
    ok(mone("Queue",
            "nominal: {gpusByModel: "
            "{aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: 1}}",
            &m) &&
           strlen(r->model[0]) == 47,
       "a 47-character model name is accepted");
    {
        char spec[1024];
        int len = snprintf(spec, sizeof(spec), "nominal: {gpusByModel: {");
        for (int i = 0; i < 16; i++)
            len += snprintf(spec + len, sizeof(spec) - (size_t)len, "%sM%d: %d",
                            i ? ", " : "", i, i);
        snprintf(spec + len, sizeof(spec) - (size_t)len, "}}");
        ok(mone("Queue", spec, &m) && r->nmodels == 16 &&
               r->model_milli[15] == 15000 && !strcmp(r->model[15], "M15"),
           "16 models in a list are accepted");
        snprintf(spec + len, sizeof(spec) - (size_t)len, ", M16: 1}}");
        mrefused(mdoc("Queue", spec), "spec.nominal.gpusByModel",
                 "must have at most 16 models, got 17",
                 "17 models in a list are refused");
    }
    ok(mone("Queue", "nominal: {cpus: \"250m\"}", &m) && r->cpu_milli == 250,
       "cpus: \"250m\" in a list is 250 milli-CPUs");
    ok(mone("Queue", "nominal: {cpus: 0.5}", &m) && r->cpu_milli == 500,
       "cpus: 0.5 in a list is 500 milli-CPUs");
    ok(mone("Queue", "nominal: {cpus: \"2\"}", &m) && r->cpu_milli == 2000,
       "cpus: \"2\" in a list is 2000 milli-CPUs");
    ok(mone("Queue", "nominal: {cpus: 1000000}", &m) &&
           r->cpu_milli == 1000000000,
       "cpus: 1000000 is the largest amount");
    ok(mone("Queue", "nominal: {memory: 16Gi}", &m) && r->mem_bytes == 16LL << 30,
       "memory: 16Gi in a list is read");
    ok(mone("Queue", "nominal: {memory: 1024}", &m) && r->mem_bytes == 1024,
       "integer memory in a list is bytes");
    ok(mone("Queue", "nominal: {memory: 1024Ti}", &m) &&
           r->mem_bytes == 1LL << 50,
       "memory: 1024Ti (1Pi) is the largest amount");

    /* Every multiple of 0.001 up to 5, and a few large ones, is exact: the
     * conversion never drifts by a milli. */
    for (int k = 0; k <= 5000 && all; k++) {
        char spec[96];
        snprintf(spec, sizeof(spec), "nominal: {gpus: %d.%03d}", k / 1000,
                 k % 1000);
        all = mone("Queue", spec, &m) && r->gpu_milli == k;
        if (!all)
            diag("gpus %s gave %lld", spec, (long long)r->gpu_milli);
    }
    for (long long k = 999000000; k <= 1000000000 && all; k += 997) {
        char spec[96];
        snprintf(spec, sizeof(spec), "nominal: {gpus: %lld.%03lld}", k / 1000,
                 k % 1000);
        all = mone("Queue", spec, &m) && r->gpu_milli == k;
        if (!all)
            diag("gpus %s gave %lld", spec, (long long)r->gpu_milli);
    }
    ok(all, "every amount 0.000..5.000 and ~1000 near 1000000 reads exactly");

    ok(mone("Queue", "userLimit: {gpus: 4}", &m) &&
           m.u.queue.user_limit.gpu_milli == 4000 &&
           m.u.queue.nominal.gpu_milli == -1,
       "userLimit is read as a list of its own");
    {
        struct sl_manifest *ms = NULL;
        struct sl_error err;
        size_t n = 0;
        ok(mparse("{\"apiVersion\": \"sluice/v1\", \"kind\": \"Queue\", "
                  "\"metadata\": {\"name\": \"q\"}, \"spec\": {\"team\": "
                  "\"t\", \"nominal\": {\"gpus\": 0.1, \"gpusByModel\": "
                  "{\"A100\": 2.5}, \"cpus\": \"250m\", \"memory\": 1024}}}",
                  &ms, &n, &err) == 0 &&
               ms[0].u.queue.nominal.gpu_milli == 100 &&
               ms[0].u.queue.nominal.model_milli[0] == 2500 &&
               ms[0].u.queue.nominal.cpu_milli == 250,
           "a resource list in JSON reads the same way");
        free(ms);
    }
    mrefused("apiVersion: sluice/v1\nkind: Team\nmetadata: {name: t}\n---\n"
             "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: q}\n"
             "spec: {team: t, nominal: {gpus: 0.0001}}\n",
             "[1].spec.nominal.gpus", "got 0.0001",
             "a list error carries the document index");
}

static void queues(void)
{
    static const char *full =
        "apiVersion: sluice/v1\n"
        "kind: Queue\n"
        "metadata: {name: research}\n"
        "spec:\n"
        "  team: vision\n"
        "  cohort: gpu-pool\n"
        "  weight: 2\n"
        "  nominal: {gpus: 16, gpusByModel: {A100: 8}, cpus: 128, "
        "memory: 1Ti}\n"
        "  borrowingLimit: {gpus: 8}\n"
        "  lendingLimit: {gpus: 4}\n"
        "  userLimit: {gpus: 4}\n"
        "  preemption:\n"
        "    withinQueue: Never\n"
        "    reclaimWithinCohort: LowerPriority\n";
    struct sl_manifest *ms = NULL, m;
    struct sl_error err;
    size_t n = 0;

    if (ok(mparse(full, &ms, &n, &err) == 0 && n == 1,
           "the Queue of the brief parses")) {
        const struct sl_manifest *q = &ms[0];
        is_str(q->u.queue.team, "vision", "Queue spec.team is read");
        is_str(q->u.queue.cohort, "gpu-pool", "Queue spec.cohort is read");
        is_int(q->u.queue.weight_milli, 2000, "weight: 2 is 2000 milli");
        is_int(q->u.queue.nominal.gpu_milli, 16000, "nominal gpus are read");
        is_int(q->u.queue.nominal.model_milli[0], 8000,
               "nominal gpusByModel is read");
        is_int(q->u.queue.borrowing_limit.gpu_milli, 8000,
               "borrowingLimit is read");
        is_int(q->u.queue.borrowing_limit.cpu_milli, -1,
               "borrowingLimit cpus stay not given");
        is_int(q->u.queue.lending_limit.gpu_milli, 4000, "lendingLimit is read");
        is_int(q->u.queue.user_limit.gpu_milli, 4000, "userLimit is read");
        is_int(q->u.queue.preempt_within, SL_PREEMPT_NEVER,
               "withinQueue: Never is read");
        is_int(q->u.queue.reclaim, SL_RECLAIM_LOWER_PRIORITY,
               "reclaimWithinCohort: LowerPriority is read");
    } else {
        diag("%s: %s", err.field, err.text);
    }
    free(ms);

    if (ok(mone("Queue", "", &m), "a Queue with only a team parses")) {
        is_str(m.u.queue.cohort, "", "a Queue defaults to no cohort");
        is_int(m.u.queue.weight_milli, 1000, "a Queue defaults to weight 1");
        ok(m.u.queue.nominal.gpu_milli == -1 &&
               m.u.queue.borrowing_limit.gpu_milli == -1 &&
               m.u.queue.lending_limit.mem_bytes == -1 &&
               m.u.queue.user_limit.cpu_milli == -1,
           "a Queue defaults to no quota and no limits");
        is_int(m.u.queue.preempt_within, SL_PREEMPT_LOWER_PRIORITY,
               "withinQueue defaults to LowerPriority");
        is_int(m.u.queue.reclaim, SL_RECLAIM_ANY,
               "reclaimWithinCohort defaults to Any");
    }
    ok(mnull("Queue", "cohort: ~", "spec.cohort") &&
           mnull("Queue", "weight: ~", "spec.weight") &&
           mnull("Queue", "preemption: ~", "spec.preemption"),
       "null Queue fields are refused, each named");
    ok(mone("Queue", "preemption: {}", &m) &&
           m.u.queue.preempt_within == SL_PREEMPT_LOWER_PRIORITY,
       "an empty preemption object keeps the defaults");
    ok(mone("Queue", "preemption: {withinQueue: LowerPriority, "
                     "reclaimWithinCohort: Never}",
            &m) &&
           m.u.queue.preempt_within == SL_PREEMPT_LOWER_PRIORITY &&
           m.u.queue.reclaim == SL_RECLAIM_NEVER,
       "withinQueue: LowerPriority and reclaimWithinCohort: Never are read");
    ok(mone("Queue", "preemption: {reclaimWithinCohort: Any}", &m) &&
           m.u.queue.reclaim == SL_RECLAIM_ANY,
       "reclaimWithinCohort: Any is read");
    ok(mone("Queue", "weight: 0.001", &m) && m.u.queue.weight_milli == 1,
       "the smallest weight, 0.001, is accepted");
    ok(mone("Queue", "weight: 1000", &m) && m.u.queue.weight_milli == 1000000,
       "the largest weight, 1000, is accepted");
    ok(mone("Queue", "weight: 1000.000", &m) &&
           m.u.queue.weight_milli == 1000000,
       "1000.000 is the largest weight too");
    ok(mone("Queue", "weight: 0.5", &m) && m.u.queue.weight_milli == 500,
       "weight: 0.5 is 500 milli");
    ok(mone("Queue", "cohort: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            &m) &&
           strlen(m.u.queue.cohort) == 63,
       "a 63-character cohort name is accepted");
    ok(mone("Queue", "cohort: c, borrowingLimit: {}, lendingLimit: {}", &m),
       "empty limits with a cohort are accepted");
    ok(mone("Queue",
            "cohort: c, nominal: {gpus: 4, gpusByModel: {A100: 4}, cpus: 8, "
            "memory: 1Gi}, borrowingLimit: {gpus: 100, gpusByModel: "
            "{a100: 100}, cpus: 100, memory: 1Ti}",
            &m) &&
           m.u.queue.borrowing_limit.gpu_milli == 100000 &&
           !strcmp(m.u.queue.borrowing_limit.model[0], "a100"),
       "a borrowingLimit may exceed nominal and matches models ignoring case");
    ok(mone("Queue",
            "cohort: c, nominal: {gpus: 4.5, gpusByModel: {A100: 4}, "
            "cpus: \"1500m\", memory: 1Gi}, lendingLimit: {gpus: 4.5, "
            "gpusByModel: {A100: 4}, cpus: 1.5, memory: 1073741824}",
            &m) &&
           m.u.queue.lending_limit.gpu_milli == 4500 &&
           m.u.queue.lending_limit.cpu_milli == 1500,
       "a lendingLimit equal to nominal is accepted");
    ok(mone("Queue", "cohort: c, nominal: {gpus: 4}, lendingLimit: {gpus: 0}",
            &m) &&
           m.u.queue.lending_limit.gpu_milli == 0,
       "a lendingLimit of 0 (lend nothing) is accepted");
    ok(mone("Queue", "userLimit: {gpus: 1000, cpus: 5}", &m) &&
           m.u.queue.user_limit.gpu_milli == 1000000,
       "a userLimit needs no nominal and no cohort");
}

static void cohorts(void)
{
    struct sl_manifest *ms = NULL, m;
    struct sl_error err;
    size_t n = 0;
    char spec[512];

    ok(mparse("apiVersion: sluice/v1\nkind: Cohort\nmetadata: {name: gpu-pool}\n",
              &ms, &n, &err) == 0 &&
           n == 1 && ms[0].kind == SL_KIND_COHORT &&
           !strcmp(ms[0].name, "gpu-pool") && !ms[0].u.cohort.description[0],
       "a Cohort without spec parses, without description");
    free(ms);
    ms = NULL;
    ok(mparse("apiVersion: sluice/v1\nkind: Cohort\nmetadata: {name: c}\n"
              "spec: ~\n",
              &ms, &n, &err) == -EINVAL && strcmp(err.field, "spec") == 0,
       "a Cohort with a null spec is refused: leave spec out");
    free(ms);
    ms = NULL;
    ok(mone("Cohort", "description: \"shared pool of the research teams\"", &m) &&
           m.kind == SL_KIND_COHORT &&
           !strcmp(m.u.cohort.description, "shared pool of the research teams"),
       "a Cohort description is read");
    ok(mone("Cohort", "", &m) && !m.u.cohort.description[0],
       "a Cohort with an empty spec parses");
    ok(mnull("Cohort", "description: ~", "spec.description"),
       "a null description is refused");
    ok(mone("Cohort", "description: \"caf\\u00e9 \\u2013 GPUs\"", &m) &&
           !strcmp(m.u.cohort.description, "caf\xc3\xa9 \xe2\x80\x93 GPUs"),
       "a description may hold non-ASCII text");
    snprintf(spec, sizeof(spec), "description: \"%0256d\"", 0);
    ok(mone("Cohort", spec, &m) && strlen(m.u.cohort.description) == 256,
       "a 256-byte description is accepted");
    snprintf(spec, sizeof(spec), "description: \"%0257d\"", 0);
    mrefused(mdoc("Cohort", spec), "spec.description",
             "must be at most 256 bytes, got 257",
             "a 257-byte description is refused");
    mrefused("apiVersion: sluice/v1\nkind: Cohort\nmetadata: {name: Pool}\n",
             "metadata.name", "got \"Pool\"",
             "a Cohort name follows the name rule");
    mrefused("apiVersion: sluice/v1\nkind: Cohort\nmetadata: {name: c}\n"
             "spec: [a]\n",
             "spec", "must be an object", "a Cohort spec must be an object");
    mrefused("apiVersion: sluice/v1\nkind: Cohort\nmetadata: {name: c}\n---\n"
             "apiVersion: sluice/v1\nkind: Cohort\nmetadata: {name: c}\n",
             "[1].metadata.name", "Cohort \"c\" is declared twice",
             "the same Cohort twice is refused");
    ok(mparse("apiVersion: sluice/v1\nkind: Cohort\nmetadata: {name: c}\n---\n"
              "apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: c}\n"
              "spec: {team: t}\n",
              &ms, &n, &err) == 0 &&
           n == 2,
       "a Cohort and a Queue may share a name");
    free(ms);
}

static void pclasses(void)
{
    struct sl_manifest m;

    ok(mone("PriorityClass", "", &m) && !m.u.pclass.opportunistic &&
           m.u.pclass.min_runtime_ms == 0,
       "a PriorityClass defaults to not opportunistic and minRuntime 0");
    ok(mone("PriorityClass", "opportunistic: true", &m) &&
           m.u.pclass.opportunistic && m.u.pclass.preemptible,
       "an opportunistic class is read, preemptible by default");
    ok(mone("PriorityClass", "opportunistic: true, preemptible: true", &m) &&
           m.u.pclass.opportunistic,
       "opportunistic with preemptible: true is accepted");
    ok(mone("PriorityClass", "opportunistic: false, preemptible: false", &m) &&
           !m.u.pclass.opportunistic && !m.u.pclass.preemptible,
       "opportunistic: false with preemptible: false is accepted");
    ok(mnull("PriorityClass", "opportunistic: ~", "spec.opportunistic") &&
           mnull("PriorityClass", "minRuntime: ~", "spec.minRuntime"),
       "null opportunistic and minRuntime are refused");
    ok(mone("PriorityClass", "minRuntime: 10m", &m) &&
           m.u.pclass.min_runtime_ms == 600000,
       "minRuntime: 10m is 600000 ms");
    ok(mone("PriorityClass", "minRuntime: 0s", &m) &&
           m.u.pclass.min_runtime_ms == 0,
       "minRuntime: 0s is accepted");
    ok(mone("PriorityClass", "minRuntime: 0", &m) &&
           m.u.pclass.min_runtime_ms == 0,
       "minRuntime: 0 (seconds) is accepted");
    ok(mone("PriorityClass", "minRuntime: 90", &m) &&
           m.u.pclass.min_runtime_ms == 90000,
       "an integer minRuntime is seconds");
    ok(mone("PriorityClass", "minRuntime: 30d", &m) &&
           m.u.pclass.min_runtime_ms == 30LL * 86400000,
       "minRuntime: 30d, the largest, is accepted");
    ok(mone("PriorityClass", "minRuntime: 1h30m", &m) &&
           m.u.pclass.min_runtime_ms == 5400000,
       "minRuntime: 1h30m is read");
    ok(mone("PriorityClass", "minRuntime: 1500ms", &m) &&
           m.u.pclass.min_runtime_ms == 1500,
       "minRuntime: 1500ms keeps its milliseconds");
}

static void schedulers(void)
{
    static const char *full =
        "apiVersion: sluice/v1\n"
        "kind: Scheduler\n"
        "metadata: {name: default}\n"
        "spec:\n"
        "  placement: bestfit\n"
        "  backfill: false\n"
        "  reservations: 4\n"
        "  fairShare:\n"
        "    halfLife: 1d\n"
        "  preemption:\n"
        "    enabled: false\n"
        "    minRuntime: 5m\n"
        "  modelWeights: {H100: 3, A100: 2, T4: 0.5}\n";
    static const char *names[] = {"fgd",     "bestfit", "packing", "clustering",
                                  "dotprod", "random",  "spread"};
    struct sl_manifest *ms = NULL, m;
    struct sl_error err;
    size_t n = 0;

    if (ok(mparse(full, &ms, &n, &err) == 0 && n == 1,
           "a Scheduler with every field parses")) {
        const struct sl_manifest *s = &ms[0];
        is_int(s->kind, SL_KIND_SCHEDULER, "its kind is Scheduler");
        is_int(s->u.sched.placement, SL_PLACE_BESTFIT, "placement is read");
        ok(!s->u.sched.backfill, "backfill: false is read");
        is_int(s->u.sched.reservations, 4, "reservations are read");
        is_int(s->u.sched.half_life_ms, 86400000, "fairShare.halfLife is read");
        ok(!s->u.sched.preemption, "preemption.enabled: false is read");
        is_int(s->u.sched.min_runtime_ms, 300000,
               "preemption.minRuntime is read");
        is_int(s->u.sched.nweights, 3, "modelWeights has three models");
        ok(!strcmp(s->u.sched.weight_model[0], "H100") &&
               s->u.sched.weight_milli[0] == 3000 &&
               !strcmp(s->u.sched.weight_model[2], "T4") &&
               s->u.sched.weight_milli[2] == 500,
           "modelWeights keep names, order and milli weights");
    } else {
        diag("%s: %s", err.field, err.text);
    }
    free(ms);
    ms = NULL;

    if (ok(mparse("apiVersion: sluice/v1\nkind: Scheduler\n"
                  "metadata: {name: default}\n",
                  &ms, &n, &err) == 0,
           "a Scheduler without spec parses")) {
        const struct sl_manifest *s = &ms[0];
        ok(s->u.sched.placement == SL_PLACE_FGD && s->u.sched.backfill &&
               s->u.sched.reservations == 1 &&
               s->u.sched.half_life_ms == 7LL * 86400000 &&
               s->u.sched.preemption && s->u.sched.min_runtime_ms == 0 &&
               s->u.sched.nweights == 0,
           "a Scheduler defaults to fgd, backfill, 1 reservation, 7d "
           "half-life, preemption, minRuntime 0, no model weights");
    }
    free(ms);
    ms = NULL;
    ok(mone("Scheduler", "fairShare: {}, preemption: {}, modelWeights: {}",
            &m) &&
           m.u.sched.half_life_ms == 7LL * 86400000 && m.u.sched.preemption &&
           m.u.sched.nweights == 0,
       "empty Scheduler objects keep the defaults");
    ok(mnull("Scheduler", "placement: ~", "spec.placement") &&
           mnull("Scheduler", "backfill: ~", "spec.backfill") &&
           mnull("Scheduler", "fairShare: {halfLife: ~}", "spec.fairShare.halfLife"),
       "null Scheduler fields are refused, each named");
    for (int i = 0; i < 7; i++) {
        char spec[64];
        snprintf(spec, sizeof(spec), "placement: %s", names[i]);
        ok(mone("Scheduler", spec, &m) && m.u.sched.placement == i,
           "placement: %s is read", names[i]);
    }
    ok(mone("Scheduler", "reservations: 1", &m) && m.u.sched.reservations == 1,
       "reservations: 1 is accepted");
    ok(mone("Scheduler", "reservations: 64", &m) && m.u.sched.reservations == 64,
       "reservations: 64, the largest, is accepted");
    ok(mone("Scheduler", "fairShare: {halfLife: 0}", &m) &&
           m.u.sched.half_life_ms == 0,
       "halfLife: 0 (current usage only) is accepted");
    ok(mone("Scheduler", "fairShare: {halfLife: 3650d}", &m) &&
           m.u.sched.half_life_ms == 3650LL * 86400000,
       "halfLife: 3650d, the largest, is accepted");
    ok(mone("Scheduler", "fairShare: {halfLife: 12h}", &m) &&
           m.u.sched.half_life_ms == 12LL * 3600000,
       "halfLife: 12h is read");
    ok(mone("Scheduler", "preemption: {enabled: true, minRuntime: 30d}", &m) &&
           m.u.sched.preemption && m.u.sched.min_runtime_ms == 30LL * 86400000,
       "a default minRuntime of 30d is accepted");
    ok(mone("Scheduler", "modelWeights: {H100: 0.001, A100: 1000}", &m) &&
           m.u.sched.weight_milli[0] == 1 && m.u.sched.weight_milli[1] == 1000000,
       "model weights 0.001 and 1000, the bounds, are accepted");
    {
        char spec[1024];
        int len = snprintf(spec, sizeof(spec), "modelWeights: {");
        for (int i = 0; i < 16; i++)
            len += snprintf(spec + len, sizeof(spec) - (size_t)len, "%sG%d: 1",
                            i ? ", " : "", i);
        snprintf(spec + len, sizeof(spec) - (size_t)len, "}");
        ok(mone("Scheduler", spec, &m) && m.u.sched.nweights == 16,
           "16 model weights are accepted");
        snprintf(spec + len, sizeof(spec) - (size_t)len, ", G16: 1}");
        mrefused(mdoc("Scheduler", spec), "spec.modelWeights",
                 "must have at most 16 models, got 17",
                 "17 model weights are refused");
    }
    mrefused("apiVersion: sluice/v1\nkind: Scheduler\nmetadata: {name: main}\n",
             "metadata.name",
             "must be \"default\" (there is one scheduler), got \"main\"",
             "a Scheduler not named default is refused");
    mrefused("apiVersion: sluice/v1\nkind: Team\nmetadata: {name: t}\n---\n"
             "apiVersion: sluice/v1\nkind: Scheduler\nmetadata: {name: x}\n",
             "[1].metadata.name", "there is one scheduler",
             "the Scheduler name error carries the document index");
    mrefused("apiVersion: sluice/v1\nkind: Scheduler\nmetadata: {name: default}\n"
             "---\n"
             "apiVersion: sluice/v1\nkind: Scheduler\nmetadata: {name: default}\n",
             "[1].metadata.name", "Scheduler \"default\" is declared twice",
             "two Schedulers in a file are refused");
    mrefused("apiVersion: sluice/v1\nkind: Scheduler\nmetadata: {name: default}\n"
             "spec: fgd\n",
             "spec", "must be an object", "a Scheduler spec must be an object");

    for (int i = 0; i < 7; i++) {
        is_str(sl_placement_name(i), names[i], "sl_placement_name(%d) is %s", i,
               names[i]);
        is_int(sl_placement_parse(names[i]), i, "sl_placement_parse(\"%s\") is %d",
               names[i], i);
    }
    is_str(sl_placement_name(-1), "?", "sl_placement_name(-1) is \"?\"");
    is_str(sl_placement_name(7), "?", "sl_placement_name past the enum is \"?\"");
    is_int(sl_placement_parse("FGD"), -EINVAL,
           "sl_placement_parse is case-sensitive");
    is_int(sl_placement_parse(""), -EINVAL, "sl_placement_parse(\"\") fails");
    is_int(sl_placement_parse("fgd "), -EINVAL,
           "sl_placement_parse refuses trailing text");
    is_int(sl_placement_parse(NULL), -EINVAL, "sl_placement_parse(NULL) fails");
}

/* {apiVersion, kind, metadata: {name}, spec: sl_manifest_spec_json(m)} as
 * JSON text (caller frees), or NULL. */
static char *manifest_text(const struct sl_manifest *m, const char *kind)
{
    json_t *spec = sl_manifest_spec_json(m), *doc;
    char *text = NULL;

    if (!spec)
        return NULL;
    doc = json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", "sluice/v1",
                    "kind", kind, "metadata", "name", m->name, "spec", spec);
    if (doc)
        text = json_dumps(doc, 0);
    json_decref(doc);
    return text;
}

static void manifest_round_trip(const char *doc, const char *kind,
                                const char *name)
{
    struct sl_manifest *a = NULL, *b = NULL;
    struct sl_error err;
    size_t na = 0, nb = 0;
    char *text = NULL, *again = NULL;

    if (!ok(mparse(doc, &a, &na, &err) == 0 && na == 1, "%s: parses", name)) {
        diag("%s: %s", err.field, err.text);
        free(a);
        return;
    }
    text = manifest_text(a, kind);
    ok(text && mparse(text, &b, &nb, &err) == 0 && nb == 1,
       "%s: its normalised spec validates", name);
    if (!b)
        diag("%s\n# %s: %s", text ? text : "(null)", err.field, err.text);
    ok(b && memcmp(a, b, sizeof(*a)) == 0,
       "%s: re-parsing gives an equal struct", name);
    again = b ? manifest_text(b, kind) : NULL;
    ok(text && again && !strcmp(text, again),
       "%s: normalising twice changes nothing", name);
    free(text);
    free(again);
    free(a);
    free(b);
}

static void manifest_round_trips(void)
{
    struct sl_manifest *m = NULL;
    struct sl_error err;
    size_t n = 0;
    json_t *j;
    char *text;

    manifest_round_trip(mdoc("Team", ""), "Team", "a Team without default queue");
    manifest_round_trip(mdoc("Team", "defaultQueue: q"), "Team",
                        "a Team with a default queue");
    manifest_round_trip(mdoc("Queue", ""), "Queue", "a minimal Queue");
    manifest_round_trip(
        mdoc("Queue",
             "cohort: gpu-pool, weight: 2.125, nominal: {gpus: 16.5, "
             "gpusByModel: {A100: 8, h100: 0.001, T4: 999999.999}, cpus: "
             "\"250m\", memory: 1Ti}, borrowingLimit: {gpus: 0.1, "
             "gpusByModel: {a100: 1000000}, cpus: 1.5, memory: 0}, "
             "lendingLimit: {gpus: 16.5, cpus: 0, memory: 1Gi}, "
             "userLimit: {gpus: 0, gpusByModel: {X: 0.3}, cpus: 1000000, "
             "memory: 1024Ti}, preemption: {withinQueue: Never, "
             "reclaimWithinCohort: LowerPriority}"),
        "Queue", "a Queue with every field and odd amounts");
    manifest_round_trip(
        mdoc("Queue", "weight: 0.001, nominal: {}, userLimit: {cpus: 0.5}, "
                      "preemption: {reclaimWithinCohort: Never}"),
        "Queue", "a Queue with an empty quota and the smallest weight");
    manifest_round_trip(mdoc("PriorityClass", ""), "PriorityClass",
                        "a minimal PriorityClass");
    manifest_round_trip("apiVersion: sluice/v1\nkind: PriorityClass\n"
                        "metadata: {name: best-effort}\n"
                        "spec: {value: -7, preemptible: true, default: true, "
                        "opportunistic: true, minRuntime: 1500ms}\n",
                        "PriorityClass",
                        "an opportunistic PriorityClass with a minRuntime");
    manifest_round_trip(mdoc("PriorityClass",
                             "preemptible: false, minRuntime: 30d"),
                        "PriorityClass", "a non-preemptible PriorityClass");
    manifest_round_trip(mdoc("User", "team: t"), "User", "a minimal User");
    manifest_round_trip(mdoc("User", "team: t, role: viewer, unixUser: bob"),
                        "User", "a User with every field");
    manifest_round_trip(mdoc("Cohort", ""), "Cohort", "a Cohort");
    manifest_round_trip(mdoc("Cohort", "description: \"shared \\u00e9 pool\""),
                        "Cohort", "a Cohort with a description");
    manifest_round_trip(mdoc("Scheduler", ""), "Scheduler",
                        "a default Scheduler");
    manifest_round_trip(
        mdoc("Scheduler",
             "placement: spread, backfill: false, reservations: 64, "
             "fairShare: {halfLife: 0}, preemption: {enabled: false, "
             "minRuntime: 90}, modelWeights: {H100: 3, a100: 0.001, "
             "T4: 999.999}"),
        "Scheduler", "a Scheduler with every field");

    /* The normalised form, exactly. */
    if (mparse(mdoc("Queue", "cohort: c, nominal: {gpus: 0.5, gpusByModel: "
                             "{A100: 8}, cpus: \"250m\", memory: 1Gi}, "
                             "lendingLimit: {cpus: 0.25}"),
               &m, &n, &err) == 0) {
        j = sl_manifest_spec_json(m);
        text = j ? json_dumps(j, 0) : NULL;
        is_str(text,
               "{\"team\": \"t\", \"cohort\": \"c\", \"weight\": 1, "
               "\"nominal\": {\"gpus\": 0.5, \"gpusByModel\": {\"A100\": 8}, "
               "\"cpus\": \"250m\", \"memory\": 1073741824}, \"lendingLimit\": "
               "{\"cpus\": \"250m\"}, \"preemption\": {\"withinQueue\": "
               "\"LowerPriority\", \"reclaimWithinCohort\": \"Any\"}}",
               "a Queue's normalised spec fills defaults and writes amounts "
               "as numbers");
        free(text);
        json_decref(j);
    }
    free(m);
    m = NULL;
    if (mparse(mdoc("Scheduler", ""), &m, &n, &err) == 0) {
        j = sl_manifest_spec_json(m);
        text = j ? json_dumps(j, 0) : NULL;
        is_str(text,
               "{\"placement\": \"fgd\", \"backfill\": true, \"reservations\": "
               "1, \"fairShare\": {\"halfLife\": \"168h\"}, \"preemption\": "
               "{\"enabled\": true, \"minRuntime\": \"0s\"}, \"modelWeights\": "
               "{}}",
               "a Scheduler's normalised spec fills every default");
        free(text);
        json_decref(j);
    }
    free(m);
    m = NULL;
    if (mparse(mdoc("PriorityClass", ""), &m, &n, &err) == 0) {
        j = sl_manifest_spec_json(m);
        text = j ? json_dumps(j, 0) : NULL;
        is_str(text,
               "{\"value\": 1, \"preemptible\": true, \"default\": false, "
               "\"opportunistic\": false, \"minRuntime\": \"0s\"}",
               "a PriorityClass's normalised spec fills every default");
        free(text);
        json_decref(j);
    }
    free(m);
    m = NULL;
    if (mparse(mdoc("Cohort", ""), &m, &n, &err) == 0) {
        j = sl_manifest_spec_json(m);
        text = j ? json_dumps(j, 0) : NULL;
        is_str(text, "{\"description\": \"\"}",
               "a Cohort's normalised spec has an empty description");
        free(text);
        json_decref(j);
    }
    free(m);
    m = NULL;

    /* Plain data: a memcpy'd manifest normalises the same. */
    if (mparse(mdoc("Queue", "cohort: c, nominal: {gpus: 2}"), &m, &n, &err) ==
        0) {
        struct sl_manifest copy;
        char *t1, *t2;
        memcpy(&copy, m, sizeof(copy));
        t1 = manifest_text(m, "Queue");
        t2 = manifest_text(&copy, "Queue");
        ok(t1 && t2 && !strcmp(t1, t2),
           "a manifest copied with memcpy normalises the same");
        free(t1);
        free(t2);
    }
    free(m);
}


/* Kind words and the field-by-field comparison behind apply and diff. */
static void compare_specs(void)
{
    static const struct {
        const char *word;
        int kind;
    } words[] = {
        {"team", SL_KIND_TEAM},       {"Teams", SL_KIND_TEAM},
        {"QUEUE", SL_KIND_QUEUE},     {"priority-class", SL_KIND_PRIORITY_CLASS},
        {"PriorityClasses", SL_KIND_PRIORITY_CLASS},
        {"priority_classes", SL_KIND_PRIORITY_CLASS},
        {"policies", SL_KIND_POLICY}, {"Policy", SL_KIND_POLICY},
        {"cohorts", SL_KIND_COHORT},  {"users", SL_KIND_USER},
        {"dataset", SL_KIND_DATASET}, {"budgets", SL_KIND_BUDGET},
        {"pricing", SL_KIND_PRICING}, {"scheduler", SL_KIND_SCHEDULER},
        {"job", -EINVAL},             {"", -EINVAL},
        {"queue s", -EINVAL},         {"policys", -EINVAL},
    };
    json_t *old, *new, *given, *d;

    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        is_int(sl_manifest_kind_parse(words[i].word), words[i].kind,
               "kind word \"%s\"", words[i].word);
    is_int(sl_manifest_kind_parse(NULL), -EINVAL, "no kind word");
    is_str(sl_manifest_kind_name(SL_KIND_PRIORITY_CLASS), "PriorityClass",
           "a kind's manifest name");
    ok(sl_manifest_kind_name(99) == NULL, "no name for a kind outside the enum");

    old = json_loads("{\"team\":\"t\",\"weight\":1,\"nominal\":{\"gpus\":8,\"cpus\":16},"
                     "\"borrowingLimit\":{\"gpus\":4},\"cohort\":\"c\"}", 0, NULL);
    new = json_loads("{\"team\":\"t\",\"weight\":2,\"nominal\":{\"gpus\":8},"
                     "\"cohort\":\"c\",\"userLimit\":{\"gpus\":1}}", 0, NULL);
    given = json_loads("{\"team\":\"t\",\"weight\":2,\"nominal\":{\"gpus\":8},"
                       "\"userLimit\":{\"gpus\":1}}", 0, NULL);
    d = sl_manifest_compare(old, new, given);
    is_int((int)json_array_size(d), 4, "four fields differ");
    {
        char *t = json_dumps(d, JSON_COMPACT);
        is_str(t,
               "[{\"field\":\"spec.weight\",\"old\":1,\"new\":2,\"given\":true},"
               "{\"field\":\"spec.nominal.cpus\",\"old\":16,\"new\":null,\"given\":false},"
               "{\"field\":\"spec.borrowingLimit.gpus\",\"old\":4,\"new\":null,"
               "\"given\":false},"
               "{\"field\":\"spec.userLimit.gpus\",\"old\":null,\"new\":1,\"given\":true}]",
               "each change with its old and new value and whether it was given");
        free(t);
    }
    json_decref(d);
    d = sl_manifest_compare(old, old, NULL);
    ok(d && json_array_size(d) == 0, "equal specs: no change");
    json_decref(d);
    json_decref(given);
    /* {} and a list given set all under them */
    given = json_loads("{\"nominal\":{},\"borrowingLimit\":[]}", 0, NULL);
    d = sl_manifest_compare(old, new, given);
    ok(d && json_is_true(json_object_get(json_array_get(d, 1), "given")) &&
           json_is_true(json_object_get(json_array_get(d, 2), "given")) &&
           json_is_false(json_object_get(json_array_get(d, 0), "given")),
       "an empty object or a scalar in the document gives what is under it");
    json_decref(d);
    json_decref(given);
    d = sl_manifest_compare(NULL, new, NULL);
    ok(d && json_array_size(d) == 5 &&
           json_is_null(json_object_get(json_array_get(d, 0), "old")),
       "against nothing every field of new is a change");
    json_decref(d);
    json_decref(old);
    json_decref(new);
}

int main(void)
{
    manifests();
    res_lists();
    queues();
    cohorts();
    pclasses();
    schedulers();
    mbad_cases();
    manifest_round_trips();
    compare_specs();
    return done_testing();
}
