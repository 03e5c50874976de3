/*
 * test_report_csv.c - the reports as CSV (src/meter/report_csv.c) and the
 * CSV writer under them (src/util/csv.c): quoting, figures in full, the
 * header line, LF line ends.
 *
 * The two reports below, with the CSV expected of each, are the proof that
 * moving the CSV out of the CLI changed nothing: the expected texts are
 * what `sluice report -o csv` and `sluice report --utilisation -o csv`
 * printed, byte for byte, before the move (commit 763eb53, its CSV built in
 * src/cli/cmd_report.c) when a server answered with exactly these JSON
 * documents. The CLI now prints what sl_report_csv and sl_util_report_csv
 * write, and the daemon's format=csv answers are written by them too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/meter/meter.h"
#include "../../src/util/buf.h"
#include "../../src/util/csv.h"
#include "../tap.h"

/* A GET /v1/report answer with every kind of cell: names that need quotes
 * (comma, quote, LF, CR, a space at either end, empty), UTF-8 and a tab
 * that do not, integers up to int64's largest, reals small, large, negative
 * and -0, a figure too long for its cell (1e300, cut as the CLI always cut
 * it), strings, booleans, null, an object and an array where figures go,
 * and a row without a key. */
static const char usage_json[] =
    "{\"by\":\"team\",\"from\":\"2026-12-01T00:00:00.000Z\","
    "\"to\":\"2026-12-02T00:00:00.000Z\",\"period\":\"day\",\"currency\":\"EUR\","
    "\"chargeback\":true,\"rows\":[\n"
    "{\"key\":\"plain\",\"period\":\"2026-12-01T00:00:00.000Z\",\"jobs\":3,"
    "\"gpu_hours\":1.5,\"cu\":6.0,\"core_hours\":0.30000000000000004,"
    "\"gib_hours\":0.000123456789,\"energy_kwh\":1e-10,\"energy_measured\":false,"
    "\"energy_measured_kwh\":0.0,\"cost\":12.345678901234567,\"idle_cost_share\":-0.0,"
    "\"chargeback\":1e20,\"co2_kg\":123456789.125,\"unused_gpu_hours\":2.5e-7,"
    "\"idle_jobs\":0,\"currency\":\"EUR\"},\n"
    "{\"key\":\"with,comma\",\"jobs\":-4,\"gpu_hours\":9007199254740993,\"cu\":-1.25,"
    "\"energy_measured\":true,\"cost\":\"12,5\",\"co2_kg\":null,\"currency\":\"EUR\"},\n"
    "{\"key\":\"say \\\"hi\\\"\",\"jobs\":2.0,\"gpu_hours\":0.1,\"cu\":{\"x\":1},"
    "\"core_hours\":[1,2],\"energy_measured\":\"yes\",\"currency\":\"E\\\"R\"},\n"
    "{\"key\":\"two\\nlines\",\"period\":\"2026-12-01\",\"jobs\":1,\"gpu_hours\":1e-9,"
    "\"cu\":1.0000000005,\"cost\":1e300,\"currency\":\"\"},\n"
    "{\"key\":\" lead\",\"jobs\":1,\"gpu_hours\":123456.654321},\n"
    "{\"key\":\"trail \",\"jobs\":1,\"gpu_hours\":0.5},\n"
    "{\"key\":\"\",\"jobs\":0},\n"
    "{\"key\":\"cr\\rhere\",\"jobs\":1},\n"
    "{\"key\":\"\xc3\xa9quipe-donn\xc3\xa9" "es\",\"jobs\":1,\"gpu_hours\":3.14159265358979},\n"
    "{\"key\":\"a'b;c\\td\",\"jobs\":1,\"gpu_hours\":-2.5e-10},\n"
    "{\"jobs\":7,\"idle_jobs\":9223372036854775807}\n"
    "]}\n";

static const char usage_csv[] =
    "key,period,jobs,gpu_hours,cu,core_hours,gib_hours,energy_kwh,energy_measured,"
    "energy_measured_kwh,cost,idle_cost_share,chargeback,co2_kg,unused_gpu_hours,"
    "idle_jobs,currency\n"
    "plain,2026-12-01T00:00:00.000Z,3,1.5,6,0.3,0.000123457,0,false,0,12.345678901,0,"
    "100000000000000000000,123456789.125,0.00000025,0,EUR\n"
    "\"with,comma\",,-4,9007199254740993,-1.25,,,,true,,\"12,5\",,,,,,EUR\n"
    "\"say \"\"hi\"\"\",,2,0.1,,,,,yes,,,,,,,,\"E\"\"R\"\n"
    "\"two\n"
    "lines\",2026-12-01,1,0.000000001,1.000000001,,,,,,"
    "10000000000000000525047602552044202487044685811,,,,,,\n"
    "\" lead\",,1,123456.654321,,,,,,,,,,,,,\n"
    "\"trail \",,1,0.5,,,,,,,,,,,,,\n"
    ",,0,,,,,,,,,,,,,,\n"
    "\"cr\rhere\",,1,,,,,,,,,,,,,,\n"
    "\xc3\xa9quipe-donn\xc3\xa9" "es,,1,3.141592654,,,,,,,,,,,,,\n"
    "a'b;c\td,,1,0,,,,,,,,,,,,,\n"
    ",,7,,,,,,,,,,,,,9223372036854775807,\n";

/* A GET /v1/report/utilisation answer: a node and a model name that need
 * quotes, a model with spaces, gpus as a real, a fraction and absent,
 * a string and null where figures go (empty here, unlike the usage
 * report's cells), a boolean in a figure's column. */
static const char util_json[] =
    "{\"nodes\":[\n"
    "{\"capacity_gpu_hours\":96.0,\"allocated_gpu_hours\":12.345678901,"
    "\"idle_gpu_hours\":83.654321099,\"overcommitted_gpu_hours\":0.0,"
    "\"allocated_unused_gpu_hours\":0.5,\"utilisation\":0.128600822,\"idle_cost\":1.0e-10,"
    "\"allocated_unused_cost\":3.3333333333333335,\"conserved\":true,\"node\":\"gpu-01\","
    "\"gpu_model\":\"H100\",\"gpus\":4,\"declared\":true},\n"
    "{\"capacity_gpu_hours\":0,\"allocated_gpu_hours\":2,\"idle_gpu_hours\":-1,"
    "\"overcommitted_gpu_hours\":3.5,\"allocated_unused_gpu_hours\":null,"
    "\"utilisation\":\"n/a\",\"idle_cost\":true,\"conserved\":false,"
    "\"node\":\"odd,node \\\"x\\\"\",\"gpu_model\":\"NVIDIA H100 80GB HBM3\",\"gpus\":2.0,"
    "\"declared\":false},\n"
    "{\"node\":\"bare\\nnode\",\"gpu_model\":\" A100 \",\"gpus\":2.5},\n"
    "{\"node\":\"nogpus\",\"conserved\":false}\n"
    "],\n"
    "\"gpu_models\":{\"H100\":{\"capacity_gpu_hours\":96.0,\"allocated_gpu_hours\":12.345678901,"
    "\"idle_gpu_hours\":83.654321099,\"overcommitted_gpu_hours\":0.0,"
    "\"allocated_unused_gpu_hours\":0.5,\"utilisation\":0.128600822,\"idle_cost\":0.0,"
    "\"allocated_unused_cost\":1e21,\"conserved\":true},"
    "\"NVIDIA H100 80GB HBM3\":{\"capacity_gpu_hours\":1,\"conserved\":false},\"a,b\":{},"
    "\"none\":{\"utilisation\":1e-12}},\n"
    "\"total\":{\"capacity_gpu_hours\":288.5,\"allocated_gpu_hours\":14.345678901,"
    "\"idle_gpu_hours\":274.154321099,\"overcommitted_gpu_hours\":3.5,"
    "\"allocated_unused_gpu_hours\":0.5,\"utilisation\":0.049725,\"idle_cost\":2.75,"
    "\"allocated_unused_cost\":3.3333333333333335,\"conserved\":false},\n"
    "\"currency\":\"EUR\",\"from\":\"2026-12-01T00:00:00.000Z\","
    "\"to\":\"2026-12-02T00:00:00.000Z\"}\n";

static const char util_head[] =
    "scope,name,gpu_model,gpus,capacity_gpu_hours,allocated_gpu_hours,idle_gpu_hours,"
    "allocated_unused_gpu_hours,utilisation,idle_cost,allocated_unused_cost,"
    "overcommitted_gpu_hours,conserved\n";

static const char util_csv[] =
    "node,gpu-01,H100,4,96,12.345678901,83.654321099,0.5,0.128600822,0,3.333333333,0,true\n"
    "node,\"odd,node \"\"x\"\"\",NVIDIA H100 80GB HBM3,2,0,2,-1,,,true,,3.5,false\n"
    "node,\"bare\n"
    "node\",\" A100 \",0,,,,,,,,,\n"
    "node,nogpus,,0,,,,,,,,,false\n"
    "gpu-model,H100,H100,,96,12.345678901,83.654321099,0.5,0.128600822,0,"
    "1000000000000000000000,0,true\n"
    "gpu-model,NVIDIA H100 80GB HBM3,NVIDIA H100 80GB HBM3,,1,,,,,,,,false\n"
    "gpu-model,\"a,b\",\"a,b\",,,,,,,,,,\n"
    "gpu-model,none,none,,,,,,0,,,,\n"
    "total,total,,,288.5,14.345678901,274.154321099,0.5,0.049725,2.75,3.333333333,3.5,false\n";

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);

    if (!v)
        diag("bad test JSON: %s (line %d)", e.text, e.line);
    return v;
}

/* Render 'text' through 'fn' into a new string (caller frees); *rc its
 * return. */
static char *render(int (*fn)(const json_t *, struct sl_buf *), const char *text, int *rc)
{
    json_t *v = load(text);
    struct sl_buf b;
    char *s;

    sl_buf_init(&b);
    *rc = fn(v, &b);
    s = strdup(b.data ? b.data : "");
    sl_buf_fini(&b);
    json_decref(v);
    return s;
}

static void fields(void)
{
    static const struct {
        const char *in, *out, *what;
    } cases[] = {
        {"plain", "plain", "plain text is as it is"},
        {"", "", "an empty field is empty"},
        {"a,b", "\"a,b\"", "a comma is quoted"},
        {"say \"hi\"", "\"say \"\"hi\"\"\"", "a quote is quoted and doubled"},
        {"\"", "\"\"\"\"", "a lone quote too"},
        {"two\nlines", "\"two\nlines\"", "an LF is quoted and kept"},
        {"cr\rhere", "\"cr\rhere\"", "a CR is quoted and kept"},
        {" lead", "\" lead\"", "a leading space is quoted"},
        {"trail ", "\"trail \"", "a trailing space is quoted"},
        {" ", "\" \"", "a lone space is quoted"},
        {"in side", "in side", "a space inside is not"},
        {"tab\there", "tab\there", "nor a tab"},
        {"semi;colon'quote", "semi;colon'quote", "nor a semicolon or an apostrophe"},
        {"h\xc3\xa9", "h\xc3\xa9", "nor UTF-8"},
    };
    const char *cells[] = {"a", NULL, "b,c", ""};
    struct sl_buf b;
    char want[64];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sl_buf_init(&b);
        sl_buf_adds(&b, "<");
        sl_csv_field(&b, cases[i].in);
        sl_buf_adds(&b, ">");
        snprintf(want, sizeof(want), "<%s>", cases[i].out);
        is_str(b.data, want, "CSV field: %s", cases[i].what);
        sl_buf_fini(&b);
    }
    sl_buf_init(&b);
    sl_buf_adds(&b, "<");
    sl_csv_field(&b, NULL);
    sl_buf_adds(&b, ">");
    is_str(b.data, "<>", "a NULL field is empty");
    sl_buf_fini(&b);

    sl_buf_init(&b);
    sl_csv_row(&b, cells, 4);
    sl_csv_row(&b, cells, 1);
    is_str(b.data, "a,,\"b,c\",\n" "a\n",
           "a row is its fields separated by commas, NULL empty, ending in LF alone");
    sl_buf_fini(&b);
}

static void numbers(void)
{
    static const struct {
        const char *json, *text;
    } cases[] = {
        {"[3]", "3"},
        {"[-9223372036854775808]", "-9223372036854775808"},
        {"[2.0]", "2"},
        {"[0.1]", "0.1"},
        {"[1e-10]", "0"},
        {"[-2.5e-10]", "0"},
        {"[-0.0]", "0"},
        {"[1.0000000005]", "1.000000001"},
        {"[2.5e-7]", "0.00000025"},
        {"[1e20]", "100000000000000000000"},
        {"[\"7\"]", ""},
        {"[true]", ""},
        {"[null]", ""},
    };
    char buf[SL_CSV_CELL];
    int64_t n = -1;
    json_t *o;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *v = load(cases[i].json);
        is_str(sl_csv_number(json_array_get(v, 0), buf, sizeof(buf)), cases[i].text,
               "the number %s is written \"%s\"", cases[i].json, cases[i].text);
        json_decref(v);
    }
    o = load("{\"i\":4,\"r\":4.0,\"f\":4.5,\"big\":1e16,\"s\":\"4\"}");
    ok(sl_csv_integer(o, "i", &n) && n == 4, "an integer member is an integer");
    n = -1;
    ok(sl_csv_integer(o, "r", &n) && n == 4, "so is a real with no fraction");
    n = -1;
    ok(!sl_csv_integer(o, "f", &n) && !sl_csv_integer(o, "big", &n) &&
           !sl_csv_integer(o, "s", &n) && !sl_csv_integer(o, "none", &n) && n == -1,
       "a fraction, a real past 9e15, a string or nothing is not, and leaves *out");
    json_decref(o);
}

static void usage_report(void)
{
    static const char head[] =
        "key,period,jobs,gpu_hours,cu,core_hours,gib_hours,energy_kwh,energy_measured,"
        "energy_measured_kwh,cost,idle_cost_share,chargeback,co2_kg,unused_gpu_hours,"
        "idle_jobs,currency\n";
    char *s;
    int rc;

    s = render(sl_report_csv, usage_json, &rc);
    is_int(rc, 0, "a usage report is written");
    is_str(s, usage_csv, "byte for byte what `sluice report -o csv` printed before");
    free(s);
    s = render(sl_report_csv, "{\"by\":\"user\",\"rows\":[]}", &rc);
    ok(rc == 0 && s && strcmp(s, head) == 0, "a report without rows is its header alone");
    free(s);
    s = render(sl_report_csv, "{\"by\":\"user\"}", &rc);
    ok(rc == -EINVAL && s && !*s, "an object without rows is refused and nothing written");
    free(s);
    s = render(sl_report_csv, "{\"rows\":{}}", &rc);
    ok(rc == -EINVAL && s && !*s, "and so is rows that is not an array");
    free(s);
    s = render(sl_report_csv, "[]", &rc);
    ok(rc == -EINVAL && s && !*s, "and a report that is not an object");
    free(s);
}

static void util_report(void)
{
    char want[4096];
    char *s;
    int rc;

    snprintf(want, sizeof(want), "%s%s", util_head, util_csv);
    s = render(sl_util_report_csv, util_json, &rc);
    is_int(rc, 0, "a utilisation report is written");
    is_str(s, want,
           "byte for byte what `sluice report --utilisation -o csv` printed before");
    free(s);
    snprintf(want, sizeof(want), "%stotal,total,,,,,,,,,,,\n", util_head);
    s = render(sl_util_report_csv, "{\"currency\":\"USD\"}", &rc);
    ok(rc == 0 && s && strcmp(s, want) == 0,
       "one without nodes, models or total is its header and an empty total line");
    free(s);
}

static void appends_and_fails(void)
{
    json_t *v = load("{\"rows\":[{\"key\":\"a\",\"jobs\":1}]}");
    struct sl_buf b;

    sl_buf_init(&b);
    sl_buf_adds(&b, "before\n");
    ok(sl_report_csv(v, &b) == 0 && strncmp(b.data, "before\nkey,period,", 18) == 0,
       "the CSV is appended to what the buffer holds");
    sl_buf_fini(&b);
    sl_buf_init(&b);
    b.failed = true; /* as after an allocation failed (buf.h) */
    is_int(sl_report_csv(v, &b), -ENOMEM, "a usage report into a failed buffer is -ENOMEM");
    is_int(sl_util_report_csv(v, &b), -ENOMEM, "and so is a utilisation report");
    sl_buf_fini(&b);
    json_decref(v);
}

int main(void)
{
    fields();
    numbers();
    usage_report();
    util_report();
    appends_and_fails();
    return done_testing();
}
