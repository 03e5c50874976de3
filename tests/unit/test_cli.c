/*
 * test_cli.c - unit tests of the pure parts of `sluice`: option parsing,
 * argument values, human units, tables and CSV, the job document of
 * `sluice run`, and Slurm hostlists and configuration (`sluice slurm
 * gres-conf`). No network: the files under test are compiled in directly
 * (the unit binaries link only libsluice-core.a).
 */
#include "../../src/cli/args.c"
#include "../../src/cli/format.c"
#include "../../src/cli/jobdoc.c"
#include "../../src/cli/export.c"
#include "../../src/cli/slurmconf.c"
#include "../../src/cli/yaml_out.c"

#include <stdlib.h>
#include <unistd.h>

#include "../tap.h"

/* Run cli_next over a NULL-terminated argument list (argv[0] = "cmd")
 * and render what it returned as "id:value" words. */
static char *parse_all(struct sl_cli_ctx *ctx, const struct sl_cli_opt *opts,
                       bool stop_at_pos, char **argv, char *out, size_t size)
{
    struct sl_cli_parser p;
    struct sl_error err = {{0}, {0}};
    const char *v;
    size_t o = 0;
    int argc = 0, id;

    while (argv[argc])
        argc++;
    out[0] = '\0';
    sl_cli_parser_init(&p, argc, argv, 1, stop_at_pos);
    while ((id = sl_cli_next(&p, opts, ctx, &v, &err)) != SL_CLI_ARG_END) {
        int n;
        if (id == SL_CLI_ARG_ERROR) {
            snprintf(out + o, size - o, "%sERR[%s]", o ? " " : "", err.text);
            return out;
        }
        if (id == SL_CLI_ARG_HELP)
            n = snprintf(out + o, size - o, "%sHELP", o ? " " : "");
        else if (id == SL_CLI_ARG_POS)
            n = snprintf(out + o, size - o, "%sPOS:%s", o ? " " : "", v);
        else
            n = snprintf(out + o, size - o, "%s%d:%s", o ? " " : "", id,
                         v ? v : "-");
        o += (size_t)n;
    }
    return out;
}

static const struct sl_cli_opt test_opts[] = {
    {"name", '\0', true, 1},
    {"follow", 'f', false, 2},
    {"file", 'F', true, 3},
    {NULL, '\0', false, 0},
};

static void test_parser(void)
{
    struct sl_cli_ctx ctx = {0};
    char out[512];

    {
        char *argv[] = {"cmd", "--name", "a", "pos", "--name=b", NULL};
        is_str(parse_all(&ctx, test_opts, false, argv, out, sizeof(out)),
               "1:a POS:pos 1:b",
               "long options take values as '--k v' and '--k=v'");
    }
    {
        char *argv[] = {"cmd",      "-o",         "json",      "x",
                        "--server", "http://h:1", "--token=t", NULL};
        is_str(parse_all(&ctx, test_opts, false, argv, out, sizeof(out)),
               "POS:x", "global options are consumed after the command");
        is_int(ctx.output, SL_CLI_OUT_JSON, "-o json sets the output format");
        is_str(ctx.server, "http://h:1", "--server sets the server");
        is_str(ctx.token, "t", "--token=t sets the token");
    }
    {
        char *argv[] = {"cmd", "-ocsv", NULL};
        parse_all(&ctx, test_opts, false, argv, out, sizeof(out));
        is_int(ctx.output, SL_CLI_OUT_CSV, "-ocsv works attached");
    }
    {
        char *argv[] = {"cmd", "-o", "xml", NULL};
        is_str(parse_all(&ctx, test_opts, false, argv, out, sizeof(out)),
               "ERR[-o: must be table, wide, json, yaml or csv, got 'xml']",
               "an unknown output format is refused by name");
    }
    {
        char *argv[] = {"cmd", "-o", "wide", NULL};
        parse_all(&ctx, test_opts, false, argv, out, sizeof(out));
        ok(ctx.output == SL_CLI_OUT_TABLE && ctx.wide, "-o wide is a table, wide");
    }
    {
        char *argv[] = {"cmd", "-o", "yaml", NULL};
        parse_all(&ctx, test_opts, false, argv, out, sizeof(out));
        ok(ctx.output == SL_CLI_OUT_JSON && !ctx.wide && sl_cli_yaml(),
           "-o yaml: the commands print their document, as YAML");
        sl_cli_set_yaml(false);
    }
    {
        struct sl_cli_ctx w = {0};
        struct sl_cli_command jobs = {"jobs", NULL, "", ""}, run = {"run", NULL, "", ""};
        char *a1[] = {"cmd", "--watch", NULL}, *a2[] = {"cmd", "--interval", "500ms", NULL},
             *a3[] = {"cmd", "--interval", "10ms", NULL}, *a4[] = {"cmd", "-w", NULL};
        parse_all(&w, test_opts, false, a1, out, sizeof(out));
        ok(w.watch && w.interval_ms == 0, "--watch before the command is taken (main checks it)");
        w = (struct sl_cli_ctx){.cmd = &jobs};
        parse_all(&w, test_opts, false, a2, out, sizeof(out));
        ok(w.watch && w.interval_ms == 500, "--interval 500ms sets the interval and --watch");
        is_str(parse_all(&w, test_opts, false, a3, out, sizeof(out)),
               "ERR[--interval: must be a duration from 100ms to 1h, got '10ms']",
               "an interval under 100ms is refused");
        w = (struct sl_cli_ctx){.cmd = &run};
        is_str(parse_all(&w, test_opts, false, a4, out, sizeof(out)),
               "ERR[--watch: only for jobs, nodes and queues, not run]",
               "--watch of a command that changes things is refused");
        ok(sl_cli_watchable("nodes") && sl_cli_watchable("queues") && !sl_cli_watchable("cancel"),
           "jobs, nodes and queues may be watched, nothing else");
    }
    {
        char *argv[] = {"cmd", "--server", "ftp://x", NULL};
        is_str(parse_all(&ctx, test_opts, false, argv, out, sizeof(out)),
               "ERR[--server: must be an http:// or https:// URL, got "
               "'ftp://x']",
               "a non-HTTP server URL is refused");
    }
    {
        char *argv[] = {"cmd", "-f", "-F", "-", "--", "--name", "x", NULL};
        is_str(parse_all(&ctx, test_opts, false, argv, out, sizeof(out)),
               "2:- 3:- POS:--name POS:x",
               "'-' is a value and '--' ends the options");
    }
    {
        char *argv[] = {"cmd", "a", "--name", "b", NULL};
        is_str(parse_all(&ctx, test_opts, true, argv, out, sizeof(out)),
               "POS:a POS:--name POS:b",
               "with stop_at_pos the first positional ends the options");
    }
    {
        char *argv[] = {"cmd", "--name", NULL};
        is_str(parse_all(&ctx, test_opts, false, argv, out, sizeof(out)),
               "ERR[--name: needs a value]", "a missing value is an error");
    }
    {
        char *argv[] = {"cmd", "--name", "--follow", NULL};
        is_str(parse_all(&ctx, test_opts, false, argv, out, sizeof(out)),
               "ERR[--name: needs a value, got option '--follow']",
               "an option is not taken as the value of another");
    }
    {
        char *argv[] = {"cmd", "--name=--x", NULL};
        is_str(parse_all(&ctx, test_opts, false, argv, out, sizeof(out)),
               "1:--x", "'--k=--x' gives a value starting with dashes");
    }
    {
        char *argv[] = {"cmd", "--follow=1", NULL};
        is_str(parse_all(&ctx, test_opts, false, argv, out, sizeof(out)),
               "ERR[--follow: takes no value]",
               "a flag given a value is an error");
    }
    {
        char *argv[] = {"cmd", "--bogus", NULL};
        is_str(parse_all(&ctx, test_opts, false, argv, out, sizeof(out)),
               "ERR[unknown option '--bogus']", "an unknown option is named");
    }
    {
        char *argv[] = {"cmd", "-h", NULL};
        is_str(parse_all(&ctx, test_opts, false, argv, out, sizeof(out)),
               "HELP", "-h asks for help");
    }
}

static void test_values(void)
{
    struct sl_error err = {{0}, {0}};
    char buf[128];
    int64_t v = 0;

    ok(sl_cli_int_arg("--tasks", "8", 1, 1024, &v, &err) == 0 && v == 8,
       "an integer flag in range is accepted");
    ok(sl_cli_int_arg("--tasks", "x", 1, 1024, &v, &err) < 0,
       "a non-integer flag is refused");
    is_str(err.text, "--tasks: must be an integer from 1 to 1024, got 'x'",
           "the message names the flag, the range and the value");
    ok(sl_cli_int_arg("--tasks", "1025", 1, 1024, &v, &err) < 0,
       "an integer above the range is refused");
    ok(sl_cli_int_arg("--tasks", "-1", 1, 1024, &v, &err) < 0,
       "a negative integer is refused");
    ok(sl_cli_job_id("42", &v, &err) == 0 && v == 42, "a job id parses");
    ok(sl_cli_job_id("0", &v, &err) < 0, "job id 0 is refused");
    ok(sl_cli_job_id("4/2", &v, &err) < 0, "a job id cannot smuggle a path");

    ok(sl_cli_states_parse("running", buf, sizeof(buf), &err) == 0 &&
           strcmp(buf, "Running") == 0,
       "a state name is case-insensitive and canonicalised");
    ok(sl_cli_states_parse("PENDING,failed,Pending", buf, sizeof(buf), &err) ==
               0 &&
           strcmp(buf, "Pending,Failed") == 0,
       "a comma list is canonicalised without duplicates");
    ok(sl_cli_states_parse("ALL", buf, sizeof(buf), &err) == 0 &&
           strcmp(buf, "all") == 0,
       "'all' is accepted in any case");
    ok(sl_cli_states_parse("running,done", buf, sizeof(buf), &err) < 0,
       "an unknown state is refused");
    ok(strstr(err.text, "--state: unknown state 'done'") != NULL,
       "and the message names it");
    ok(sl_cli_states_parse("running,", buf, sizeof(buf), &err) < 0,
       "an empty name in the list is refused");
    ok(sl_cli_state_finished("Succeeded") && sl_cli_state_finished("lost") &&
           sl_cli_state_finished("Cancelled") &&
           sl_cli_state_finished("Failed") && sl_cli_state_finished("timeout"),
       "Succeeded, Failed, Cancelled, Lost and Timeout are finished");
    ok(!sl_cli_state_finished("Running") &&
           !sl_cli_state_finished("Preempted") && !sl_cli_state_finished("") &&
           !sl_cli_state_finished(NULL),
       "Running, Preempted, empty and NULL are not finished");

    is_str(sl_cli_doc_type(" \n{\"a\":1}", 9, false), "application/json",
           "a document starting with '{' is JSON");
    is_str(sl_cli_doc_type("kind: Job\n", 10, false), "application/yaml",
           "anything else is YAML");
    is_str(sl_cli_doc_type("[{}]", 4, false), "application/yaml",
           "'[' is YAML for a job");
    is_str(sl_cli_doc_type("[{}]", 4, true), "application/json",
           "'[' is JSON for manifests");
    is_str(sl_cli_doc_type("\xEF\xBB\xBF{}", 5, false), "application/json",
           "a byte order mark is skipped");
    ok(sl_cli_doc_type(" \n\t", 3, false) == NULL,
       "a blank document has no type");
}

static void test_read_input(void)
{
    struct sl_error err = {{0}, {0}};
    char path[] = "/tmp/test_cli_XXXXXX";
    char *buf = NULL;
    size_t len = 0;
    int fd = mkstemp(path);

    ok(fd >= 0 && write(fd, "0123456789", 10) == 10, "a temp file is made");
    if (fd >= 0)
        close(fd);
    ok(sl_cli_read_input(path, 10, &buf, &len, &err) == 0 && len == 10 && buf &&
           strcmp(buf, "0123456789") == 0,
       "a file of exactly the cap is read whole");
    free(buf);
    buf = NULL;
    ok(sl_cli_read_input(path, 9, &buf, &len, &err) == -EFBIG && !buf,
       "a file over the cap is refused");
    ok(strstr(err.text, "larger than") != NULL, "and the message says so");
    unlink(path);
    ok(sl_cli_read_input(path, 9, &buf, &len, &err) == -ENOENT,
       "a missing file is -ENOENT");
    ok(strstr(err.text, "No such file") != NULL,
       "and the message names the reason");
}

static void test_units(void)
{
    char b[64];
    int64_t ms = 0;

    is_str(sl_cli_fmt_duration(0, b, sizeof(b)), "0s", "0 ms is 0s");
    is_str(sl_cli_fmt_duration(-5000, b, sizeof(b)), "0s",
           "a negative duration (clock skew) is 0s");
    is_str(sl_cli_fmt_duration(45999, b, sizeof(b)), "45s",
           "seconds are whole");
    is_str(sl_cli_fmt_duration(192000, b, sizeof(b)), "3m12s",
           "minutes and seconds");
    is_str(sl_cli_fmt_duration(7500000, b, sizeof(b)), "2h5m",
           "hours and minutes");
    is_str(sl_cli_fmt_duration(300000, b, sizeof(b)), "5m", "5 min is 5m, not 5m0s");
    is_str(sl_cli_fmt_duration(7200000, b, sizeof(b)), "2h", "2 h is 2h");
    is_str(sl_cli_fmt_duration(259200000, b, sizeof(b)), "3d", "72 h is 3d");
    is_str(sl_cli_fmt_duration(90000000, b, sizeof(b)), "1d1h",
           "days and hours");

    is_str(sl_cli_fmt_bytes(512, b, sizeof(b)), "512B", "bytes under 1Ki");
    is_str(sl_cli_fmt_bytes(1536, b, sizeof(b)), "1.5Ki", "1.5Ki");
    is_str(sl_cli_fmt_bytes(17179869184LL, b, sizeof(b)), "16.0Gi", "16.0Gi");
    is_str(sl_cli_fmt_bytes(25000000000LL, b, sizeof(b)), "23.3Gi",
           "decimal gigabytes in binary units");
    is_str(sl_cli_fmt_bytes(1073698000LL, b, sizeof(b)), "1.0Gi",
           "rounding up to 1024.0 moves to the next unit");
    is_str(sl_cli_fmt_bytes(INT64_MAX, b, sizeof(b)), "8.0Ei",
           "the largest value does not overflow");

    is_str(sl_cli_fmt_milli(500, b, sizeof(b)), "0.5", "500 milli is 0.5");
    is_str(sl_cli_fmt_milli(2000, b, sizeof(b)), "2", "2000 milli is 2");
    is_str(sl_cli_fmt_milli(1250, b, sizeof(b)), "1.25", "1250 is 1.25");
    is_str(sl_cli_fmt_milli(1, b, sizeof(b)), "0.001", "1 is 0.001");

    ok(sl_cli_parse_time("2026-12-02T11:00:00.000Z", &ms) == 0 &&
           ms == 1796209200000LL,
       "RFC 3339 UTC parses to epoch ms");
    ok(sl_cli_parse_time("2026-12-02T12:00:00.5+01:00", &ms) == 0 &&
           ms == 1796209200500LL,
       "an offset and a short fraction are honoured");
    ok(sl_cli_parse_time("2026-12-02 11:00:00Z", &ms) == 0,
       "a space may separate date and time");
    ok(sl_cli_parse_time("2026-12-02T11:00:00", &ms) < 0,
       "a time without a zone is refused");
    ok(sl_cli_parse_time("2026-13-02T11:00:00Z", &ms) < 0,
       "month 13 is refused");
    ok(sl_cli_parse_time(NULL, &ms) < 0, "NULL is refused");
}

static json_t *load(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    if (!v)
        diag("bad test JSON: %s", text);
    return v;
}

static void test_jobs(void)
{
    json_t *a = load("{\"spec\":{\"tasks\":2,\"resources\":{\"gpus\":4}}}");
    json_t *b = load("{\"spec\":{\"apiVersion\":\"sluice/v1\",\"spec\":{"
                     "\"tasks\":3,\"resources\":{\"gpus\":0,"
                     "\"gpuMilli\":250}}}}");
    json_t *c = load("{\"spec\":{\"command\":[\"true\"]}}");
    json_t *pend = load("{\"submitted_at\":\"2026-12-02T11:00:00.000Z\"}");
    json_t *run = load("{\"submitted_at\":\"2026-12-02T11:00:00.000Z\","
                       "\"started_at\":\"2026-12-02T11:01:00.000Z\"}");
    json_t *fin = load("{\"submitted_at\":\"2026-12-02T11:00:00.000Z\","
                       "\"started_at\":\"2026-12-02T11:01:00.000Z\","
                       "\"finished_at\":\"2026-12-02T11:04:12.000Z\"}");
    int64_t now = 1796209200000LL + 600000; /* 11:10 */
    char buf[64];

    is_str(sl_cli_job_gpus(a, buf, sizeof(buf)), "8",
           "GPUS is tasks x whole GPUs");
    is_str(sl_cli_job_gpus(b, buf, sizeof(buf)), "0.75",
           "GPUS is tasks x milli, as a decimal, in a nested document");
    is_str(sl_cli_job_gpus(c, buf, sizeof(buf)), "0",
           "a job without resources uses no GPU");
    is_str(sl_cli_job_time(pend, now, buf, sizeof(buf)), "10m",
           "a pending job's time is its age");
    is_str(sl_cli_job_time(run, now, buf, sizeof(buf)), "9m",
           "a running job's time counts from its start");
    is_str(sl_cli_job_time(fin, now, buf, sizeof(buf)), "3m12s",
           "a finished job's time is its run time");
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(pend);
    json_decref(run);
    json_decref(fin);
}

static void test_job_idle(void)
{
    json_t *busy = load("{\"state\":\"Running\",\"idle\":null,\"attached\":true}");
    json_t *batch = load("{\"state\":\"Running\",\"idle\":{\"since\":"
                         "\"2026-12-02T11:00:00.000Z\",\"idle_ms\":0,\"interactive\":false,"
                         "\"ends_at\":null}}");
    json_t *sess = load("{\"state\":\"Running\",\"idle\":{\"since\":"
                        "\"2026-12-02T11:00:00.000Z\",\"idle_ms\":0,\"interactive\":true,"
                        "\"ends_at\":\"2026-12-02T12:00:00.000Z\"}}");
    int64_t now = 1796209200000LL + 600000; /* 11:10 */
    char buf[256];

    is_str(sl_cli_job_state_cell(busy, buf, sizeof(buf)), "Running",
           "a job that is not idle shows its state");
    ok(!sl_cli_job_idle_text(busy, now, buf, sizeof(buf)), "and no idle text");
    is_str(sl_cli_job_state_cell(batch, buf, sizeof(buf)), "Running (idle)",
           "an idle-but-allocated job is marked idle");
    is_str(sl_cli_job_idle_text(batch, now, buf, sizeof(buf)),
           "idle but allocated: GPUs idle for 10m (since 2026-12-02T11:00:00.000Z)",
           "saying for how long");
    is_str(sl_cli_job_state_cell(sess, buf, sizeof(buf)), "Running (idle session)",
           "an idle interactive job is an idle session");
    is_str(sl_cli_job_idle_text(sess, now, buf, sizeof(buf)),
           "idle interactive session: GPUs idle for 10m (since 2026-12-02T11:00:00.000Z); "
           "the idle timeout ends it at 2026-12-02T12:00:00.000Z",
           "saying when the idle timeout ends it");
    json_decref(busy);
    json_decref(batch);
    json_decref(sess);
}

/* Print 't' in 'fmt' into a new string (caller frees). */
static char *render(struct sl_cli_table *t, enum sl_cli_output fmt)
{
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);

    if (!fp)
        return NULL;
    sl_cli_table_print(t, fp, fmt, 0);
    fclose(fp);
    return text;
}

static void test_table(void)
{
    static const char *const cols[] = {"ID", "NAME", "REASON"};
    const char *r1[] = {"1", "a", "short"};
    const char *r2[] = {"22", "\x1b[31mred", NULL};
    const char *r3[] = {"3", "h\xc3\xa9", "a reason that is far too long"};
    const char *r4[] = {"4", "x,y", "say \"hi\"\nbye"};
    struct sl_cli_table *t = sl_cli_table_create(3, cols);
    char *s;

    ok(t != NULL, "a table is made");
    sl_cli_table_max_width(t, 2, 12);
    ok(sl_cli_table_add(t, r1) == 0 && sl_cli_table_add(t, r2) == 0 &&
           sl_cli_table_add(t, r3) == 0 && sl_cli_table_add(t, r4) == 0,
       "rows are added");
    s = render(t, SL_CLI_OUT_TABLE);
    is_str(s,
           "ID  NAME      REASON\n"
           "1   a         short\n"
           "22  ?[31mred  -\n"
           "3   h\xc3\xa9        a reason ...\n"
           "4   x,y       say \"hi\" bye\n",
           "a table aligns by characters, escapes control bytes, prints "
           "NULL as '-' and cuts long cells");
    free(s);
    s = render(t, SL_CLI_OUT_CSV);
    is_str(s,
           "ID,NAME,REASON\n"
           "1,a,short\n"
           "22,\x1b[31mred,\n"
           "3,h\xc3\xa9,a reason that is far too long\n"
           "4,\"x,y\",\"say \"\"hi\"\"\nbye\"\n",
           "CSV quotes what needs it, keeps data whole and NULL empty");
    free(s);
    sl_cli_table_destroy(t);
    errno = EDOM;
    sl_cli_table_destroy(NULL);
    is_int(errno, EDOM, "destroy accepts NULL and keeps errno");
}

static void test_shell_join(void)
{
    json_t *argv = load("[\"python\",\"-c\",\"print('hi there')\",\"\","
                        "\"a=b\"]");
    char *s = sl_cli_shell_join(argv);

    is_str(s, "python -c 'print('\\''hi there'\\'')' '' a=b",
           "a command is shown quoted as a shell needs it");
    free(s);
    json_decref(argv);
}

/* Build the `run` document from a NULL-terminated argument list. */
static int run_doc(struct sl_cli_ctx *ctx, char **argv, json_t **doc,
                   struct sl_error *err)
{
    int argc = 0;

    while (argv[argc])
        argc++;
    *doc = NULL;
    return sl_cli_run_doc(ctx, argc, argv, doc, NULL, err);
}

/* The spec.env and spec.workdir of `run ARGS` in the context 'ctx'; the
 * document's env as compact JSON in 'env_out', its workdir in 'wd_out'
 * ("-" when absent). Returns run_doc's answer. */
static int run_env(struct sl_cli_ctx *ctx, char **argv, char *env_out, size_t env_size,
                   char *wd_out, size_t wd_size, struct sl_error *err)
{
    json_t *doc = NULL, *spec;
    char *text;
    int rc = run_doc(ctx, argv, &doc, err);

    spec = json_object_get(doc, "spec");
    text = json_object_get(spec, "env") ? json_dumps(json_object_get(spec, "env"),
                                                     JSON_COMPACT | JSON_SORT_KEYS)
                                        : NULL;
    snprintf(env_out, env_size, "%s", text ? text : "-");
    snprintf(wd_out, wd_size, "%s",
             json_object_get(spec, "workdir") ? json_string_value(json_object_get(spec, "workdir"))
                                              : "-");
    free(text);
    json_decref(doc);
    return rc;
}

/* --chdir and --export: the client's directory and environment. */
static void test_run_where_and_env(void)
{
    static char *const envp[] = {
        "PATH=/usr/bin:/home/u/bin", "HOME=/home/u", "USER=u", "LOGNAME=u",
        "SHELL=/bin/zsh", "PWD=/home/u/proj", "OLDPWD=/", "SHLVL=2", "_=/usr/bin/sluice",
        "SLUICE_TOKEN=sk-secret", "SLUICE_SERVER=http://x", "SLUICE_JOB_ID=9",
        "CUDA_VISIBLE_DEVICES=0", "SSH_AUTH_SOCK=/tmp/agent", "GITHUB_TOKEN=ghp",
        "AWS_SECRET_ACCESS_KEY=k", "DB_PASSWORD=p", "my_api_key=z", "VIRTUAL_ENV=/home/u/venv",
        "LANG=C.UTF-8", "EPOCHS=3", "BASH_FUNC_f%%=() { :; }", "1BAD=x", "NOEQUALS",
        "EMPTY=", NULL};
    struct sl_cli_ctx ctx = {.envp = envp, .cwd = "/home/u/proj"};
    struct sl_error err = {{0}, {0}};
    char env[2048], wd[1100], *big;

    {
        char *argv[] = {"run", "--", "./train.sh", NULL};
        is_int(run_env(&ctx, argv, env, sizeof(env), wd, sizeof(wd), &err), 0,
               "run with the defaults");
        is_str(wd, "/home/u/proj", "the job starts in the current directory by default");
        is_str(env,
               "{\"EMPTY\":\"\",\"EPOCHS\":\"3\",\"LANG\":\"C.UTF-8\","
               "\"PATH\":\"/usr/bin:/home/u/bin\",\"VIRTUAL_ENV\":\"/home/u/venv\"}",
               "ALL by default: the client's variables but the executor's, the "
               "session's, Sluice's and secret-looking ones");
    }
    {
        char *argv[] = {"run", "--export", "NONE", "--chdir", "/data//x/", "true", NULL};
        is_int(run_env(&ctx, argv, env, sizeof(env), wd, sizeof(wd), &err), 0,
               "--export NONE --chdir /data//x/");
        is_str(env, "-", "NONE sends no variable");
        is_str(wd, "/data//x/", "an absolute --chdir is sent as given (the server normalises)");
    }
    {
        char *argv[] = {"run", "--export", "EPOCHS,GITHUB_TOKEN,UNSET,CUDA_VISIBLE_DEVICES",
                        "-e", "EPOCHS=5", "--chdir", "data", "true", NULL};
        is_int(run_env(&ctx, argv, env, sizeof(env), wd, sizeof(wd), &err), 0,
               "--export with a list");
        is_str(env,
               "{\"CUDA_VISIBLE_DEVICES\":\"0\",\"EPOCHS\":\"5\",\"GITHUB_TOKEN\":\"ghp\"}",
               "a list sends those named and set, a secret only when named; -e wins; a "
               "reserved one is sent for the server to refuse");
        is_str(wd, "/home/u/proj/data", "a relative --chdir is under the current directory");
    }
    {
        char *argv[] = {"run", "--export", "ALL", "--export", "NONE", "true", NULL};
        run_env(&ctx, argv, env, sizeof(env), wd, sizeof(wd), &err);
        is_str(env, "-", "the last --export counts");
    }
    {
        char *argv[] = {"run", "--export", "A,,B", "true", NULL};
        ok(run_env(&ctx, argv, env, sizeof(env), wd, sizeof(wd), &err) == -EINVAL &&
               strstr(err.text, "--export: must be ALL, NONE or a comma list"),
           "an empty name in the list is refused: %s", err.text);
    }
    {
        char *argv[] = {"run", "--export", "all", "true", NULL};
        ok(run_env(&ctx, argv, env, sizeof(env), wd, sizeof(wd), &err) == 0 &&
               strstr(env, "\"all\"") == NULL && strcmp(env, "-") == 0,
           "'all' in lower case is a variable name, unset here: nothing sent");
    }
    {
        char *argv[] = {"run", "--chdir", "", "true", NULL};
        ok(run_env(&ctx, argv, env, sizeof(env), wd, sizeof(wd), &err) == -EINVAL &&
               strstr(err.text, "--chdir: must not be empty"),
           "an empty --chdir is refused");
    }
    {
        struct sl_cli_ctx lost = {.envp = envp, .cwd = ""};
        char *argv[] = {"run", "true", NULL};
        ok(run_env(&lost, argv, env, sizeof(env), wd, sizeof(wd), &err) == -EINVAL &&
               strstr(err.text, "--chdir: the current directory cannot be resolved"),
           "an unresolvable current directory without --chdir is refused, not "
           "replaced by another");
        char *argv2[] = {"run", "--chdir", "/srv", "true", NULL};
        ok(run_env(&lost, argv2, env, sizeof(env), wd, sizeof(wd), &err) == 0 &&
               strcmp(wd, "/srv") == 0,
           "an absolute --chdir needs no current directory");
    }
    /* bounds: a value over 4096 bytes is left out of ALL, refused by name */
    if ((big = malloc(5000))) {
        char *const benv[] = {big, "SMALL=1", NULL};
        struct sl_cli_ctx bctx = {.envp = benv, .cwd = "/"};
        char *argv[] = {"run", "true", NULL};
        char *argv2[] = {"run", "--export", "LONGV", "true", NULL};

        memcpy(big, "LONGV=", 6);
        memset(big + 6, 'x', 4097);
        big[6 + 4097] = '\0';
        ok(run_env(&bctx, argv, env, sizeof(env), wd, sizeof(wd), &err) == 0 &&
               strcmp(env, "{\"SMALL\":\"1\"}") == 0 && strcmp(wd, "/") == 0,
           "ALL leaves out a value over 4096 bytes (%s)", env);
        ok(run_env(&bctx, argv2, env, sizeof(env), wd, sizeof(wd), &err) == -EINVAL &&
               strstr(err.text, "--export: the value of LONGV is 4097 bytes"),
           "a named one is refused, naming it: %s", err.text);
        free(big);
    }
    {
        /* more than 256 variables */
        static char names[300][16];
        static char *many[301];
        struct sl_cli_ctx mctx = {.envp = many, .cwd = "/"};
        char *argv[] = {"run", "true", NULL};

        for (int i = 0; i < 300; i++) {
            snprintf(names[i], sizeof(names[i]), "V%d=1", i);
            many[i] = names[i];
        }
        many[300] = NULL;
        ok(run_env(&mctx, argv, env, sizeof(env), wd, sizeof(wd), &err) == -EINVAL &&
               strstr(err.text, "--export ALL: more than 256 variables"),
           "more than 256 variables are refused with a way out: %s", err.text);
    }
    ok(sl_cli_export_skipped("GIT_AUTHOR_NAME") && !sl_cli_export_skipped("PYTHONPATH") &&
           sl_cli_export_skipped("SSH_CONNECTION") && sl_cli_export_skipped("Sluice_x") == false,
       "the rule: AUTH anywhere is skipped, SSH_* too; other names pass");
}

/* -i, -t and the bundle -it: an interactive job, how it attaches. */
static void test_run_interactive(void)
{
    static char *const envp[] = {"TERM=xterm-256color", NULL};
    struct sl_cli_ctx ctx = {.envp = envp};
    struct sl_error err = {{0}, {0}};
    json_t *doc = NULL, *spec;
    int attach = -1;

    {
        char *argv[] = {"run", "-it", "--export", "NONE", "--", "bash", NULL};
        is_int(sl_cli_run_doc(&ctx, 6, argv, &doc, &attach, &err), 0, "run -it is accepted");
        if (!doc)
            diag("%s", err.text);
        spec = json_object_get(doc, "spec");
        ok(json_is_true(json_object_get(spec, "interactive")), "-it makes the job interactive");
        is_str(json_string_value(json_object_get(json_object_get(spec, "env"), "TERM")),
               "xterm-256color", "and sends the client's TERM");
        is_int(attach, SL_CLI_ATTACH_TTY, "-it attaches with a terminal");
        json_decref(doc);
    }
    {
        char *argv[] = {"run", "-i", "-e", "TERM=dumb", "--", "sh", NULL};
        is_int(sl_cli_run_doc(&ctx, 6, argv, &doc, &attach, &err), 0, "run -i is accepted");
        is_str(json_string_value(json_object_get(
                   json_object_get(json_object_get(doc, "spec"), "env"), "TERM")),
               "dumb", "a TERM given with -e wins");
        is_int(attach, SL_CLI_ATTACH_PIPE, "-i alone attaches without a terminal");
        json_decref(doc);
    }
    {
        char *argv[] = {"run", "--", "true", NULL};
        is_int(sl_cli_run_doc(&ctx, 3, argv, &doc, &attach, &err), 0, "run without -i");
        ok(!json_object_get(json_object_get(doc, "spec"), "interactive"),
           "is not interactive");
        is_int(attach, SL_CLI_ATTACH_NONE, "and does not attach");
        json_decref(doc);
    }
    {
        char *argv[] = {"run", "-ia", "0-3", "--", "true", NULL};
        ok(sl_cli_run_doc(&ctx, 5, argv, &doc, &attach, &err) < 0 &&
               strstr(err.text, "-a: takes a value"),
           "a flag that takes a value cannot be bundled (%s)", err.text);
    }
}

static void test_run_doc(void)
{
    struct sl_cli_ctx ctx = {0};
    struct sl_error err = {{0}, {0}};
    json_t *doc = NULL, *want;
    char *text;

    {
        char *argv[] = {
            "run",       "--name",      "train",      "--team",
            "vision",    "--project",   "p1",         "--queue",
            "q",         "--gpus",      "2",          "--gpu-model",
            "A100,H100", "--gpu-model", "A100",       "--cpus",
            "0.5",       "--memory",    "4Gi",        "--tasks",
            "2",         "--priority",  "production", "--max-runtime",
            "1h30m",     "--retries",   "3",          "--image",
            "img:1",     "--env",       "A=1",        "-e",
            "B=x=y",     "--topology",  "same-node",  "-o",
            "json",      "--",          "python",     "train.py",
            "-o",        "x",           NULL};
        ok(run_doc(&ctx, argv, &doc, &err) == 0, "every run flag is accepted");
        want = load(
            "{\"apiVersion\":\"sluice/v1\",\"kind\":\"Job\","
            "\"metadata\":{\"name\":\"train\",\"team\":\"vision\","
            "\"project\":\"p1\"},"
            "\"spec\":{\"queue\":\"q\",\"priorityClass\":\"production\","
            "\"image\":\"img:1\",\"tasks\":2,\"maxRuntime\":\"1h30m\","
            "\"retries\":3,\"topology\":\"same-node\","
            "\"command\":[\"python\",\"train.py\",\"-o\",\"x\"],"
            "\"env\":{\"A\":\"1\",\"B\":\"x=y\"},"
            "\"resources\":{\"gpus\":2,\"cpuMilli\":500,\"memory\":\"4Gi\","
            "\"gpuModels\":[\"A100\",\"H100\"]}}}");
        ok(json_equal(doc, want), "the document holds every flag");
        if (!json_equal(doc, want)) {
            text = json_dumps(doc, JSON_COMPACT);
            diag("got %s", text ? text : "(null)");
            free(text);
        }
        is_int(ctx.output, SL_CLI_OUT_JSON,
               "a global option among the run flags is applied");
        json_decref(want);
        json_decref(doc);
    }
    {
        char *argv[] = {"run", "--cpus", "2",      "--gpu-milli", "250",
                        "sh",  "-c",     "exit 0", NULL};
        ok(run_doc(&ctx, argv, &doc, &err) == 0,
           "the command may start without '--'");
        want = load("{\"apiVersion\":\"sluice/v1\",\"kind\":\"Job\","
                    "\"metadata\":{},\"spec\":{\"command\":[\"sh\",\"-c\","
                    "\"exit 0\"],\"resources\":{\"cpus\":2,"
                    "\"gpuMilli\":250}}}");
        ok(json_equal(doc, want),
           "whole CPUs go as cpus and only given fields are sent");
        json_decref(want);
        json_decref(doc);
    }
    {
        char *argv[] = {"run", "--cpus", "250m", "--cpus", "1", "true", NULL};
        run_doc(&ctx, argv, &doc, &err);
        want = json_pack("{s:i}", "cpus", 1);
        ok(json_equal(
               json_object_get(json_object_get(doc, "spec"), "resources"),
               want),
           "a repeated --cpus replaces the earlier one");
        json_decref(want);
        json_decref(doc);
    }

    /* Refusals, each naming the flag. */
    {
        static const struct {
            const char *flag, *value, *message;
        } bad[] = {
            {"--tasks", "x",
             "--tasks: must be an integer from 1 to 1024, got 'x'"},
            {"--tasks", "0",
             "--tasks: must be an integer from 1 to 1024, got '0'"},
            {"--gpus", "65",
             "--gpus: must be an integer from 0 to 64, got '65'"},
            {"--gpu-milli", "1001",
             "--gpu-milli: must be an integer from 1 to 1000, got '1001'"},
            {"--cpus", "abc",
             "--cpus: must be a CPU amount such as 2, 0.5 or 250m, got "
             "'abc'"},
            {"--memory", "4XB",
             "--memory: must be a quantity such as 4Gi, 512Mi or 1G, got "
             "'4XB'"},
            {"--max-runtime", "soon",
             "--max-runtime: must be a duration such as 90s, 2h or 1h30m, "
             "got 'soon'"},
            {"--retries", "101",
             "--retries: must be an integer from 0 to 100, got '101'"},
            {"--env", "NOEQUALS", "--env: must be KEY=VALUE, got 'NOEQUALS'"},
            {"--env", "9X=1",
             "--env: '9X' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"},
            {"--topology", "ring",
             "--topology: must be any, same-node or same-domain, got 'ring'"},
            {"--name", "", "--name: must not be empty"},
        };
        for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
            char *argv[] = {
                "run", (char *)bad[i].flag, (char *)bad[i].value, "--", "true",
                NULL};
            memset(&err, 0, sizeof(err));
            ok(run_doc(&ctx, argv, &doc, &err) < 0 && !doc,
               "run %s '%s' is refused", bad[i].flag, bad[i].value);
            is_str(err.text, bad[i].message, "and says why");
        }
    }
    {
        char *argv[] = {"run", "--gpus", "1", "--gpu-milli",
                        "500", "true",   NULL};
        ok(run_doc(&ctx, argv, &doc, &err) < 0, "--gpus with --gpu-milli is "
                                                "refused");
        is_str(err.text, "--gpus and --gpu-milli: give one, not both",
               "and the message names both");
    }
    {
        char *argv[] = {"run", "--env", "A=1", "--env", "A=2", "true", NULL};
        ok(run_doc(&ctx, argv, &doc, &err) < 0 &&
               strcmp(err.text, "--env: A given twice") == 0,
           "a variable given twice is refused");
    }
    {
        char *argv[] = {"run", "--gpus", "1", NULL};
        ok(run_doc(&ctx, argv, &doc, &err) < 0 &&
               strstr(err.text, "missing command") != NULL,
           "run without a command is refused");
    }
    {
        char *argv[] = {"run", "--help", NULL};
        is_int(run_doc(&ctx, argv, &doc, &err), SL_CLI_ARG_HELP,
               "run --help asks for help");
    }
}

static void test_amounts(void)
{
    json_t *o = load("{\"a\":2,\"b\":0.5,\"c\":0.20000000000000001,"
                     "\"d\":\"2\",\"e\":1073741824,\"f\":1e300,"
                     "\"g\":1073741824.0}");
    int64_t v = -1;

    ok(sl_cli_jmilli(o, "a", &v) && v == 2000, "an integer amount is 1000x");
    ok(sl_cli_jmilli(o, "b", &v) && v == 500, "0.5 GPUs is 500 milli");
    ok(sl_cli_jmilli(o, "c", &v) && v == 200,
       "a binary double near a decimal rounds to it");
    ok(!sl_cli_jmilli(o, "d", &v), "a string is not an amount");
    ok(!sl_cli_jmilli(o, "x", &v), "an absent amount is false");
    ok(!sl_cli_jmilli(o, "f", &v), "an amount too large for milli is false");
    ok(sl_cli_jbytes(o, "e", &v) && v == 1073741824LL, "bytes as an integer");
    ok(sl_cli_jbytes(o, "g", &v) && v == 1073741824LL, "bytes as a real");
    json_decref(o);
}

/* Render a blocker given as JSON text, with its label. */
static char *words(const char *text, bool label, char *buf, size_t size)
{
    json_t *b = load(text);

    sl_cli_why_blocker(b, label, buf, size);
    json_decref(b);
    return buf;
}

static void test_why_words(void)
{
    char b[512];

    is_str(words("{\"kind\":\"quota\",\"queue\":\"research\",\"resource\":"
                 "\"gpu\",\"used\":16,\"limit\":16,\"would_use\":18,"
                 "\"short\":2}",
                 true, b, sizeof(b)),
           "quota: queue research holds 16 of 16 GPUs; this job needs 2, over the limit by 2",
           "a quota blocker names the queue, its use, its limit and the need");
    is_str(words("{\"kind\":\"quota\",\"queue\":\"q\",\"resource\":"
                 "\"gpu\",\"used\":1,\"limit\":2,\"would_use\":3,"
                 "\"short\":1}",
                 false, b, sizeof(b)),
           "queue q holds 1 of 2 GPUs; this job needs 2, over the limit by 1",
           "without a label, and with room left the overshoot is given");
    is_str(words("{\"kind\":\"cohort\",\"queue\":\"research\",\"cohort\":"
                 "\"pool\",\"resource\":\"gpu\",\"used\":20,\"limit\":20,"
                 "\"would_use\":22,\"short\":2}",
                 true, b, sizeof(b)),
           "cohort: the queues of cohort pool hold 20 of 20 GPUs; this job "
           "needs 2, over the limit by 2",
           "a cohort blocker names the cohort");
    is_str(words("{\"kind\":\"user_limit\",\"queue\":\"research\",\"user\":"
                 "\"alice\",\"resource\":\"gpu\",\"used\":0.5,\"limit\":1,"
                 "\"would_use\":1.5,\"short\":0.5}",
                 true, b, sizeof(b)),
           "user limit: alice holds 0.5 of 1 GPU in queue research; this job "
           "needs 1, over the limit by 0.5",
           "a user limit names the user, fractions read as decimals");
    is_str(words("{\"kind\":\"model_quota\",\"queue\":\"r\",\"resource\":"
                 "\"gpu[A100]\",\"used\":8,\"limit\":8,\"would_use\":10,"
                 "\"short\":2}",
                 true, b, sizeof(b)),
           "model quota: queue r holds 8 of 8 GPUs of model A100; this job "
           "needs 2, over the limit by 2",
           "a model quota names the model");
    is_str(words("{\"kind\":\"quota\",\"queue\":\"r\",\"resource\":"
                 "\"memory\",\"used\":1073741824,\"limit\":1073741824,"
                 "\"would_use\":1610612736,\"short\":536870912}",
                 true, b, sizeof(b)),
           "quota: queue r holds 1.0Gi of 1.0Gi of memory; this job needs "
           "512.0Mi, over the limit by 512.0Mi",
           "memory reads in binary units");
    is_str(words("{\"kind\":\"nodes\",\"tasks\":1,\"tasks_fit\":0,\"nodes\":4,"
                 "\"nodes_rejected\":{\"unschedulable\":0,\"gpu_model\":1,"
                 "\"gpus\":3,\"cpu\":0,\"memory\":0},"
                 "\"topology\":\"any\"}",
                 true, b, sizeof(b)),
           "nodes: 0 of 1 tasks fit; of 4 nodes, 3 lack free GPUs, 1 has the "
           "wrong GPU model",
           "a nodes blocker counts the nodes rejected for each reason");
    is_str(words("{\"kind\":\"nodes\",\"tasks\":1,\"tasks_fit\":0,\"nodes\":3,"
                 "\"nodes_rejected\":{\"gpus\":1,\"unschedulable\":2},"
                 "\"unschedulable_nodes\":[{\"node\":\"n3\",\"why\":\"draining: disk "
                 "swap\"},{\"node\":\"n2\",\"why\":null}]}",
                 true, b, sizeof(b)),
           "nodes: 0 of 1 tasks fit; of 3 nodes, 1 lacks free GPUs, 2 are unschedulable "
           "(n3 draining: disk swap; n2)",
           "the unschedulable nodes are named, with why when known");
    is_str(words("{\"kind\":\"cannot_run\",\"cause\":\"cluster\",\"detail\":\"cannot run: "
                 "64 GPUs per task, the largest node has 4\",\"field\":\"spec.resources.gpus\"}",
                 true, b, sizeof(b)),
           "cannot run: 64 GPUs per task, the largest node has 4",
           "a job that can never run says so, once");
    is_str(words("{\"kind\":\"cannot_run\",\"cause\":\"nodes_out\",\"detail\":\"cannot run "
                 "on the nodes that take work now: 8 GPUs per task, the largest node has 4\","
                 "\"field\":\"spec.resources.gpus\",\"unschedulable_nodes\":[{\"node\":\"big\","
                 "\"why\":\"down: not responding\"}]}",
                 true, b, sizeof(b)),
           "cannot run on the nodes that take work now: 8 GPUs per task, the largest node "
           "has 4 (big down: not responding)",
           "one that only nodes out of service could hold names them");
    is_str(words("{\"kind\":\"gang\",\"tasks\":3,\"tasks_fit\":1,\"nodes\":1,"
                 "\"nodes_rejected\":{\"gpus\":0},"
                 "\"topology\":\"same-node\"}",
                 true, b, sizeof(b)),
           "gang: 1 of 3 tasks fit (all 3 start together or none); topology "
           "same-node",
           "a gang says all tasks start together, and a topology shows");
    is_str(words("{\"kind\":\"preempting\",\"victims\":[4,5]}", true, b,
                 sizeof(b)),
           "preempting: waiting for jobs 4, 5 to stop",
           "preempting lists the victims");
    is_str(words("{\"kind\":\"preempting\",\"victims\":[4]}", true, b,
                 sizeof(b)),
           "preempting: waiting for job 4 to stop", "one victim is one job");
    is_str(words("{\"kind\":\"backoff\","
                 "\"until\":\"2026-12-02T11:00:00.000Z\"}",
                 true, b, sizeof(b)),
           "backoff until 2026-12-02T11:00:00.000Z (a retry waits after a "
           "failure)",
           "backoff gives its end");
    is_str(words("{\"kind\":\"reservation\",\"detail\":\"held\"}", true, b,
                 sizeof(b)),
           "reservation: held", "a reservation prints its detail");
    is_str(words("{\"kind\":\"future\"}", true, b, sizeof(b)), "future",
           "a kind this client does not know still prints its name");
    is_str(words("{\"kind\":\"quota\",\"queue\":\"research\",\"resource\":"
                 "\"gpu\",\"used\":16,\"limit\":16,\"would_use\":18,"
                 "\"short\":2}",
                 true, b, 12),
           "quota: queu", "a small buffer cuts the text and ends it");
}

static void test_queue_gpus(void)
{
    json_t *a = load("{\"nominal\":{\"gpus\":4.0},\"used\":{\"gpus\":3.0}}");
    json_t *n = load("{\"nominal\":{},\"used\":{\"gpus\":3}}");
    json_t *f = load("{\"nominal\":{\"gpus\":2},\"used\":{\"gpus\":0.5}}");
    char b[64];

    is_str(sl_cli_queue_gpus(a, b, sizeof(b)), "3/4", "GPUS is used/nominal");
    is_str(sl_cli_queue_gpus(n, b, sizeof(b)), "3/-",
           "no GPU quota reads as '-'");
    is_str(sl_cli_queue_gpus(f, b, sizeof(b)), "0.5/2",
           "fractional use reads as a decimal");
    json_decref(a);
    json_decref(n);
    json_decref(f);
}


/* Expand 'expr' and join the names with spaces, or "ERR[field|text]". */
static char *expand_words(const char *expr, char *out, size_t size)
{
    struct sl_cli_hostlist hl = {NULL, 0};
    struct sl_error err = {{0}, {0}};
    size_t o = 0;

    out[0] = '\0';
    if (sl_cli_hostlist_expand("--nodes", expr, &hl, &err) < 0) {
        snprintf(out, size, "ERR[%s|%s]", err.field, err.text);
        ok(hl.n == 0 && hl.names == NULL, "a refused hostlist leaves nothing "
                                          "behind ('%s')", expr);
        return out;
    }
    for (size_t i = 0; i < hl.n && o < size; i++)
        o += (size_t)snprintf(out + o, size - o, "%s%s", i ? " " : "",
                              hl.names[i]);
    sl_cli_hostlist_fini(&hl);
    return out;
}

/* Expand 'expr', compress the names again, and return the text. */
static char *round_trip(const char *expr, char *out, size_t size)
{
    struct sl_cli_hostlist hl = {NULL, 0}, again = {NULL, 0};
    struct sl_error err = {{0}, {0}};
    struct sl_buf b;
    bool same;

    sl_buf_init(&b);
    if (sl_cli_hostlist_expand("--nodes", expr, &hl, &err) < 0) {
        snprintf(out, size, "ERR[%s]", err.text);
        return out;
    }
    sl_cli_hostlist_compress(hl.names, hl.n, &b);
    snprintf(out, size, "%s", b.data ? b.data : "");
    /* Expanding the compressed form gives back the same names in order. */
    same = sl_cli_hostlist_expand("--nodes", out, &again, &err) == 0 &&
           again.n == hl.n;
    for (size_t i = 0; same && i < hl.n; i++)
        same = strcmp(hl.names[i], again.names[i]) == 0;
    ok(same, "'%s' compressed to '%s' expands to the same names", expr, out);
    sl_cli_hostlist_fini(&again);
    sl_cli_hostlist_fini(&hl);
    sl_buf_fini(&b);
    return out;
}

static void test_hostlist(void)
{
    char b[1024];

    is_str(expand_words("a,b,c", b, sizeof(b)), "a b c",
           "a hostlist of plain names keeps their order");
    is_str(expand_words("n[1-3,5]", b, sizeof(b)), "n1 n2 n3 n5",
           "PREFIX[1-3,5] expands ranges and single numbers");
    is_str(expand_words("gpu[01-03],x", b, sizeof(b)), "gpu01 gpu02 gpu03 x",
           "a zero-padded range keeps its width, and items mix");
    is_str(expand_words("n[8-10]", b, sizeof(b)), "n8 n9 n10",
           "an unpadded range grows in digits as Slurm's does");
    is_str(expand_words("rack-1.n_[7]", b, sizeof(b)), "rack-1.n_7",
           "names may hold '.', '_' and '-'");
    is_str(expand_words("n[1-2],m[1-2]", b, sizeof(b)), "n1 n2 m1 m2",
           "commas inside [...] do not split items");
    is_str(expand_words("", b, sizeof(b)),
           "ERR[--nodes|--nodes: empty; want node names, e.g. n[1-3],gpu7]",
           "an empty hostlist is refused");
    is_str(expand_words("n1,,n2", b, sizeof(b)),
           "ERR[--nodes|--nodes: an empty name (two commas in a row, or one "
           "at an end)]",
           "an empty item is refused");
    is_str(expand_words("n1,", b, sizeof(b)),
           "ERR[--nodes|--nodes: an empty name (two commas in a row, or one "
           "at an end)]",
           "a trailing comma is refused");
    is_str(expand_words("n[1-3", b, sizeof(b)),
           "ERR[--nodes|--nodes: 'n[1-3': missing ']']",
           "an open bracket is refused");
    is_str(expand_words("n[3-1]", b, sizeof(b)),
           "ERR[--nodes|--nodes: 'n[3-1]': range 3-1 goes down]",
           "a range that goes down is refused");
    is_str(expand_words("n[1-3]x", b, sizeof(b)),
           "ERR[--nodes|--nodes: 'n[1-3]x': want PREFIX[RANGES] with nothing "
           "after ']' (e.g. n[1-3,5])]",
           "text after ']' is refused");
    is_str(expand_words("n[1-2][3]", b, sizeof(b)),
           "ERR[--nodes|--nodes: 'n[1-2][3]': want PREFIX[RANGES] with "
           "nothing after ']' (e.g. n[1-3,5])]",
           "two bracket groups are refused");
    is_str(expand_words("n[a]", b, sizeof(b)),
           "ERR[--nodes|--nodes: 'n[a]': inside [...] want numbers N or "
           "ranges LO-HI separated by commas]",
           "a letter inside [...] is refused");
    is_str(expand_words("n[]", b, sizeof(b)),
           "ERR[--nodes|--nodes: 'n[]': empty [...]]", "empty brackets");
    is_str(expand_words("n[1,]", b, sizeof(b)),
           "ERR[--nodes|--nodes: 'n[1,]': a comma at the end of [...]]",
           "a comma at the end of the brackets is refused");
    is_str(expand_words("n[1234567890]", b, sizeof(b)),
           "ERR[--nodes|--nodes: 'n[1234567890]': a number in [...] has at "
           "most 9 digits]",
           "a number of ten digits is refused");
    is_str(expand_words("n1 n2", b, sizeof(b)),
           "ERR[--nodes|--nodes: 'n1 n2': a node name is letters, digits, "
           "'.', '_' and '-' (and PREFIX[1-3,5] for several)]",
           "a space in a name is refused");
    is_str(expand_words("n[1-3],n2", b, sizeof(b)),
           "ERR[--nodes|--nodes: node 'n2' is named twice]",
           "a node named twice is refused");
    is_str(expand_words("n[0-65536]", b, sizeof(b)),
           "ERR[--nodes|--nodes: more than 65536 nodes]",
           "more nodes than the cap are refused before they are made");
    is_str(expand_words("default", b, sizeof(b)),
           "ERR[--nodes|--nodes: 'default' is not a node name: slurm.conf "
           "reserves it]",
           "DEFAULT (any case) is refused: it sets slurm.conf's defaults");
    is_str(expand_words("n1,ALL", b, sizeof(b)),
           "ERR[--nodes|--nodes: 'ALL' is not a node name: slurm.conf "
           "reserves it]",
           "ALL is refused");
    is_str(expand_words("x23456789012345678901234567890123456789012345678901"
                        "2345678901234",
                        b, sizeof(b)),
           "ERR[--nodes|--nodes: 'x234567890123456789012345678901234567890...'"
           ": a node name is at most 63 characters]",
           "a name of 64 characters is refused");
    is_str(expand_words("x2345678901234567890123456789012345678901234567890"
                        "123456789012[10]",
                        b, sizeof(b)),
           "ERR[--nodes|--nodes: 'x2345678901234567890123456789012345678901"
           "234567890123456789012[1': a node name is at most 63 characters]",
           "a range that makes a name too long is refused (the item shown cut "
           "at 64 characters)");

    is_str(round_trip("n1,n2,n3,m1", b, sizeof(b)), "n[1-3],m1",
           "consecutive numbers of one prefix become a range");
    is_str(round_trip("n1,n3,n4", b, sizeof(b)), "n[1,3-4]",
           "a gap starts a new range in the same brackets");
    is_str(round_trip("n[01-02,10]", b, sizeof(b)), "n[01-02,10]",
           "zero padding is kept");
    is_str(round_trip("n[8-10]", b, sizeof(b)), "n[8-10]",
           "a range across a power of ten stays one range");
    is_str(round_trip("n1,n01", b, sizeof(b)), "n[1,01]",
           "n1 and n01 are different names and stay so");
    is_str(round_trip("n09,n10", b, sizeof(b)), "n[09-10]",
           "a padded range may end at a wider number");
    is_str(round_trip("n9,n010", b, sizeof(b)), "n[9,010]",
           "a wider padded number after an unpadded one starts a new range");
    is_str(round_trip("a,b", b, sizeof(b)), "a,b",
           "names without numbers stay as they are");
    is_str(round_trip("n1", b, sizeof(b)), "n1", "one name needs no brackets");
    is_str(round_trip("n1,m1,n2", b, sizeof(b)), "n1,m1,n2",
           "the order is kept, so a prefix may come back later");
    is_str(round_trip("n12345678901,n12345678902", b, sizeof(b)),
           "n12345678901,n12345678902",
           "numbers too long for a range are left as names");
}

/* sl_cli_gres_conf's text for 'o', or "ERR[field|text]". */
static char *gres_text(const struct sl_cli_gres_opts *o, char *out, size_t size)
{
    struct sl_error err = {{0}, {0}};
    struct sl_buf b;

    sl_buf_init(&b);
    if (sl_cli_gres_conf(o, &b, &err) < 0) {
        ok(b.len == 0, "a refused configuration writes nothing (%s)",
           err.text);
        snprintf(out, size, "ERR[%s|%s]", err.field, err.text);
    } else {
        snprintf(out, size, "%s", b.data ? b.data : "");
    }
    sl_buf_fini(&b);
    return out;
}

static void test_gres_conf(void)
{
    const char *h100[] = {"H100"}, *racks[] = {"n[1,3]=rack1", "n2=rack2"};
    const char *two_models[] = {"H100", "n3=A100-80GB"};
    const char *bad[] = {"rack 1"};
    struct sl_cli_gres_opts o = {
        .nodes = "n[1-3]", .gpus = 2, .device = "/dev/nvidia%d",
        .shards = 1000, .models = h100, .nmodels = 1,
    };
    char b[4096];

    is_str(gres_text(&o, b, sizeof(b)),
           "# gres.conf: GPU index I is GRES type gI, one device each (pin "
           "with\n"
           "# --gres=gpu:g3:1), with its own shards (a fraction of that GPU:\n"
           "# --gres=shard:g3:250). See docs/slurm.md.\n"
           "NodeName=n[1-3] AutoDetect=off\n"
           "NodeName=n[1-3] Name=gpu Type=g0 File=/dev/nvidia0\n"
           "NodeName=n[1-3] Name=gpu Type=g1 File=/dev/nvidia1\n"
           "NodeName=n[1-3] Name=shard Type=g0 Count=1000 File=/dev/nvidia0\n"
           "NodeName=n[1-3] Name=shard Type=g1 Count=1000 File=/dev/nvidia1\n"
           "# slurm.conf: add Gres= and Feature= to these nodes' lines (keep "
           "CPUs=,\n"
           "# RealMemory= and the rest). See docs/slurm.md.\n"
           "GresTypes=gpu,shard\n"
           "NodeName=n[1-3] Gres=gpu:g0:1,gpu:g1:1,shard:g0:1000,shard:g1:1000 "
           "Feature=gpu_H100\n",
           "gres-conf writes one typed GPU and its shards per index, and the "
           "nodes' Gres and Feature");

    o.part = SL_CLI_SLURM_NODES;
    o.domains = racks;
    o.ndomains = 2;
    o.shards = 0;
    is_str(gres_text(&o, b, sizeof(b)),
           "# slurm.conf: add Gres= and Feature= to these nodes' lines (keep "
           "CPUs=,\n"
           "# RealMemory= and the rest). See docs/slurm.md.\n"
           "GresTypes=gpu\n"
           "NodeName=n[1,3] Gres=gpu:g0:1,gpu:g1:1 Feature=gpu_H100,"
           "domain_rack1\n"
           "NodeName=n2 Gres=gpu:g0:1,gpu:g1:1 Feature=gpu_H100,domain_rack2\n",
           "nodes that share a model and domain share a line, in the order of "
           "their first node; no shards without --shards");

    o.per_node = true;
    o.models = two_models;
    o.nmodels = 2;
    o.ndomains = 0;
    o.gpus = 1;
    is_str(gres_text(&o, b, sizeof(b)),
           "# slurm.conf: add Gres= and Feature= to these nodes' lines (keep "
           "CPUs=,\n"
           "# RealMemory= and the rest). See docs/slurm.md.\n"
           "GresTypes=gpu\n"
           "NodeName=n1 Gres=gpu:g0:1 Feature=gpu_H100\n"
           "NodeName=n2 Gres=gpu:g0:1 Feature=gpu_H100\n"
           "NodeName=n3 Gres=gpu:g0:1 Feature=gpu_A100-80GB\n",
           "--per-node writes a line per node; NODES=MODEL overrides the model "
           "given for all");

    o.per_node = false;
    o.part = SL_CLI_SLURM_GRES;
    o.device = "/opt/gpus/card%d.dev";
    o.nodes = "a,b";
    o.models = h100;
    o.nmodels = 1;
    o.shards = 2000;
    is_str(gres_text(&o, b, sizeof(b)),
           "# gres.conf: GPU index I is GRES type gI, one device each (pin "
           "with\n"
           "# --gres=gpu:g3:1), with its own shards (a fraction of that GPU:\n"
           "# --gres=shard:g3:250). See docs/slurm.md.\n"
           "NodeName=a,b AutoDetect=off\n"
           "NodeName=a,b Name=gpu Type=g0 File=/opt/gpus/card0.dev\n"
           "NodeName=a,b Name=shard Type=g0 Count=2000 File=/opt/gpus/card0.dev\n",
           "--device puts the index where %%d is; --only gres.conf writes only "
           "gres.conf");

    o.part = SL_CLI_SLURM_BOTH;
    o.nodes = NULL;
    is_str(gres_text(&o, b, sizeof(b)),
           "ERR[--nodes|--nodes: required (the nodes, e.g. n[1-3])]",
           "--nodes is required");
    o.nodes = "n[1-2]";
    o.gpus = 65;
    is_str(gres_text(&o, b, sizeof(b)),
           "ERR[--gpus|--gpus: required, 1 to 64 GPUs per node]",
           "--gpus above 64 is refused");
    o.gpus = 1;
    o.shards = 1500;
    is_str(gres_text(&o, b, sizeof(b)),
           "ERR[--shards|--shards: must be 0 (no fractions) or a multiple of "
           "1000 up to 1000000, got 1500]",
           "shards that would round a fraction are refused");
    o.shards = 1000;
    o.device = "/dev/nvidia";
    is_str(gres_text(&o, b, sizeof(b)),
           "ERR[--device|--device: '/dev/nvidia': want exactly one %d (the "
           "GPU index) and no other %]",
           "--device without %%d is refused");
    o.device = "/dev/nv[%d]";
    is_str(gres_text(&o, b, sizeof(b)),
           "ERR[--device|--device: '/dev/nv[%d]': a path of letters, digits "
           "and / . _ - + (gres.conf gives others a meaning)]",
           "--device with brackets (a gres.conf range) is refused");
    o.device = "/dev/nvidia%d";
    o.nmodels = 0;
    is_str(gres_text(&o, b, sizeof(b)),
           "ERR[--model|--model: required (the GPU model, e.g. H100, or "
           "NODES=MODEL per group of nodes)]",
           "--model is required");
    o.models = two_models;
    o.nmodels = 1;
    o.nodes = "n3,n4";
    o.models = (const char *[]){"n3=A100-80GB"};
    is_str(gres_text(&o, b, sizeof(b)),
           "ERR[--model|--model: node 'n4' has no model (give one model for "
           "every node, or NODES=MODEL covering it)]",
           "a node left without a model is named");
    o.models = (const char *[]){"n[3-5]=A100"};
    is_str(gres_text(&o, b, sizeof(b)),
           "ERR[--model|--model: node 'n5' is not in --nodes]",
           "a mapping may name only nodes of --nodes");
    o.models = two_models;
    o.nmodels = 2;
    o.domains = bad;
    o.ndomains = 1;
    is_str(gres_text(&o, b, sizeof(b)),
           "ERR[--domain|--domain: 'rack 1': a domain is 1 to 63 of "
           "[A-Za-z0-9._-] (or NODES=DOMAIN for some nodes)]",
           "a domain that is no feature name is refused");
    o.domains = (const char *[]){"n3=r1", "n[3-4]=r2"};
    o.ndomains = 2;
    is_str(gres_text(&o, b, sizeof(b)),
           "ERR[--domain|--domain: node 'n3' is given two values ('r1' and "
           "'r2')]",
           "a node given two domains is refused");
    o.domains = (const char *[]){"n[3-4", "r2"};
    is_str(gres_text(&o, b, sizeof(b)),
           "ERR[--domain|--domain: 'n[3-4': a domain is 1 to 63 of "
           "[A-Za-z0-9._-] (or NODES=DOMAIN for some nodes)]",
           "a broken value is named by its flag");
}

/* What sl_cli_print_yaml writes for 'text' (JSON). */
static char *yaml_of(const char *text)
{
    char path[] = "/tmp/sluice-test-yaml.XXXXXX", *buf = NULL;
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    int fd = mkstemp(path), saved = dup(STDOUT_FILENO);
    size_t n = 0;
    FILE *f;

    fflush(stdout);
    if (v && fd >= 0 && saved >= 0 && dup2(fd, STDOUT_FILENO) >= 0) {
        sl_cli_print_yaml(v);
        fflush(stdout);
        dup2(saved, STDOUT_FILENO);
    }
    if (fd >= 0 && (f = fopen(path, "r"))) {
        buf = calloc(1, 4096);
        if (buf)
            n = fread(buf, 1, 4095, f);
        (void)n;
        fclose(f);
    }
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    if (saved >= 0)
        close(saved);
    json_decref(v);
    return buf;
}

static void test_yaml(void)
{
    char *y;

    y = yaml_of("{\"name\":\"n1\",\"on\":true,\"n\":3,\"x\":0.5,\"big\":1e20,"
                "\"none\":null,\"s\":\"true\",\"e\":{},\"l\":[],"
                "\"gpus\":[{\"index\":0,\"jobs\":[1,2]}],\"a b\":\"t\\u0001\\u00e9\"}");
    is_str(y,
           "name: \"n1\"\n\"on\": true\n\"n\": 3\nx: 0.5\nbig: 1.0e+20\nnone: null\n"
           "s: \"true\"\ne: {}\nl: []\ngpus:\n  -\n    index: 0\n    jobs:\n      - 1\n"
           "      - 2\n\"a b\": \"t\\u0001\u00e9\"\n",
           "-o yaml: block style, strings quoted, keys plain unless YAML would misread them");
    free(y);
    y = yaml_of("[]");
    is_str(y, "[]\n", "an empty list is []");
    free(y);
    y = yaml_of("\"x\"");
    is_str(y, "\"x\"\n", "a lone string is quoted");
    free(y);
}

/* --from and --to: absolute times, and relative ones against a fixed now. */
static void test_when_rel(void)
{
    const int64_t now = 1796205600250LL; /* 2026-12-02T10:00:00.250Z */
    const int64_t midnight = 1796169600000LL; /* 2026-12-02T00:00:00Z */
    int64_t ms = 0;

    ok(sl_cli_parse_when_rel("now", now, &ms) == 0 && ms == now, "now");
    ok(sl_cli_parse_when_rel("today", now, &ms) == 0 && ms == midnight, "today: midnight UTC");
    ok(sl_cli_parse_when_rel("yesterday", now, &ms) == 0 && ms == midnight - 86400000,
       "yesterday: the midnight before");
    ok(sl_cli_parse_when_rel("-7d", now, &ms) == 0 && ms == now - 7 * 86400000LL,
       "-7d: seven days ago");
    ok(sl_cli_parse_when_rel("-1h30m", now, &ms) == 0 && ms == now - 5400000, "-1h30m");
    ok(sl_cli_parse_when_rel("2026-12-01", now, &ms) == 0 && ms == midnight - 86400000,
       "a date as before");
    ok(sl_cli_parse_when_rel("1796205600250", now, &ms) == 0 && ms == now, "epoch ms");
    ok(sl_cli_parse_when_rel("7d", now, &ms) == -EINVAL, "a bare duration is refused");
    ok(sl_cli_parse_when_rel("-0s", now, &ms) == -EINVAL, "-0s is refused");
    ok(sl_cli_parse_when_rel("--7d", now, &ms) == -EINVAL, "--7d is refused");
    ok(sl_cli_parse_when_rel("-", now, &ms) == -EINVAL, "a lone minus is refused");
    ok(sl_cli_parse_when_rel("Yesterday", now, &ms) == -EINVAL, "words are lower case");
    ok(sl_cli_parse_when_rel("-100000d", now, &ms) == -EINVAL, "before 1970 is refused");
}

int main(void)
{
    test_when_rel();
    test_parser();
    test_values();
    test_read_input();
    test_units();
    test_jobs();
    test_job_idle();
    test_table();
    test_shell_join();
    test_run_doc();
    test_run_interactive();
    test_run_where_and_env();
    test_amounts();
    test_why_words();
    test_queue_gpus();
    test_hostlist();
    test_gres_conf();
    test_yaml();
    return done_testing();
}
