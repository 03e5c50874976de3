/*
 * test_spec.c - the job spec parser (src/core: spec.h, doc.c, fields.c,
 * spec.c, normalise.c):
 * the SPEC.md example in YAML and JSON, every field's bounds with the exact
 * field path, unknown fields, wrong types, hostile YAML, the normalised
 * round trip and names. The manifests are in test_manifest.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "../../src/core/spec.h"
#include "../../src/util/buf.h"
#include "../tap.h"

#define SHA "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const char *example_yaml =
    "apiVersion: sluice/v1\n"
    "kind: Job\n"
    "metadata:\n"
    "  name: pytorch-mnist          # [a-z0-9-], <= 63 chars\n"
    "  team: team-a\n"
    "  project: vision              # optional, for reports\n"
    "  labels: {stage: training}\n"
    "spec:\n"
    "  queue: research\n"
    "  priorityClass: batch\n"
    "  image: registry.internal/ml/pytorch-mnist@" SHA "\n"
    "  command: [python, /opt/mnist.py, --epochs=1]\n"
    "  env: {EPOCHS: \"1\"}\n"
    "  tasks: 1                     # >1 = gang\n"
    "  resources:\n"
    "    gpus: 1\n"
    "    gpuModels: [A100, H100]\n"
    "    cpus: 4\n"
    "    memory: 16Gi\n"
    "  topology: any\n"
    "  maxRuntime: 2h\n"
    "  retries: 2\n"
    "  checkpoint: {signal: SIGUSR1, grace: 60s}\n"
    "  datasets: [imagenet@v3]\n"
    "  network: isolated\n";

static const char *example_json =
    "{\"apiVersion\": \"sluice/v1\", \"kind\": \"Job\",\n"
    " \"metadata\": {\"name\": \"pytorch-mnist\", \"team\": \"team-a\",\n"
    "   \"project\": \"vision\", \"labels\": {\"stage\": \"training\"}},\n"
    " \"spec\": {\"queue\": \"research\", \"priorityClass\": \"batch\",\n"
    "   \"image\": \"registry.internal/ml/pytorch-mnist@" SHA "\",\n"
    "   \"command\": [\"python\", \"/opt/mnist.py\", \"--epochs=1\"],\n"
    "   \"env\": {\"EPOCHS\": \"1\"}, \"tasks\": 1,\n"
    "   \"resources\": {\"gpus\": 1, \"gpuModels\": [\"A100\", \"H100\"],\n"
    "                 \"cpus\": 4, \"memory\": \"16Gi\"},\n"
    "   \"topology\": \"any\", \"maxRuntime\": \"2h\", \"retries\": 2,\n"
    "   \"checkpoint\": {\"signal\": \"SIGUSR1\", \"grace\": \"60s\"},\n"
    "   \"datasets\": [\"imagenet@v3\"], \"network\": \"isolated\"}}\n";

static int parse(const char *doc, struct sl_job_spec **out,
                 struct sl_error *err)
{
    memset(err, 0, sizeof(*err));
    return sl_job_spec_parse(doc, strlen(doc), out, err);
}

/* The job spec 'doc' is refused with -EINVAL naming 'field' and a text
 * containing 'text'. */
static void refused(const char *doc, const char *field, const char *text,
                    const char *name)
{
    struct sl_job_spec *s = (struct sl_job_spec *)&s; /* a sentinel */
    struct sl_error err;
    int rc = parse(doc, &s, &err);

    if (!ok(rc == -EINVAL && !strcmp(err.field, field) &&
                strstr(err.text, text) && s == (struct sl_job_spec *)&s,
            "%s", name))
        diag("rc %d, field \"%s\" (want \"%s\"), text \"%s\" (want \"%s\")",
             rc, err.field, field, err.text, text);
    if (rc == 0 && s != (struct sl_job_spec *)&s)
        sl_job_spec_destroy(s);
}

/* A minimal valid job with 'spec_lines' appended under spec:. */
static const char *job(const char *spec_lines)
{
    static char text[8192];
    snprintf(text, sizeof(text),
             "apiVersion: sluice/v1\nkind: Job\nspec:\n  command: [run]\n%s",
             spec_lines);
    return text;
}

static void example(void)
{
    struct sl_job_spec *y = NULL, *j = NULL;
    struct sl_error err;
    json_t *yj = NULL, *jj = NULL;

    is_int(parse(example_yaml, &y, &err), 0,
           "the SPEC.md example parses from YAML");
    if (!y) {
        diag("%s: %s", err.field, err.text);
        return;
    }
    is_int(parse(example_json, &j, &err), 0,
           "the SPEC.md example parses from JSON");
    if (!j) {
        diag("%s: %s", err.field, err.text);
        sl_job_spec_destroy(y);
        return;
    }
    is_str(y->name, "pytorch-mnist", "metadata.name is read");
    is_str(y->team, "team-a", "metadata.team is read");
    is_str(y->project, "vision", "metadata.project is read");
    is_str(json_string_value(json_object_get(y->labels, "stage")), "training",
           "metadata.labels are read");
    is_str(y->queue, "research", "spec.queue is read");
    is_str(y->priority_class, "batch", "spec.priorityClass is read");
    is_str(y->image, "registry.internal/ml/pytorch-mnist@" SHA,
           "spec.image is read");
    is_int(y->argc, 3, "spec.command has three arguments");
    is_str(y->argv[2], "--epochs=1", "spec.command keeps each argument");
    ok(y->argv[3] == NULL, "argv is NULL-terminated");
    is_int(y->envc, 1, "spec.env has one variable");
    is_str(y->env[0], "EPOCHS=1", "spec.env becomes KEY=VALUE");
    is_int(y->tasks, 1, "spec.tasks is read");
    is_int(y->gpus, 1, "spec.resources.gpus is read");
    is_int(y->gpu_milli, 0, "gpuMilli stays 0 with whole GPUs");
    is_int(y->n_gpu_models, 2, "spec.resources.gpuModels has two models");
    is_str(y->gpu_models[1], "H100", "gpuModels keeps each model");
    is_int(y->cpu_milli, 4000, "cpus: 4 is 4000 milli-CPUs");
    is_int(y->mem_bytes, 16LL << 30, "memory: 16Gi is 16 GiB");
    is_int(y->topology, SL_TOPO_ANY, "spec.topology is read");
    is_int(y->max_runtime_ms, 7200000, "maxRuntime: 2h is 7200000 ms");
    is_int(y->retries, 2, "spec.retries is read");
    is_int(y->ckpt_signal, SIGUSR1, "checkpoint.signal SIGUSR1 is read");
    is_int(y->ckpt_grace_ms, 60000, "checkpoint.grace 60s is 60000 ms");
    is_int(y->n_datasets, 1, "spec.datasets has one dataset");
    is_str(y->datasets[0], "imagenet@v3", "datasets keep name@version");
    is_int(y->network, SL_NET_ISOLATED, "spec.network is read");

    yj = sl_job_spec_to_json(y);
    jj = sl_job_spec_to_json(j);
    ok(yj && jj && json_equal(yj, jj),
       "the YAML and JSON forms of the example give the same spec");
    json_decref(yj);
    json_decref(jj);
    sl_job_spec_destroy(y);
    sl_job_spec_destroy(j);
}

static void defaults(void)
{
    static const char *want =
        "{\"apiVersion\": \"sluice/v1\", \"kind\": \"Job\", \"metadata\": "
        "{\"labels\": {}}, \"spec\": {\"command\": [\"run\"], \"env\": {}, "
        "\"tasks\": 1, \"resources\": {\"gpus\": 0, \"gpuModels\": [], "
        "\"cpuMilli\": 1000, \"memory\": 1073741824}, \"topology\": \"any\", "
        "\"retries\": 0, \"checkpoint\": {\"signal\": \"SIGTERM\", \"grace\": "
        "\"30s\"}, \"datasets\": [], \"network\": \"egress\"}}";
    struct sl_job_spec *s = NULL;
    struct sl_error err;
    json_t *j;
    char *text;

    if (!ok(parse(job(""), &s, &err) == 0, "a job with only a command parses"))
        return;
    is_str(s->name, "", "the name defaults to empty (the server names it)");
    ok(s->image == NULL, "the image defaults to none");
    ok(json_is_object(s->labels) && json_object_size(s->labels) == 0,
       "labels default to an empty object");
    is_int(s->tasks, 1, "tasks default to 1");
    is_int(s->cpu_milli, 1000, "cpu defaults to 1000 milli");
    is_int(s->mem_bytes, 1LL << 30, "memory defaults to 1 GiB");
    is_int(s->ckpt_signal, SIGTERM, "the checkpoint signal defaults to SIGTERM");
    is_int(s->ckpt_grace_ms, 30000, "the checkpoint grace defaults to 30 s");
    is_int(s->network, SL_NET_EGRESS, "network defaults to egress");
    is_int(s->max_runtime_ms, 0, "maxRuntime defaults to unlimited");
    ok(s->env && !s->env[0] && s->envc == 0, "env defaults to empty");
    ok(s->gpu_models && !s->gpu_models[0], "gpuModels default to empty");
    ok(s->datasets && !s->datasets[0], "datasets default to empty");
    j = sl_job_spec_to_json(s);
    text = j ? json_dumps(j, 0) : NULL;
    is_str(text, want,
           "to_json fills every default in a stable key order, omitting "
           "empty strings and maxRuntime 0");
    free(text);
    json_decref(j);
    sl_job_spec_destroy(s);

    s = NULL;
    ok(parse(job("  tasks:\n  retries: 1\n"), &s, &err) == -EINVAL && !s,
       "an empty value (null) is refused, not taken as absent");
    is_str(err.field, "spec.tasks", "naming its field");
    ok(strstr(err.text, "null") != NULL, "and saying null: %s", err.text);
    ok(parse(job("  resources: {gpus: null}\n"), &s, &err) == -EINVAL && !s &&
           strcmp(err.field, "spec.resources.gpus") == 0,
       "gpus: null is refused, not read as 0 GPUs");
    ok(parse(job("  retries: ~\n"), &s, &err) == -EINVAL && !s, "~ is refused too");
}

static bool spec_equal(const struct sl_job_spec *a, const struct sl_job_spec *b)
{
    if (strcmp(a->name, b->name) || strcmp(a->team, b->team) ||
        strcmp(a->project, b->project) || !json_equal(a->labels, b->labels) ||
        strcmp(a->queue, b->queue) ||
        strcmp(a->priority_class, b->priority_class) ||
        (!a->image != !b->image) || (a->image && strcmp(a->image, b->image)) ||
        a->argc != b->argc || a->envc != b->envc || a->tasks != b->tasks ||
        a->gpus != b->gpus || a->gpu_milli != b->gpu_milli ||
        a->n_gpu_models != b->n_gpu_models || a->cpu_milli != b->cpu_milli ||
        a->mem_bytes != b->mem_bytes || a->topology != b->topology ||
        a->max_runtime_ms != b->max_runtime_ms || a->retries != b->retries ||
        a->ckpt_signal != b->ckpt_signal ||
        a->ckpt_grace_ms != b->ckpt_grace_ms ||
        a->n_datasets != b->n_datasets || a->network != b->network ||
        (!a->workdir != !b->workdir) || (a->workdir && strcmp(a->workdir, b->workdir)) ||
        (!a->dependency != !b->dependency) ||
        (a->dependency && strcmp(a->dependency, b->dependency)) ||
        (!a->array != !b->array) || (a->array && strcmp(a->array, b->array)))
        return false;
    for (int i = 0; i < a->argc; i++)
        if (strcmp(a->argv[i], b->argv[i]))
            return false;
    for (int i = 0; i < a->envc; i++)
        if (strcmp(a->env[i], b->env[i]))
            return false;
    for (int i = 0; i < a->n_gpu_models; i++)
        if (strcmp(a->gpu_models[i], b->gpu_models[i]))
            return false;
    for (int i = 0; i < a->n_datasets; i++)
        if (strcmp(a->datasets[i], b->datasets[i]))
            return false;
    return true;
}

static void round_trip_one(const char *doc, const char *name)
{
    struct sl_job_spec *a = NULL, *b = NULL;
    struct sl_error err;
    json_t *ja = NULL, *jb = NULL;

    if (!ok(parse(doc, &a, &err) == 0, "%s: parses", name)) {
        diag("%s: %s", err.field, err.text);
        return;
    }
    ja = sl_job_spec_to_json(a);
    ok(ja && sl_job_spec_from_json(ja, &b, &err) == 0,
       "%s: its normalised form validates", name);
    ok(b && spec_equal(a, b), "%s: re-parsing gives an equal spec", name);
    jb = b ? sl_job_spec_to_json(b) : NULL;
    ok(jb && json_equal(ja, jb), "%s: normalising twice changes nothing",
       name);
    json_decref(ja);
    json_decref(jb);
    sl_job_spec_destroy(a);
    sl_job_spec_destroy(b);
}

static void round_trips(void)
{
    round_trip_one(example_yaml, "the SPEC.md example");
    round_trip_one(job(""), "a minimal job");
    round_trip_one(job("  tasks: 8\n  topology: same-domain\n"
                       "  resources: {gpuMilli: 250, cpus: \"250m\", "
                       "memory: 1536Mi}\n  maxRuntime: 1500ms\n"
                       "  checkpoint: {grace: 0}\n"),
                   "a fractional gang with odd units");
    round_trip_one(job("  resources: {cpus: 0.5, memory: 1000}\n"
                       "  maxRuntime: 90\n  network: internal\n"
                       "  env: {A: \"\", B_2: \"x=y\"}\n"),
                   "integer seconds, bytes and env values with '='");
    round_trip_one(job("  workdir: /srv/proj\n"), "a workdir");
    round_trip_one(job("  dependency: afterok:1,afterany:2,afterok:3,singleton\n"),
                   "a dependency");
    round_trip_one(job("  array: \"0-99,200-215:4%8\"\n"), "an array");
}

struct bad_case {
    const char *spec_lines; /* under spec:, after command: [run] */
    const char *field;
    const char *text;
    const char *name;
};

static const struct bad_case bad_fields[] = {
    /* spec lines, field, text fragment, test name */
    {"  tasks: 0\n", "spec.tasks", "from 1 to 1024, got 0",
     "tasks below 1 is refused"},
    {"  tasks: 1025\n", "spec.tasks", "got 1025", "tasks above 1024 is refused"},
    {"  tasks: \"2\"\n", "spec.tasks", "must be an integer from 1 to 1024, got \"2\"",
     "a quoted integer is a string, not an integer"},
    {"  tasks: 1.5\n", "spec.tasks", "got 1.5", "a decimal is not an integer"},
    {"  tasks: true\n", "spec.tasks", "got true", "a boolean is not an integer"},
    {"  tasks: 2.0\n", "spec.tasks", "got 2", "2.0 is not an integer"},
    {"  resources: {gpus: 65}\n", "spec.resources.gpus",
     "must be an integer from 0 to 64, got 65", "gpus above 64 is refused"},
    {"  resources: {gpus: -1}\n", "spec.resources.gpus", "got -1",
     "negative gpus are refused"},
    {"  resources: {gpuMilli: 0}\n", "spec.resources.gpuMilli",
     "from 1 to 1000, got 0", "gpuMilli 0 is refused"},
    {"  resources: {gpuMilli: 1001}\n", "spec.resources.gpuMilli", "got 1001",
     "gpuMilli above 1000 is refused"},
    {"  resources: {gpus: 1, gpuMilli: 500}\n", "spec.resources.gpuMilli",
     "cannot be combined with gpus", "gpuMilli with whole gpus is refused"},
    {"  resources: {gpuModels: [A100, \"H 100\"]}\n",
     "spec.resources.gpuModels[1]", "got \"H 100\"",
     "a GPU model with a space is refused with its index"},
    {"  resources: {gpuModels: [\"\"]}\n", "spec.resources.gpuModels[0]",
     "1 to 47 characters", "an empty GPU model is refused"},
    {"  resources: {gpuModels: [1]}\n", "spec.resources.gpuModels[0]",
     "must be a string, got 1", "a numeric GPU model is refused"},
    {"  resources: {gpuModels: A100}\n", "spec.resources.gpuModels",
     "must be an array", "gpuModels as a string is refused"},
    {"  resources: {cpus: 0}\n", "spec.resources.cpus", "got 0",
     "cpus 0 is refused"},
    {"  resources: {cpus: \"four\"}\n", "spec.resources.cpus",
     "such as 4, 0.5 or \"250m\", got \"four\"", "cpus as a word is refused"},
    {"  resources: {cpus: -2}\n", "spec.resources.cpus", "got -2",
     "negative cpus are refused"},
    {"  resources: {cpus: 0.0001}\n", "spec.resources.cpus",
     "multiple of 0.001", "cpus finer than a milli-CPU are refused"},
    {"  resources: {cpus: 2, cpuMilli: 500}\n", "spec.resources.cpuMilli",
     "cannot be combined with cpus", "cpus with cpuMilli is refused"},
    {"  resources: {cpuMilli: 0}\n", "spec.resources.cpuMilli", "got 0",
     "cpuMilli 0 is refused"},
    {"  resources: {cpuMilli: \"500\"}\n", "spec.resources.cpuMilli",
     "got \"500\"", "cpuMilli as a string is refused"},
    {"  resources: {memory: 0}\n", "spec.resources.memory", "got 0",
     "memory 0 is refused"},
    {"  resources: {memory: 12Qi}\n", "spec.resources.memory", "got \"12Qi\"",
     "memory with an unknown unit is refused"},
    {"  resources: {memory: 1.5}\n", "spec.resources.memory", "got 1.5",
     "memory as a decimal number is refused"},
    {"  resources: {memory: 9223372.9T}\n", "spec.resources.memory",
     "at most 1Pi", "memory past int64 is refused, not overflowed"},
    {"  resources: {memory: 2Pi}\n", "spec.resources.memory", "got \"2Pi\"",
     "memory with an unsupported unit is refused"},
    {"  resources: {memory: 2048Ti}\n", "spec.resources.memory", "at most 1Pi",
     "memory above 1 PiB is refused"},
    {"  topology: ring\n", "spec.topology",
     "one of any, same-node or same-domain, got \"ring\"",
     "an unknown topology is refused"},
    {"  network: open\n", "spec.network", "got \"open\"",
     "an unknown network profile is refused"},
    {"  maxRuntime: 0s\n", "spec.maxRuntime", "got \"0s\"",
     "a zero maxRuntime is refused"},
    {"  maxRuntime: 0\n", "spec.maxRuntime", "got 0",
     "a zero maxRuntime in seconds is refused"},
    {"  maxRuntime: forever\n", "spec.maxRuntime",
     "such as 90s, 1h30m or 2h, got \"forever\"",
     "a maxRuntime that is no duration is refused"},
    {"  maxRuntime: -5\n", "spec.maxRuntime", "got -5",
     "a negative maxRuntime is refused"},
    {"  maxRuntime: 1.5\n", "spec.maxRuntime", "got 1.5",
     "a decimal maxRuntime is refused"},
    {"  retries: 101\n", "spec.retries", "from 0 to 100, got 101",
     "retries above 100 are refused"},
    {"  retries: -1\n", "spec.retries", "got -1",
     "negative retries are refused"},
    {"  checkpoint: {signal: SIGFOO}\n", "spec.checkpoint.signal",
     "got \"SIGFOO\"", "an unknown signal is refused"},
    {"  checkpoint: {signal: SIGKILL}\n", "spec.checkpoint.signal",
     "cannot be SIGKILL", "SIGKILL cannot be a checkpoint signal"},
    {"  checkpoint: {signal: 10}\n", "spec.checkpoint.signal",
     "must be a string, got 10", "a signal number is refused"},
    {"  checkpoint: {grace: soon}\n", "spec.checkpoint.grace", "got \"soon\"",
     "a grace that is no duration is refused"},
    {"  checkpoint: {grace: 2d}\n", "spec.checkpoint.grace", "got \"2d\"",
     "a grace above a day is refused"},
    {"  checkpoint: SIGUSR1\n", "spec.checkpoint", "must be an object",
     "checkpoint as a string is refused"},
    {"  datasets: [imagenet]\n", "spec.datasets[0]", "name@version",
     "a dataset without a version is refused"},
    {"  datasets: [ok@v1, ImageNet@v3]\n", "spec.datasets[1]",
     "got \"ImageNet@v3\"", "a dataset with a bad name is refused"},
    {"  datasets: [\"a@\"]\n", "spec.datasets[0]", "got \"a@\"",
     "a dataset with an empty version is refused"},
    {"  image: \"reg/img tag\"\n", "spec.image", "without spaces",
     "an image with a space is refused"},
    {"  image: \"\"\n", "spec.image", "must not be empty",
     "an empty image is refused"},
    {"  image: [a]\n", "spec.image", "must be a string, got an array",
     "an image that is a list is refused"},
    {"  queue: Research\n", "spec.queue", "got \"Research\"",
     "a queue name with capitals is refused"},
    {"  priorityClass: -batch\n", "spec.priorityClass", "got \"-batch\"",
     "a priority class starting with '-' is refused"},
    {"  env: {1A: x}\n", "spec.env.1A", "[A-Za-z_][A-Za-z0-9_]*",
     "an env name starting with a digit is refused"},
    {"  env: {A-B: x}\n", "spec.env.A-B", "[A-Za-z_]",
     "an env name with '-' is refused"},
    {"  env: {CUDA_VISIBLE_DEVICES: \"0\"}\n", "spec.env.CUDA_VISIBLE_DEVICES",
     "set by the executor", "CUDA_VISIBLE_DEVICES cannot be set"},
    {"  env: {SLUICE_JOB_ID: \"1\"}\n", "spec.env.SLUICE_JOB_ID",
     "cannot be overridden", "SLUICE_JOB_ID cannot be set"},
    {"  env: {NVIDIA_VISIBLE_DEVICES: all}\n",
     "spec.env.NVIDIA_VISIBLE_DEVICES", "set by the executor",
     "NVIDIA_VISIBLE_DEVICES cannot be set"},
    {"  env: {SLUICE_GPUS: \"0\"}\n", "spec.env.SLUICE_GPUS",
     "set by the executor", "SLUICE_GPUS cannot be set"},
    {"  env: {CUDA_DEVICE_ORDER: FASTEST_FIRST}\n", "spec.env.CUDA_DEVICE_ORDER",
     "set by the executor", "CUDA_DEVICE_ORDER cannot be set"},
    {"  env: {SLUICE_DATASETS: \"a@1\"}\n", "spec.env.SLUICE_DATASETS",
     "set by the executor", "SLUICE_DATASETS cannot be set"},
    {"  env: {SLUICE_DATASET_A: /data}\n", "spec.env.SLUICE_DATASET_A",
     "a dataset's path or mode", "SLUICE_DATASET_<NAME> cannot be set"},
    {"  env: {EPOCHS: 1}\n", "spec.env.EPOCHS", "got 1 (quote it)",
     "an unquoted number as env value is refused with a hint"},
    {"  dependency: afterok:1?afterok:2\n", "spec.dependency", "'?' (any of) is not supported",
     "a dependency with '?' is refused"},
    {"  array: \"0-1000\"\n", "spec.array", "at most 1000 elements",
     "an array of more than 1000 elements is refused"},
    {"  env: {SLUICE_ARRAY_INDEX: \"1\"}\n", "spec.env.SLUICE_ARRAY_INDEX",
     "the job array element's index", "SLUICE_ARRAY_INDEX cannot be set"},
    {"  dependency: 12\n", "spec.dependency", "must be a string",
     "a dependency that is not a string is refused"},
    {"  workdir: proj\n", "spec.workdir", "must be an absolute path, got \"proj\"",
     "a relative workdir is refused"},
    {"  workdir: \"\"\n", "spec.workdir", "must be an absolute path",
     "an empty workdir is refused"},
    {"  workdir: /a/../etc\n", "spec.workdir", "must not contain \"..\"",
     "a workdir with .. is refused, not resolved"},
    {"  workdir: /a/..\n", "spec.workdir", "must not contain \"..\"",
     "a workdir ending in .. is refused"},
    {"  workdir: \"/a\\tb\"\n", "spec.workdir", "control characters",
     "a workdir with a control character is refused"},
    {"  workdir: [/tmp]\n", "spec.workdir", "must be a string, got an array",
     "a workdir that is a list is refused"},
    {"  workdir: 7\n", "spec.workdir", "must be a string",
     "a workdir that is a number is refused"},
    {"  env: [A=1]\n", "spec.env", "must be an object",
     "env as a list is refused"},
    {"  gpus: 1\n", "spec.gpus", "unknown field",
     "an unknown field in spec is named"},
    {"  resources: {gpu: 1}\n", "spec.resources.gpu", "unknown field",
     "an unknown field in resources is named"},
    {"  checkpoint: {sig: SIGUSR1}\n", "spec.checkpoint.sig", "unknown field",
     "an unknown field in checkpoint is named"},
    {"  resources: 4\n", "spec.resources", "must be an object, got 4",
     "resources as a number is refused"},
};

static const struct bad_case bad_docs[] = {
    /* whole document, field, text fragment, test name */
    {"kind: Job\nspec: {command: [x]}\n", "apiVersion", "is required",
     "apiVersion is required"},
    {"apiVersion: v1\nkind: Job\nspec: {command: [x]}\n", "apiVersion",
     "must be \"sluice/v1\", got \"v1\"", "a foreign apiVersion is refused"},
    {"apiVersion: sluice/v1\nspec: {command: [x]}\n", "kind", "is required",
     "kind is required"},
    {"apiVersion: sluice/v1\nkind: Team\nspec: {command: [x]}\n", "kind",
     "sluice apply", "a manifest kind is refused with a pointer to apply"},
    {"apiVersion: sluice/v1\nkind: Job\n", "spec", "is required",
     "spec is required"},
    {"apiVersion: sluice/v1\nkind: Job\nspec: run\n", "spec",
     "must be an object, got \"run\"", "spec as a string is refused"},
    {"apiVersion: sluice/v1\nkind: Job\nstatus: {}\nspec: {command: [x]}\n",
     "status", "unknown field", "an unknown top-level field is named"},
    {"apiVersion: sluice/v1\nkind: Job\nmetadata: {nam: x}\n"
     "spec: {command: [x]}\n",
     "metadata.nam", "unknown field", "an unknown metadata field is named"},
    {"apiVersion: sluice/v1\nkind: Job\nmetadata: [x]\nspec: {command: [x]}\n",
     "metadata", "must be an object, got an array",
     "metadata as a list is refused"},
    {"apiVersion: sluice/v1\nkind: Job\nmetadata: {name: Bad_Name}\n"
     "spec: {command: [x]}\n",
     "metadata.name", "got \"Bad_Name\"", "a bad job name is refused"},
    {"apiVersion: sluice/v1\nkind: Job\nmetadata: {name: "
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}\n"
     "spec: {command: [x]}\n",
     "metadata.name", "1 to 63 characters", "a 64-character name is refused"},
    {"apiVersion: sluice/v1\nkind: Job\nmetadata: {team: a-}\n"
     "spec: {command: [x]}\n",
     "metadata.team", "got \"a-\"", "a team name ending in '-' is refused"},
    {"apiVersion: sluice/v1\nkind: Job\nmetadata: {project: 7}\n"
     "spec: {command: [x]}\n",
     "metadata.project", "must be a string, got 7",
     "a numeric project is refused"},
    {"apiVersion: sluice/v1\nkind: Job\nmetadata: {labels: {stage: 1}}\n"
     "spec: {command: [x]}\n",
     "metadata.labels.stage", "must be a string, got 1",
     "a numeric label value is refused"},
    {"apiVersion: sluice/v1\nkind: Job\nmetadata: {labels: {\"a b\": x}}\n"
     "spec: {command: [x]}\n",
     "metadata.labels.a b", "label keys", "a label key with a space is refused"},
    {"apiVersion: sluice/v1\nkind: Job\nmetadata: {labels: [a]}\n"
     "spec: {command: [x]}\n",
     "metadata.labels", "must be an object", "labels as a list are refused"},
    {"apiVersion: sluice/v1\nkind: Job\nmetadata: {labels: {stage: \"a\\nb\"}}\n"
     "spec: {command: [x]}\n",
     "metadata.labels.stage", "control characters", "a label value with a newline is refused"},
    {"{\"apiVersion\": \"sluice/v1\", \"kind\": \"Job\", \"metadata\": {\"labels\": "
     "{\"stage\": \"\\u001b[31mred\"}}, \"spec\": {\"command\": [\"x\"]}}",
     "metadata.labels.stage", "control characters",
     "a label value with a terminal escape is refused"},
    {"apiVersion: sluice/v1\nkind: Job\nspec: {command: [x], resources: {gpus: -0}}\n",
     "", "-0 is not a number", "gpus: -0 is refused in YAML, not read as 0"},
    {"{\"apiVersion\": \"sluice/v1\", \"kind\": \"Job\", \"spec\": {\"command\": "
     "[\"x\"], \"resources\": {\"gpus\": -0}}}",
     "", "-0 is not a number", "gpus: -0 is refused in JSON"},
    {"{\"apiVersion\": \"sluice/v1\", \"kind\": \"Job\", \"spec\": {\"command\": "
     "[\"x\"], \"resources\": {\"cpus\": -0.0}}}",
     "", "-0 is not a number", "cpus: -0.0 is refused in JSON"},
    {"apiVersion: sluice/v1\nkind: Job\nspec: {command: [x], retries: 010}\n",
     "", "leading zero", "an integer with a leading zero is refused"},
    {"apiVersion: sluice/v1\nkind: Job\nspec: {command: [x], resources: {gpus: null}}\n",
     "spec.resources.gpus", "must not be null", "gpus: null is refused, not read as 0"},
    {"apiVersion: sluice/v1\nkind: Job\nspec: {tasks: 1}\n", "spec.command",
     "is required", "command is required"},
    {"apiVersion: sluice/v1\nkind: Job\nspec: {command: []}\n", "spec.command",
     "at least one", "an empty command is refused"},
    {"apiVersion: sluice/v1\nkind: Job\nspec: {command: \"python x.py\"}\n",
     "spec.command", "must be an array", "command as a string is refused"},
    {"apiVersion: sluice/v1\nkind: Job\nspec: {command: [python, x, 5]}\n",
     "spec.command[2]", "must be a string, got 5",
     "a numeric argument is refused with its index"},
    {"apiVersion: sluice/v1\nkind: Job\nspec: {command: [\"\", x]}\n",
     "spec.command[0]", "must not be empty", "an empty program is refused"},
    {"apiVersion: sluice/v1\nkind: Job\nspec: {command: [a, {b: c}]}\n",
     "spec.command[1]", "got an object", "an object argument is refused"},
    {"- apiVersion: sluice/v1\n", "", "must be an object",
     "a document that is a list is refused"},
    {"{\"apiVersion\": \"sluice/v1\", \"kind\": \"Job\", \"spec\": "
     "{\"command\": [\"x\"], \"tasks\": 1e3}}",
     "spec.tasks", "got 1000", "a JSON exponent is not an integer"},
    {"{\"apiVersion\": \"sluice/v1\", \"kind\": \"Job\", \"spec\": "
     "{\"command\": [\"x\"], \"resources\": {\"gpus\": 99999999999999}}}",
     "spec.resources.gpus", "got 99999999999999",
     "a huge JSON integer is refused by range"},
};

static void bounds(void)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(bad_fields); i++)
        refused(job(bad_fields[i].spec_lines), bad_fields[i].field,
                bad_fields[i].text, bad_fields[i].name);
    for (size_t i = 0; i < SL_ARRAY_LEN(bad_docs); i++)
        refused(bad_docs[i].spec_lines, bad_docs[i].field, bad_docs[i].text,
                bad_docs[i].name);
}

/* Bounds on counts and lengths, built programmatically. */
static void sizes(void)
{
    struct sl_buf b = {0};
    struct sl_job_spec *s = NULL;
    struct sl_error err;

    sl_buf_printf(&b, "  resources:\n    gpuModels: [");
    for (int i = 0; i < 17; i++)
        sl_buf_printf(&b, "%sM%d", i ? ", " : "", i);
    sl_buf_printf(&b, "]\n");
    refused(job(b.data), "spec.resources.gpuModels", "at most 16 entries, got 17",
            "17 GPU models are refused");
    b.len = 0;

    sl_buf_printf(&b, "  resources: {gpuModels: [M%047d]}\n", 0);
    refused(job(b.data), "spec.resources.gpuModels[0]", "1 to 47",
            "a 48-character GPU model is refused");
    b.len = 0;

    sl_buf_printf(&b, "apiVersion: sluice/v1\nkind: Job\nspec:\n  command:\n");
    for (int i = 0; i < SL_MAX_ARGS + 1; i++)
        sl_buf_printf(&b, "  - a\n");
    refused(b.data, "spec.command", "at most 1024 entries, got 1025",
            "1025 arguments are refused");
    b.len = 0;

    sl_buf_printf(&b, "apiVersion: sluice/v1\nkind: Job\nspec:\n  command:\n");
    for (int i = 0; i < SL_MAX_ARGS; i++)
        sl_buf_printf(&b, "  - a\n");
    ok(parse(b.data, &s, &err) == 0 && s->argc == SL_MAX_ARGS,
       "1024 arguments are accepted");
    sl_job_spec_destroy(s);
    s = NULL;
    b.len = 0;

    sl_buf_printf(&b, "apiVersion: sluice/v1\nkind: Job\nspec:\n  command: [a, ");
    for (int i = 0; i < 4097; i++)
        sl_buf_printf(&b, "x");
    sl_buf_printf(&b, "]\n");
    refused(b.data, "spec.command[1]", "at most 4096 bytes, got 4097",
            "an argument over 4096 bytes is refused");
    b.len = 0;

    sl_buf_printf(&b, "  image: ");
    for (int i = 0; i < 513; i++)
        sl_buf_printf(&b, "i");
    sl_buf_printf(&b, "\n");
    refused(job(b.data), "spec.image", "at most 512 bytes, got 513",
            "an image over 512 bytes is refused");
    b.len = 0;

    sl_buf_printf(&b, "  env:\n");
    for (int i = 0; i < SL_MAX_ENV + 1; i++)
        sl_buf_printf(&b, "    V%d: x\n", i);
    refused(job(b.data), "spec.env", "at most 256 variables, got 257",
            "257 env variables are refused");
    b.len = 0;

    sl_buf_printf(&b, "apiVersion: sluice/v1\nkind: Job\nmetadata:\n  labels:\n");
    for (int i = 0; i < 65; i++)
        sl_buf_printf(&b, "    l%d: x\n", i);
    sl_buf_printf(&b, "spec: {command: [x]}\n");
    refused(b.data, "metadata.labels", "at most 64 labels, got 65",
            "65 labels are refused");
    b.len = 0;

    sl_buf_printf(&b, "apiVersion: sluice/v1\nkind: Job\nmetadata:\n  labels: {%064d: x}\n"
            "spec: {command: [x]}\n", 0);
    refused(b.data, "metadata.labels.0000000000000000000000000000000000000000...",
            "1 to 63", "a 64-character label key is refused, shown cut");
    b.len = 0;

    sl_buf_printf(&b, "  datasets: [");
    for (int i = 0; i < 65; i++)
        sl_buf_printf(&b, "%sd%d@v1", i ? ", " : "", i);
    sl_buf_printf(&b, "]\n");
    refused(job(b.data), "spec.datasets", "at most 64 entries",
            "65 datasets are refused");
    b.len = 0;

    sl_buf_printf(&b, "  tasks: 1024\n  resources: {gpus: 64, gpuModels: [");
    for (int i = 0; i < 16; i++)
        sl_buf_printf(&b, "%sM%046d", i ? ", " : "", i);
    sl_buf_printf(&b, "]}\n  retries: 100\n");
    ok(parse(job(b.data), &s, &err) == 0 && s->tasks == 1024 && s->gpus == 64 &&
           s->n_gpu_models == 16 && s->retries == 100,
       "every upper bound itself is accepted");
    sl_job_spec_destroy(s);
    sl_buf_fini(&b);
}

static void nul_bytes(void)
{
    json_t *doc = json_pack("{s:s, s:s, s:{s:[s, s%]}}", "apiVersion",
                            "sluice/v1", "kind", "Job", "spec", "command", "x",
                            "a\0b", (size_t)3);
    struct sl_job_spec *s = NULL;
    struct sl_error err = {"", ""};

    ok(doc && sl_job_spec_from_json(doc, &s, &err) == -EINVAL &&
           !strcmp(err.field, "spec.command[1]") && strstr(err.text, "NUL"),
       "an argument with a NUL byte is refused");
    json_decref(doc);
    refused("apiVersion: sluice/v1\nkind: Job\nspec: {command: [\"a\\0b\"]}\n",
            "", "NUL", "a YAML string with a NUL byte is refused");
    refused("{\"apiVersion\": \"sluice/v1\", \"kind\": \"Job\", \"spec\": "
            "{\"command\": [\"a\\u0000b\"]}}",
            "", "NUL", "a JSON string with a NUL byte is refused");
}

static void hostile_yaml(void)
{
    struct sl_buf b = {0};
    struct sl_job_spec *s = NULL;
    struct sl_error err;
    json_t *v = NULL;
    char *big;

    refused("apiVersion: sluice/v1\nkind: Job\nspec:\n  command: &c [x]\n"
            "  env: *c\n",
            "", "aliases are not supported", "YAML anchors are refused");
    refused("a: &x [1]\nb: *x\n", "", "aliases are not supported",
            "a YAML alias is refused");
    refused("apiVersion: sluice/v1\nkind: Job\nkind: Job\nspec: {command: [x]}\n",
            "", "duplicate key \"kind\"", "a duplicate YAML key is refused");
    refused("{\"apiVersion\": \"sluice/v1\", \"kind\": \"Job\", \"kind\": "
            "\"Job\", \"spec\": {\"command\": [\"x\"]}}",
            "", "duplicate", "a duplicate JSON key is refused");
    refused("? [a, b]\n: 1\n", "", "mapping keys must be scalars",
            "a non-scalar YAML key is refused");
    refused("apiVersion: sluice/v1\nkind: Job\nspec: {command: [x]\n", "",
            "line ", "a YAML syntax error names the line");
    is_int(parse("apiVersion: sluice/v1\nkind: Job\nspec:\n  command: [x]\n"
                 "   bad: indent\n", &s, &err), -EINVAL,
           "bad indentation is refused");
    ok(strstr(err.text, "line 5") != NULL, "and the error names line 5 (%s)",
       err.text);
    refused("{\"apiVersion\": \"sluice/v1\",\n \"kind\": }", "", "line 2",
            "a JSON syntax error names the line");
    refused("kind: !!binary aGVsbG8=\n", "", "tags are not supported",
            "YAML tags other than !!str are refused");
    refused("apiVersion: sluice/v1\nkind: Job\nspec: {command: [x]}\n---\n"
            "apiVersion: sluice/v1\n",
            "", "more than one document",
            "two documents are refused for a job");
    refused("", "", "document is empty", "an empty document is refused");
    refused("# only a comment\n", "", "document is empty",
            "a comment-only document is refused");
    refused("a: 99999999999999999999\n", "", "integer out of range",
            "a YAML integer past int64 is refused");
    refused("a: 1e999\n", "", "number out of range",
            "a YAML number past double is refused");

    for (int i = 0; i < 33; i++)
        sl_buf_printf(&b, "[");
    for (int i = 0; i < 33; i++)
        sl_buf_printf(&b, "]");
    ok(sl_doc_decode(b.data + 1, b.len - 2, false, &v, &err) == 0,
       "32 levels of nesting are accepted");
    json_decref(v);
    v = NULL;
    ok(sl_doc_decode(b.data, b.len, false, &v, &err) == -EINVAL &&
           strstr(err.text, "nesting deeper than 32"),
       "33 levels of JSON nesting are refused");
    b.len = 0;
    sl_buf_printf(&b, "a:");
    for (int i = 0; i < 40; i++)
        sl_buf_printf(&b, "\n%*sb:", 2 * (i + 1), "");
    sl_buf_printf(&b, " 1\n");
    ok(sl_doc_decode(b.data, b.len, false, &v, &err) == -EINVAL &&
           strstr(err.text, "nesting deeper than 32") &&
           strstr(err.text, "line 33"),
       "33 levels of YAML nesting are refused at the line (%s)", err.text);
    b.len = 0;
    for (int i = 0; i < 100000; i++)
        sl_buf_printf(&b, "[");
    ok(sl_doc_decode(b.data, b.len, false, &v, &err) == -EINVAL,
       "100000 open brackets are refused without deep recursion");
    sl_buf_fini(&b);

    big = malloc(SL_SPEC_MAX_BYTES + 1);
    memset(big, ' ', SL_SPEC_MAX_BYTES + 1);
    memcpy(big, "a: 1", 4);
    ok(sl_job_spec_parse(big, SL_SPEC_MAX_BYTES + 1, &s, &err) == -EFBIG,
       "a document over 1 MiB is refused with -EFBIG");
    ok(sl_doc_decode(big, SL_SPEC_MAX_BYTES, false, &v, &err) == 0,
       "a document of exactly 1 MiB is read");
    json_decref(v);
    free(big);
}

static void scalar_types(void)
{
    static const char *doc =
        "i: 12\nn: -3\nd: 1.5\nt: true\nf: False\nz: ~\nq: '12'\ny: yes\n"
        "e: 1e3\nnl: null\nempty:\nh: 0x10\nv: v1.2\nqq: \"true\"\n"
        "s: !!str 12\n";
    json_t *v = NULL;
    struct sl_error err;

    if (!ok(sl_doc_decode(doc, strlen(doc), false, &v, &err) == 0,
            "plain scalars decode"))
        return;
    ok(json_is_integer(json_object_get(v, "i")), "a plain 12 is an integer");
    is_int(json_integer_value(json_object_get(v, "n")), -3,
           "a plain -3 is a negative integer");
    ok(json_is_real(json_object_get(v, "d")), "a plain 1.5 is a number");
    ok(json_is_true(json_object_get(v, "t")), "a plain true is a boolean");
    ok(json_is_false(json_object_get(v, "f")), "a plain False is a boolean");
    ok(json_is_null(json_object_get(v, "z")), "~ is null");
    ok(json_is_null(json_object_get(v, "nl")), "null is null");
    ok(json_is_null(json_object_get(v, "empty")), "an empty value is null");
    ok(json_is_string(json_object_get(v, "q")), "a quoted '12' is a string");
    ok(json_is_string(json_object_get(v, "qq")), "a quoted \"true\" is a string");
    ok(json_is_string(json_object_get(v, "y")), "yes stays a string");
    ok(json_is_real(json_object_get(v, "e")), "1e3 is a number");
    ok(json_is_string(json_object_get(v, "h")), "0x10 stays a string");
    ok(json_is_string(json_object_get(v, "v")), "v1.2 is a string");
    ok(json_is_string(json_object_get(v, "s")), "!!str 12 is a string");
    json_decref(v);

    v = NULL;
    ok(sl_doc_decode("a: \"\\xe9\\u00e9\"", 15, false, &v, &err) == 0 &&
           !strcmp(json_string_value(json_object_get(v, "a")),
                   "\xc3\xa9\xc3\xa9"),
       "YAML escapes decode to UTF-8");
    json_decref(v);
    v = NULL;
    ok(sl_doc_decode("a: 1\n---\nb: 2\n---\n", 18, true, &v, &err) == 0 &&
           json_array_size(v) == 2,
       "multi-document YAML gives one entry per document, empty ones skipped");
    json_decref(v);
    v = NULL;
    ok(sl_doc_decode("{\"a\": 1}", 8, true, &v, &err) == 0 &&
           json_is_array(v) && json_array_size(v) == 1,
       "a JSON object in multi mode is one document");
    json_decref(v);
}

/* spec.workdir: normalised to one spelling, bounded. */
static void workdirs(void)
{
    static const struct {
        const char *in, *want;
    } norm[] = {
        {"/srv/proj", "/srv/proj"},   {"//srv///proj/", "/srv/proj"},
        {"/srv/./proj/.", "/srv/proj"}, {"/", "/"},
        {"///", "/"},                 {"/.", "/"},
        {"/a b/\u00e9t\u00e9", "/a b/\u00e9t\u00e9"}, {"/a/...", "/a/..."},
        {"/a/.b/..c", "/a/.b/..c"},
    };
    struct sl_job_spec *s = NULL;
    struct sl_error err;
    char line[256], *big;

    ok(parse(job(""), &s, &err) == 0 && s->workdir == NULL,
       "no workdir: NULL (the account's home)");
    sl_job_spec_destroy(s);
    for (size_t i = 0; i < SL_ARRAY_LEN(norm); i++) {
        s = NULL;
        snprintf(line, sizeof(line), "  workdir: \"%s\"\n", norm[i].in);
        if (!ok(parse(job(line), &s, &err) == 0 && s->workdir &&
                    !strcmp(s->workdir, norm[i].want),
                "workdir \"%s\" is kept as \"%s\"", norm[i].in, norm[i].want))
            diag("%s: %s; got %s", err.field, err.text, s && s->workdir ? s->workdir : "-");
        sl_job_spec_destroy(s);
    }
    big = malloc(1100);
    if (!big)
        return;
    memset(big, 'a', 1100);
    big[0] = '/';
    big[1024] = '\0';
    {
        char *doc = malloc(2048);
        if (doc) {
            s = NULL;
            snprintf(doc, 2048, "apiVersion: sluice/v1\nkind: Job\nspec:\n  command: [run]\n"
                                "  workdir: %s\n", big);
            ok(parse(doc, &s, &err) == 0 && s->workdir && strlen(s->workdir) == 1024,
               "a workdir of 1024 bytes is accepted");
            sl_job_spec_destroy(s);
            big[1024] = 'a';
            big[1025] = '\0';
            snprintf(doc, 2048, "apiVersion: sluice/v1\nkind: Job\nspec:\n  command: [run]\n"
                                "  workdir: %s\n", big);
            refused(doc, "spec.workdir", "at most 1024 bytes, got 1025",
                    "a workdir of 1025 bytes is refused");
            free(doc);
        }
    }
    free(big);
    {
        json_t *doc = json_pack("{s:s, s:s, s:{s:[s], s:s%}}", "apiVersion", "sluice/v1",
                                "kind", "Job", "spec", "command", "x", "workdir",
                                "/a\0b", (size_t)4);
        s = NULL;
        ok(doc && sl_job_spec_from_json(doc, &s, &err) == -EINVAL &&
               !strcmp(err.field, "spec.workdir") && strstr(err.text, "NUL"),
           "a workdir with a NUL byte is refused");
        json_decref(doc);
    }
}

static void misc(void)
{
    struct sl_job_spec *s = NULL;
    struct sl_error err;

    errno = 42;
    sl_job_spec_destroy(NULL);
    is_int(errno, 42, "destroy accepts NULL and preserves errno");
    ok(parse(job("  resources: {cpus: \"250m\"}\n"), &s, &err) == 0 &&
           s->cpu_milli == 250,
       "cpus: \"250m\" is 250 milli-CPUs");
    sl_job_spec_destroy(s);
    ok(parse(job("  resources: {cpus: 0.5, memory: 512Mi}\n"), &s, &err) == 0 &&
           s->cpu_milli == 500 && s->mem_bytes == 512LL << 20,
       "cpus: 0.5 is 500 milli-CPUs and 512Mi is read");
    sl_job_spec_destroy(s);
    ok(parse(job("  resources: {cpuMilli: 1500, memory: 1024}\n"), &s, &err) ==
               0 &&
           s->cpu_milli == 1500 && s->mem_bytes == 1024,
       "cpuMilli and an integer memory are read");
    sl_job_spec_destroy(s);
    ok(parse(job("  maxRuntime: 90\n  resources: {gpuMilli: 250}\n"
                 "  topology: same-node\n"),
             &s, &err) == 0 &&
           s->max_runtime_ms == 90000 && s->gpu_milli == 250 &&
           s->topology == SL_TOPO_SAME_NODE,
       "integer maxRuntime is seconds; gpuMilli and topology are read");
    sl_job_spec_destroy(s);
    ok(parse(job("  checkpoint: {signal: USR2, grace: 0}\n"), &s, &err) == 0 &&
           s->ckpt_signal == SIGUSR2 && s->ckpt_grace_ms == 0,
       "a signal without SIG and a zero grace are accepted");
    sl_job_spec_destroy(s);
    ok(parse("\n\n  {\"apiVersion\": \"sluice/v1\", \"kind\": \"Job\", "
             "\"spec\": {\"command\": [\"x\"]}}",
             &s, &err) == 0,
       "JSON is detected after leading blank lines");
    sl_job_spec_destroy(s);
    workdirs();
}

static void names(void)
{
    ok(sl_name_valid("a"), "a one-letter name is valid");
    ok(sl_name_valid("team-a1"), "letters, digits and '-' are valid");
    ok(sl_name_valid("0abc"), "a name may start with a digit");
    ok(!sl_name_valid(""), "an empty name is invalid");
    ok(!sl_name_valid("-a"), "a leading '-' is invalid");
    ok(!sl_name_valid("a-"), "a trailing '-' is invalid");
    ok(!sl_name_valid("A"), "capitals are invalid");
    ok(!sl_name_valid("a_b"), "'_' is invalid");
    ok(!sl_name_valid("a.b"), "'.' is invalid");
    ok(!sl_name_valid(NULL), "NULL is invalid");
    ok(sl_name_valid("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
       "a 63-character name is valid");
    ok(!sl_name_valid("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
       "a 64-character name is invalid");
}

int main(void)
{
    example();
    defaults();
    round_trips();
    bounds();
    sizes();
    nul_bytes();
    hostile_yaml();
    scalar_types();
    misc();
    names();
    return done_testing();
}
