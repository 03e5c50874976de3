/*
 * test_slurm.c - what the Slurm executor reads of Slurm's answers
 * (src/exec/slurm.h): nodes of `scontrol show node -o` (typed GPUs by
 * index, model and domain features, states, reasons), jobs of `scontrol
 * show job -d -o` (state, exit code, the allocation's nodes, GPU indices
 * and shards, heterogeneous components), the phase of each job state, the
 * check of an allocation against the placement decided, and the quoting
 * of the batch script. Lines are as Slurm 22.05 writes them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../src/exec/slurm.h"
#include "../../src/util/util.h"
#include "../tap.h"

static const char node_n2[] =
    "NodeName=n2 Arch=x86_64 CoresPerSocket=1 CPUAlloc=2 CPUEfctv=8 CPUTot=8 CPULoad=0.31 "
    "AvailableFeatures=gpu_H100,domain_rack1 ActiveFeatures=gpu_H100,domain_rack1 "
    "Gres=gpu:g0:1,gpu:g1:1,gpu:g2:1,gpu:g3:1,gpu:g4:1,gpu:g5:1,gpu:g6:1,gpu:g7:1,"
    "shard:g0:1000,shard:g1:1000,shard:g2:1000,shard:g3:1000,shard:g4:1000,shard:g5:1000,"
    "shard:g6:1000,shard:g7:1000 NodeAddr=vm NodeHostName=vm Port=17002 Version=22.05.8 "
    "OS=Linux 6.1.0 #1 SMP RealMemory=8000 AllocMem=100 FreeMem=2000 Sockets=8 Boards=1 "
    "State=MIXED+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A "
    "Partitions=main,debug BootTime=2026-12-04T14:07:00 SlurmdStartTime=2026-12-04T17:00:00 "
    "LastBusyTime=2026-12-04T17:00:05 CfgTRES=cpu=8,mem=8000M,billing=8,gres/gpu=8 "
    "AllocTRES=cpu=2,mem=100M,gres/gpu=2 CapWatts=n/a CurrentWatts=0 AveWatts=0 "
    "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s "
    "Reason=disk replaced soon [root@2026-12-04T17:01:00]";

static void nodes(void)
{
    struct sl_slurm_node n;

    is_int(sl_slurm_parse_node(node_n2, &n), 0, "a node line parses");
    is_str(n.info.name, "n2", "its name");
    ok(n.info.cpu_milli == 8000 && n.info.mem_bytes == 8000LL << 20,
       "8 CPUs and 8000 MiB of memory");
    is_int(n.info.ngpus, 8, "8 GPUs, one GRES type per index");
    ok(n.info.gpus == n.gpus && n.gpus[3].index == 3 && strcmp(n.gpus[7].model, "H100") == 0,
       "GPU 3 is index 3, every GPU's model from the feature gpu_H100");
    is_str(n.info.domain, "rack1", "the domain from the feature domain_rack1");
    is_int(n.info.state, SL_NODE_DRAINING, "MIXED+DRAIN is draining");
    is_str(n.info.reason, "disk replaced soon [root@2026-12-04T17:01:00]",
           "the reason, spaces and all");
    ok(sl_slurm_list_has(n.partitions, "main") && sl_slurm_list_has(n.partitions, "debug") &&
           !sl_slurm_list_has(n.partitions, "mai"),
       "its partitions, matched whole");
    ok(sl_slurm_lists_meet("gpu,main", n.partitions) && !sl_slurm_lists_meet("gpu,ma", n.partitions),
       "a list of partitions meets the node's when one is its");
    is_str(n.info.gpu_source, "slurm", "its GPUs are Slurm's");

    static const struct {
        const char *state;
        enum sl_node_state want;
    } states[] = {
        /* State=, what it is to the inventory */
        {"IDLE", SL_NODE_UP},           {"MIXED", SL_NODE_UP},
        {"ALLOCATED", SL_NODE_UP},      {"IDLE+DRAIN", SL_NODE_DRAINING},
        {"DRAINED", SL_NODE_DRAINING},  {"DOWN", SL_NODE_DOWN},
        {"DOWN+DRAIN", SL_NODE_DOWN},   {"IDLE*", SL_NODE_DOWN},
        {"DOWN+NOT_RESPONDING", SL_NODE_DOWN},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(states); i++) {
        char line[128];
        snprintf(line, sizeof(line), "NodeName=x CPUTot=1 RealMemory=1 State=%s Partitions=p",
                 states[i].state);
        ok(sl_slurm_parse_node(line, &n) == 0 && n.info.state == states[i].want,
           "State=%s is %s", states[i].state, sl_node_state_name(states[i].want));
    }
    ok(sl_slurm_parse_node("NodeName=u CPUTot=4 Gres=gpu:8 State=IDLE", &n) == 0 &&
           n.info.ngpus == 0 && strstr(n.info.reason, "8 GPUs without a type per index"),
       "untyped GPUs cannot be placed exactly: none, and the node says why");
    is_int(sl_slurm_parse_node("Nodes=junk", &n), -EINVAL, "a line without NodeName is refused");
    ok(sl_slurm_parse_node("NodeName=n9 CPUTot=1 Gres=gpu:g99:1 State=IDLE", &n) == 0 &&
           n.info.ngpus == 0,
       "a GPU type beyond 64 is not a GPU index");
    ok(sl_slurm_parse_node("NodeName=s CPUTot=1 Gres=gpu:g0:1,gpu:g1:1,shard:g0:1000 "
                           "State=IDLE", &n) == 0 &&
           n.info.ngpus == 2 && strstr(n.info.reason, "1 of its 2 GPUs without shard:gN:1000"),
       "a GPU without 1000 shards: placeable whole, and the node says a fraction is refused");
    ok(sl_slurm_parse_node("NodeName=s CPUTot=1 Gres=gpu:g0:1,gpu:g1:1,gpu:g3:1,gpu:g4:1 "
                           "State=IDLE", &n) == 0 &&
           n.info.ngpus == 2 && n.info.gpus[1].index == 1 &&
           strstr(n.info.reason, "GPU index g2 is missing from Gres=: Sluice places on g0-g1"),
       "a GPU index missing (g2): only the GPUs below it, and the node says why");
    ok(sl_slurm_parse_node("NodeName=s CPUTot=1 Gres=gpu:g1:1 State=IDLE", &n) == 0 &&
           n.info.ngpus == 0 && strstr(n.info.reason, "g0 is missing"),
       "g0 missing: no GPU to place on");
    ok(sl_slurm_parse_node("NodeName=s CPUTot=1 Gres=gpu:g0:1 State=DRAIN Reason=fan", &n) ==
               0 &&
           strcmp(n.info.reason, "fan") == 0,
       "Slurm's own reason comes before the shard note");
}

static void jobs(void)
{
    struct sl_slurm_job j;
    static const char running[] =
        "JobId=41 JobName=sluice-7-0 UserId=nobody(65534) GroupId=nogroup(65534) "
        "MCS_label=N/A Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=RUNNING "
        "Reason=None Dependency=(null) Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 "
        "DerivedExitCode=0:0 RunTime=00:00:02 TimeLimit=00:03:00 NodeList=n2 BatchHost=n2 "
        "NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 TRES=cpu=1,mem=100M,node=1,gres/gpu=2 "
        "JOB_GRES=gpu:g3:1,gpu:g5:1 Nodes=n2 CPU_IDs=0 Mem=100 GRES=gpu:g3:1(IDX:3),"
        "gpu:g5:1(IDX:5) MinCPUsNode=1 MinMemoryNode=100M Command=(null) "
        "WorkDir=/ StdOut=/shared/7.0.log";
    struct sl_slurm_place want = {.node = "n2", .ngpus = 2, .gpus = {3, 5}};
    char why[160];

    is_int(sl_slurm_parse_job(running, &j), 0, "a job line parses");
    ok(j.id == 41 && j.het_offset == 0 && strcmp(j.name, "sluice-7-0") == 0,
       "its id, no component offset, its name");
    is_str(j.state, "RUNNING", "its state");
    is_int(j.nplaces, 1, "one node in its allocation");
    ok(strcmp(j.places[0].node, "n2") == 0 && j.places[0].ngpus == 2 &&
           j.places[0].gpus[0] == 3 && j.places[0].gpus[1] == 5 && j.places[0].nshards == 0,
       "n2, GPUs 3 and 5 by index, no shards");
    is_int(sl_slurm_check_place(&j.places[0], &want, why, sizeof(why)), 0,
           "the allocation is the one decided");
    want.gpus[1] = 6;
    is_int(sl_slurm_check_place(&j.places[0], &want, why, sizeof(why)), -EINVAL,
           "GPUs 3 and 6 were not given");
    is_str(why, "Slurm did not give GPU 6 on n2", "saying which");
    want.ngpus = 1;
    is_int(sl_slurm_check_place(&j.places[0], &want, why, sizeof(why)), -EINVAL,
           "a GPU more than decided");
    is_str(why, "Slurm gave GPU 5 on n2, not decided", "saying which");
    want.gpus[1] = 5;
    want.ngpus = 2;
    snprintf(want.node, sizeof(want.node), "n1");
    is_int(sl_slurm_check_place(&j.places[0], &want, why, sizeof(why)), -EINVAL,
           "another node");
    is_str(why, "Slurm ran it on n2, not n1", "saying where");

    ok(sl_slurm_parse_job("JobId=42 JobName=x JobState=RUNNING ExitCode=0:0 NodeList=n1 "
                          "Nodes=n1 CPU_IDs=0 Mem=10 GRES=shard:g3:500(IDX:3),shard:g4:1K(IDX:4)",
                          &j) == 0 &&
           j.places[0].nshards == 2 && j.places[0].shard_gpu[0] == 3 &&
           j.places[0].shards[0] == 500 && j.places[0].shard_gpu[1] == 4 &&
           j.places[0].shards[1] == 1024 && j.places[0].ngpus == 0,
       "shards of GPUs 3 and 4, 1K read as 1024");
    want = (struct sl_slurm_place){.node = "n1", .nshards = 2, .shard_gpu = {4, 3},
                                   .shards = {1024, 500}};
    is_int(sl_slurm_check_place(&j.places[0], &want, why, sizeof(why)), 0,
           "shards of GPUs 3 and 4 as decided, in any order");
    want.shards[1] = 400;
    is_int(sl_slurm_check_place(&j.places[0], &want, why, sizeof(why)), -EINVAL,
           "another number of shards");
    is_str(why, "Slurm gave 500 shards of GPU 3 on n1, not 400", "saying how many");
    ok(sl_slurm_parse_job("JobId=43 JobName=x JobState=COMPLETED ExitCode=7:0 NodeList=n1",
                          &j) == 0 &&
           j.exit_code == 7 && j.nplaces == 0,
       "ExitCode=7:0 is code 7");
    ok(sl_slurm_parse_job("JobId=44 JobName=x JobState=CANCELLED ExitCode=0:15", &j) == 0 &&
           j.exit_code == 128 + 15,
       "ExitCode=0:15 is 128 + SIGTERM");
    ok(sl_slurm_parse_job("JobId=46 HetJobId=45 HetJobOffset=1 JobName=sluice-9-0 "
                          "JobState=RUNNING ExitCode=0:0 Nodes=n3 CPU_IDs=0 Mem=1 "
                          "GRES=gpu:g0:1(IDX:0)",
                          &j) == 0 &&
           j.id == 46 && j.het_offset == 1 && strcmp(j.places[0].node, "n3") == 0 &&
           j.places[0].gpus[0] == 0,
       "a heterogeneous job's component 1, on n3 with GPU 0");
    ok(sl_slurm_parse_job("JobId=47 JobName=g JobState=RUNNING ExitCode=0:0 "
                          "Nodes=n1 CPU_IDs=0 Mem=1 GRES=gpu:g1:1(IDX:1) "
                          "Nodes=n3 CPU_IDs=0 Mem=1 GRES=gpu:g2:1(IDX:2)",
                          &j) == 0 &&
           j.nplaces == 2 && strcmp(j.places[1].node, "n3") == 0 && j.places[1].gpus[0] == 2 &&
           j.places[0].gpus[0] == 1,
       "a job over two nodes: each node's own GPUs");
    is_int(sl_slurm_parse_job("JobState=RUNNING", &j), -EINVAL, "a line without JobId is refused");
    is_int(sl_slurm_parse_job("JobId=1 JobState=RUNNING ExitCode=x:y", &j), -EINVAL,
           "and one with a bad ExitCode");
}

/* StartTime and EndTime: scontrol prints local time; TZ is set to UTC
 * here so that the figures are fixed. */
static void times(void)
{
    struct sl_slurm_job j;

    setenv("TZ", "UTC", 1);
    tzset();
    ok(sl_slurm_parse_job("JobId=50 JobName=x JobState=COMPLETED ExitCode=0:0 "
                          "SubmitTime=2026-12-04T18:29:59 StartTime=2026-12-04T18:30:01 "
                          "EndTime=2026-12-04T18:30:04 Deadline=N/A",
                          &j) == 0 &&
           j.start_ms == 1796409001000LL && j.end_ms == 1796409004000LL,
       "an ended job: StartTime and EndTime read as ms since the epoch");
    ok(sl_slurm_parse_job("JobId=51 JobName=x JobState=RUNNING ExitCode=0:0 "
                          "StartTime=2026-12-04T18:30:01 EndTime=2026-12-04T19:30:01",
                          &j) == 0 &&
           j.start_ms == 1796409001000LL && j.end_ms == 0,
       "a running job: its start, and no end (EndTime is its time limit)");
    ok(sl_slurm_parse_job("JobId=52 JobName=x JobState=PENDING ExitCode=0:0 "
                          "StartTime=2026-12-04T18:40:00 EndTime=2026-12-04T19:40:00",
                          &j) == 0 &&
           j.start_ms == 0 && j.end_ms == 0,
       "a waiting job: StartTime is Slurm's guess, not read");
    ok(sl_slurm_parse_job("JobId=53 JobName=x JobState=CANCELLED ExitCode=0:15 "
                          "StartTime=Unknown EndTime=2026-12-04T18:30:04",
                          &j) == 0 &&
           j.start_ms == 0 && j.end_ms == 1796409004000LL,
       "StartTime=Unknown is no start");
    /* a jobcomp/filetxt line (docs/slurm.md): Name=, not JobName= */
    ok(sl_slurm_parse_job("JobId=21 UserId=root(0) GroupId=root(0) Name=wrap JobState=FAILED "
                          "Partition=main TimeLimit=525600 StartTime=2026-12-04T18:30:01 "
                          "EndTime=2026-12-04T18:30:04 NodeList=n1 NodeCnt=1 ProcCnt=1 "
                          "WorkDir=/tmp ReservationName= Tres=cpu=1,mem=100M,node=1,billing=1 "
                          "Account= QOS= WcKey= Cluster=unknown "
                          "SubmitTime=2026-12-04T18:29:59 EligibleTime=2026-12-04T18:29:59 "
                          "DerivedExitCode=9:0 ExitCode=7:0 ",
                          &j) == 0 &&
           j.id == 21 && strcmp(j.state, "FAILED") == 0 && j.exit_code == 7 &&
           j.start_ms == 1796409001000LL && j.end_ms == 1796409004000LL,
       "a jobcomp line: its state, ExitCode (not DerivedExitCode) and times");
    static const char *const bad[] = {"2026-12-04 18:30:01", "2026-13-04T18:30:01",
                                      "2026-12-04T24:30:01", "+026-12-04T18:30:01",
                                      "2026-12-04T18:30:011", "2026-12-00T18:30:01",
                                      "2026-02-31T18:30:01", "1013-12-04T18:30:01"};
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        char line[160];
        snprintf(line, sizeof(line),
                 "JobId=54 JobName=x JobState=COMPLETED ExitCode=0:0 StartTime=%s "
                 "EndTime=%s",
                 bad[i], bad[i]);
        ok(sl_slurm_parse_job(line, &j) == 0 && j.start_ms == 0 && j.end_ms == 0,
           "a time of another shape (%s) is no time", bad[i]);
    }
}

/* The executor's squeue lines: SL_SLURM_SQUEUE_FORMAT, as Slurm 22.05
 * printed them on the lab. */
static void squeue_lines(void)
{
    struct sl_slurm_job j;

    ok(sl_slurm_parse_squeue("3|N/A|N/A|FAILED|768|2026-12-04T18:30:01|2026-12-04T18:30:04|"
                             "NonZeroExitCode",
                             &j) == 0 &&
           j.id == 3 && j.het_offset == 0 && strcmp(j.state, "FAILED") == 0 &&
           j.exit_code == 3 && j.start_ms == 1796409001000LL &&
           j.end_ms == 1796409004000LL && strcmp(j.reason, "NonZeroExitCode") == 0,
       "an ended job: exit code 3 from the wait status 768, its times and reason");
    ok(sl_slurm_parse_squeue("9|N/A|N/A|CANCELLED|9|2026-12-04T18:30:01|2026-12-04T18:30:04|"
                             "None",
                             &j) == 0 &&
           j.exit_code == 128 + 9,
       "a job killed by signal 9: 137");
    ok(sl_slurm_parse_squeue("5|4|1|RUNNING|0|2026-12-04T18:30:01|2027-12-04T18:30:01|None",
                             &j) == 0 &&
           j.id == 4 && j.het_offset == 1 && j.start_ms == 1796409001000LL && j.end_ms == 0,
       "a component of a heterogeneous job: its job's id and its offset; no end while it runs");
    ok(sl_slurm_parse_squeue("4|4|0|PENDING|0|2027-12-05T08:09:58|NONE|Resources", &j) == 0 &&
           j.id == 4 && j.het_offset == 0 && j.start_ms == 0 && j.end_ms == 0,
       "a waiting job: StartTime is Slurm's guess, not read");
    ok(sl_slurm_parse_squeue("7|N/A|N/A|PENDING|0|N/A|N/A|ReqNodeNotAvail, UnavailableNodes:n3",
                             &j) == 0 &&
           strcmp(j.reason, "ReqNodeNotAvail, UnavailableNodes:n3") == 0,
       "the reason is the rest of the line, spaces and all");
    static const char *const bad[] = {
        "",
        "3|N/A|N/A|FAILED|768|x|y",                      /* no reason field */
        "3|N/A|N/A|FAILED||x|y|r",                       /* no status */
        "3|N/A|N/A|FAILED|70000|x|y|r",                  /* a status too large */
        "3|N/A|N/A|FAILED|-1|x|y|r",
        "0|N/A|N/A|FAILED|0|x|y|r",                      /* no job 0 */
        "3x|N/A|N/A|FAILED|0|x|y|r",
        "3|N/A|1|FAILED|0|x|y|r",                        /* an offset without a het job */
        "3|4|N/A|FAILED|0|x|y|r",
        "3|N/A|N/A||0|x|y|r",                            /* no state */
        "3|N/A|N/A|failed|0|x|y|r",                      /* not Slurm's shape */
        "3|N/A|N/A|RUN NING|0|x|y|r",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++)
        ok(sl_slurm_parse_squeue(bad[i], &j) == -EINVAL, "refused: '%s'", bad[i]);
}

static void phases(void)
{
    ok(sl_slurm_phase("PENDING") == SL_SLURM_WAITING &&
           sl_slurm_phase("CONFIGURING") == SL_SLURM_WAITING &&
           sl_slurm_phase("RUNNING") == SL_SLURM_RUNNING &&
           sl_slurm_phase("COMPLETING") == SL_SLURM_RUNNING,
       "PENDING and CONFIGURING wait, RUNNING and COMPLETING run");
    ok(sl_slurm_phase("COMPLETED") == SL_SLURM_ENDED && sl_slurm_phase("FAILED") == SL_SLURM_ENDED &&
           sl_slurm_phase("CANCELLED") == SL_SLURM_ENDED &&
           sl_slurm_phase("TIMEOUT") == SL_SLURM_ENDED,
       "COMPLETED, FAILED, CANCELLED, TIMEOUT have an exit code");
    ok(sl_slurm_phase("NODE_FAIL") == SL_SLURM_LOST && sl_slurm_phase("BOOT_FAIL") == SL_SLURM_LOST,
       "NODE_FAIL and BOOT_FAIL are lost");
}

static void quoting(void)
{
    struct sl_buf b;

    sl_buf_init(&b);
    sl_slurm_shell_quote(&b, "it's $HOME `x` \"y\"");
    is_str(b.data, "'it'\\''s $HOME `x` \"y\"'", "single quotes, a quote closed and escaped");
    sl_buf_fini(&b);
}

/* `scontrol show config`, cut from Slurm 22.05's answer: the lab's (no
 * cgroup) and a site's with task/cgroup and cgroup.conf. */
static void confine(void)
{
    struct sl_slurm_confine c;
    const char *lab = "Configuration data as of 2026-12-04T17:07:12\n"
                      "ProctrackType           = proctrack/linuxproc\n"
                      "TaskPlugin              = task/none\n"
                      "TaskPluginParam         = (null type)\n";
    const char *site = "TaskPlugin              = task/affinity,task/cgroup\n"
                       "TaskPluginParam         = (null type)\n"
                       "\nCgroup Support Configuration:\n"
                       "ConstrainCores          = yes\n"
                       "ConstrainDevices        = yes\n"
                       "ConstrainRAMSpace       = no\n"
                       "ConstrainSwapSpace      = no\n";

    ok(sl_slurm_parse_confine(lab, &c) == 0 && !c.task_cgroup && !c.cores && !c.ram &&
           !c.devices,
       "task/none: nothing confined");
    ok(sl_slurm_parse_confine(site, &c) == 0 && c.task_cgroup && c.cores && !c.ram && c.devices,
       "task/cgroup in a list, ConstrainCores and ConstrainDevices yes, RAM no");
    ok(sl_slurm_parse_confine("TaskPluginParam = x\nConstrainDevices = yes\n", &c) == -EINVAL,
       "no TaskPlugin line: refused (TaskPluginParam is another key)");
    ok(sl_slurm_parse_confine("TaskPlugin=task/cgroup\nConstrainDevices=YES", &c) == 0 &&
           c.task_cgroup && c.devices,
       "no blanks around '=' and a last line without newline");
}

int main(void)
{
    confine();
    nodes();
    jobs();
    times();
    squeue_lines();
    phases();
    quoting();
    return done_testing();
}
