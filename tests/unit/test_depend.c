/*
 * test_depend.c - job dependencies (src/core/depend.h): Slurm's syntax
 * parsed and refused with the field named, the normalised text and its
 * round trip, and the verdict for every type against every job state, on
 * single jobs, whole arrays and arrays' elements (ID_INDEX).
 */
#include <errno.h>
#include <string.h>

#include "../../src/core/depend.h"
#include "../tap.h"

/* A table of job states: id -> state; ids not listed do not exist. An
 * array is its first element's id 'arr' and its elements, ids arr, arr+1,
 * ... with indices idx[]. */
struct world {
    int64_t id[8];
    enum sl_job_state st[8];
    int n;
    int64_t arr;
    int32_t idx[4];
    enum sl_job_state ast[4];
    int na;
};

/* As the engine's lookup does: an element by index, the whole array by its
 * id, else one job. */
static int lookup(void *arg, const struct sl_dep_item *it, struct sl_dep_state *st)
{
    const struct world *w = arg;

    if (w->na && it->id == w->arr) {
        for (int k = 0; k < w->na; k++) {
            if (it->index >= 0) {
                if (w->idx[k] == it->index) {
                    st->known = true;
                    st->id = w->arr + k;
                    st->state = w->ast[k];
                }
                continue;
            }
            st->known = true;
            st->elements = w->na;
            if (sl_job_state_final(w->ast[k])) {
                st->ended++;
                if (w->ast[k] != SL_JOB_SUCCEEDED && !st->failed_id) {
                    st->failed_id = w->arr + k;
                    st->failed_index = w->idx[k];
                    st->failed_state = w->ast[k];
                }
            } else if (!st->waiting_id) {
                st->waiting_id = w->arr + k;
                st->waiting_state = w->ast[k];
            }
        }
        return 0;
    }
    if (it->index >= 0)
        return 0;
    for (int i = 0; i < w->n; i++)
        if (w->id[i] == it->id) {
            st->known = true;
            st->id = it->id;
            st->state = w->st[i];
        }
    return 0;
}

static int failing_lookup(void *arg, const struct sl_dep_item *it, struct sl_dep_state *st)
{
    (void)arg, (void)it, (void)st;
    return -EIO;
}

static void refused(const char *text, const char *needle)
{
    struct sl_depend d;
    struct sl_error err = {0};
    int rc = sl_depend_parse(text, &d, &err);
    ok(rc == -EINVAL && strcmp(err.field, "spec.dependency") == 0 && strstr(err.text, needle),
       "'%s' refused: %s", text, err.text);
}

static void normal(const char *text, const char *want)
{
    struct sl_depend d, d2;
    struct sl_error err = {0};
    char buf[SL_DEP_TEXT_MAX], buf2[SL_DEP_TEXT_MAX];
    int rc = sl_depend_parse(text, &d, &err);

    ok(rc == 0, "'%s' parses (%s)", text, err.text);
    ok(sl_depend_format(&d, buf, sizeof(buf)) > 0, "'%s' formats", text);
    is_str(buf, want, "'%s' normalised", text);
    ok(sl_depend_parse(buf, &d2, &err) == 0 && sl_depend_format(&d2, buf2, sizeof(buf2)) > 0 &&
           strcmp(buf, buf2) == 0,
       "'%s': the normalised text reads back the same", text);
}

static void test_parse(void)
{
    struct sl_depend d;
    struct sl_error err = {0};
    char big[4096], buf[SL_DEP_TEXT_MAX];
    size_t len;

    ok(sl_depend_parse("afterok:12:13,afterany:14,singleton", &d, &err) == 0 && d.n == 4,
       "three types, four pairs");
    ok(d.item[0].type == SL_DEP_AFTEROK && d.item[0].id == 12 && d.item[1].id == 13 &&
           d.item[2].type == SL_DEP_AFTERANY && d.item[2].id == 14 &&
           d.item[3].type == SL_DEP_SINGLETON && d.item[3].id == 0,
       "pairs in order");
    normal("afterok:1", "afterok:1");
    normal("afterok:1,afterany:2,afterok:3", "afterok:1:3,afterany:2");
    normal("singleton,afternotok:7", "singleton,afternotok:7");
    normal("afterany:9007199254740992", "afterany:9007199254740992");
    normal("afterok:12_0:12_999999,afterany:12", "afterok:12_0:12_999999,afterany:12");
    normal("afterok:12_3,afterok:12", "afterok:12_3:12");
    ok(sl_depend_parse("afterok:12_3:13", &d, &err) == 0 && d.n == 2 && d.item[0].id == 12 &&
           d.item[0].index == 3 && d.item[1].id == 13 && d.item[1].index == -1,
       "ID_INDEX names an element, a plain ID has index -1");
    refused("afterok:12_", "nor ID_INDEX");
    refused("afterok:_3", "nor ID_INDEX");
    refused("afterok:12_03", "nor ID_INDEX");
    refused("afterok:12_1000000", "nor ID_INDEX");
    refused("afterok:12_*", "unexpected character");
    refused("afterok:12_3_4", "nor ID_INDEX");
    refused("afterok:12_3:12_3", "afterok:12_3 is given twice");
    refused("", "must not be empty");
    refused("after:12", "'after'");
    refused("afterok:12?afterany:13", "'?'");
    refused("afterok", "needs one or more job ids");
    refused("afterok:", "is not a job id");
    refused("afterok:12:", "is not a job id");
    refused("afterok:012", "is not a job id");
    refused("afterok:0", "is not a job id");
    refused("afterok:-1", "unexpected character");
    refused("afterok:9007199254740993", "is not a job id");
    refused("afterok:12+5", "'+time'");
    refused("afterok:1x", "is not a job id");
    refused("AFTEROK:1", "unexpected character");
    refused("afterok: 1", "unexpected character");
    refused("afterok:1,,afterany:2", "empty condition");
    refused(",afterok:1", "empty condition");
    refused("afterok:1,", "empty condition");
    refused("expand:1", "unknown dependency type");
    refused("singleton:3", "takes no job id");
    refused("singleton,singleton", "singleton is given twice");
    refused("afterok:5:5", "afterok:5 is given twice");
    ok(sl_depend_parse("afterok:5,afterany:5", &d, &err) == 0 && d.n == 2,
       "the same id under two types is two conditions");
    /* bounds: 64 pairs at most */
    len = (size_t)snprintf(big, sizeof(big), "afterany");
    for (int i = 1; i <= SL_DEP_MAX; i++)
        len += (size_t)snprintf(big + len, sizeof(big) - len, ":%d", 100000 + i);
    ok(sl_depend_parse(big, &d, &err) == 0 && d.n == SL_DEP_MAX, "%d ids accepted", SL_DEP_MAX);
    ok(sl_depend_format(&d, buf, sizeof(buf)) > 0, "64 ids fit SL_DEP_TEXT_MAX");
    len = 0;
    for (int i = 1; i <= SL_DEP_MAX; i++)
        len += (size_t)snprintf(big + len, sizeof(big) - len, "%s%lld_%d",
                                i > 1 ? ":" : "afternotok:", (long long)9007199254740992 - i,
                                999999);
    ok(sl_depend_parse(big, &d, &err) == 0 && d.n == SL_DEP_MAX &&
           sl_depend_format(&d, buf, sizeof(buf)) > 0,
       "64 of the longest ID_INDEX fit SL_DEP_TEXT_MAX");
    snprintf(big + len, sizeof(big) - len, ":1");
    refused(big, "at most 64 job ids");
    ok(sl_depend_format(&d, buf, 10) == -ENOSPC, "a short buffer: -ENOSPC");
}

static void verdict(struct world *w, const char *text, int want, const char *why_has)
{
    struct sl_depend d;
    struct sl_error err = {0};
    char why[256];
    int v;

    ok(sl_depend_parse(text, &d, &err) == 0, "'%s' parses", text);
    v = sl_depend_eval(&d, lookup, w, 0, SL_JOB_PENDING, why, sizeof(why));
    is_int(v, want, "'%s': verdict", text);
    ok(strstr(why, why_has) != NULL, "'%s': '%s' says '%s'", text, why, why_has);
}

static void test_eval(void)
{
    struct world w = {
        .id = {1, 2, 3, 4, 5, 6, 7},
        .st = {SL_JOB_PENDING, SL_JOB_RUNNING, SL_JOB_SUCCEEDED, SL_JOB_FAILED,
               SL_JOB_CANCELLED, SL_JOB_TIMEOUT, SL_JOB_PREEMPTED},
        .n = 7,
    };
    struct sl_depend d;
    struct sl_error err = {0};
    char why[256];

    verdict(&w, "afterok:3", SL_DEP_MET, "");
    verdict(&w, "afterok:2", SL_DEP_WAIT, "waiting for dependency afterok:2 (job 2 is Running)");
    verdict(&w, "afterok:1", SL_DEP_WAIT, "(job 1 is Pending)");
    verdict(&w, "afterok:7", SL_DEP_WAIT, "(job 7 is Preempted)");
    verdict(&w, "afterok:4", SL_DEP_NEVER,
            "dependency afterok:4 can never be satisfied: job 4 ended Failed");
    verdict(&w, "afterok:6", SL_DEP_NEVER, "job 6 ended Timeout");
    verdict(&w, "afterok:99", SL_DEP_NEVER, "job 99 does not exist");
    verdict(&w, "afternotok:4:5:6", SL_DEP_MET, "");
    verdict(&w, "afternotok:3", SL_DEP_NEVER, "afternotok:3 can never be satisfied: job 3 ended "
                                              "Succeeded");
    verdict(&w, "afternotok:2", SL_DEP_WAIT, "afternotok:2 (job 2 is Running)");
    verdict(&w, "afterany:3:4:5:6", SL_DEP_MET, "");
    verdict(&w, "afterany:3:2", SL_DEP_WAIT, "afterany:2 (job 2 is Running)");
    /* all of: a waiting one does not hide one that can never hold */
    verdict(&w, "afterany:2,afterok:4", SL_DEP_NEVER, "afterok:4 can never");
    verdict(&w, "afterok:3,afterany:1", SL_DEP_WAIT, "afterany:1 (job 1 is Pending)");
    /* singleton: what the caller found */
    ok(sl_depend_parse("singleton", &d, &err) == 0, "singleton parses");
    is_int(sl_depend_eval(&d, lookup, &w, 0, SL_JOB_PENDING, why, sizeof(why)), SL_DEP_MET,
           "singleton with no earlier job: met");
    is_str(why, "", "met: no words");
    is_int(sl_depend_eval(&d, lookup, &w, 41, SL_JOB_RUNNING, why, sizeof(why)), SL_DEP_WAIT,
           "singleton behind job 41: waits");
    is_str(why, "waiting for dependency singleton (job 41 is Running)", "singleton says so");
    ok(sl_depend_parse("afterok:3", &d, &err) == 0, "parses");
    is_int(sl_depend_eval(&d, failing_lookup, &w, 0, SL_JOB_PENDING, why, sizeof(why)), -EIO,
           "a lookup error is returned");
    is_str(sl_dep_type_name(SL_DEP_AFTERNOTOK), "afternotok", "type names");
}

/* Slurm's meaning of an array's id: every element, judged once all ended. */
static void test_arrays(void)
{
    struct world w = {
        .id = {3}, .st = {SL_JOB_SUCCEEDED}, .n = 1,
        .arr = 20, .idx = {0, 2, 4}, .na = 3,
        .ast = {SL_JOB_SUCCEEDED, SL_JOB_RUNNING, SL_JOB_PENDING},
    };

    verdict(&w, "afterok:20", SL_DEP_WAIT,
            "waiting for dependency afterok:20 (array 20: 1 of 3 elements ended; job 21 is "
            "Running)");
    verdict(&w, "afterany:20", SL_DEP_WAIT, "1 of 3 elements ended");
    verdict(&w, "afternotok:20", SL_DEP_WAIT, "afternotok:20 (array 20");
    verdict(&w, "afterok:20_0", SL_DEP_MET, "");
    verdict(&w, "afterok:20_2", SL_DEP_WAIT,
            "waiting for dependency afterok:20_2 (job 21 is Running)");
    verdict(&w, "afterok:20_1", SL_DEP_NEVER,
            "dependency afterok:20_1 can never be satisfied: job 20_1 does not exist");
    verdict(&w, "afterok:3_0", SL_DEP_NEVER, "job 3_0 does not exist");
    /* one element failed while another still runs: Slurm waits for all */
    w.ast[1] = SL_JOB_FAILED;
    verdict(&w, "afterok:20", SL_DEP_WAIT, "2 of 3 elements ended; job 22 is Pending");
    verdict(&w, "afterok:20_2", SL_DEP_NEVER,
            "dependency afterok:20_2 can never be satisfied: job 21 ended Failed");
    verdict(&w, "afternotok:20_2", SL_DEP_MET, "");
    /* every element ended, one of them Failed */
    w.ast[2] = SL_JOB_SUCCEEDED;
    verdict(&w, "afterok:20", SL_DEP_NEVER,
            "dependency afterok:20 can never be satisfied: job 21 (20_2) ended Failed");
    verdict(&w, "afternotok:20", SL_DEP_MET, "");
    verdict(&w, "afterany:20", SL_DEP_MET, "");
    verdict(&w, "afterany:20,afterok:3", SL_DEP_MET, "");
    /* every element Succeeded */
    w.ast[1] = SL_JOB_SUCCEEDED;
    verdict(&w, "afterok:20", SL_DEP_MET, "");
    verdict(&w, "afternotok:20", SL_DEP_NEVER,
            "dependency afternotok:20 can never be satisfied: every element of array 20 ended "
            "Succeeded");
    /* a Cancelled element counts as not ok, as Slurm's does */
    w.ast[0] = SL_JOB_CANCELLED;
    verdict(&w, "afternotok:20", SL_DEP_MET, "");
    verdict(&w, "afterok:20", SL_DEP_NEVER, "job 20 (20_0) ended Cancelled");
}

int main(void)
{
    test_parse();
    test_eval();
    test_arrays();
    return done_testing();
}
