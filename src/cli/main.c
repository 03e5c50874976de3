/*
 * main.c - `sluice`, the command-line client of sluiced: the command table,
 * global options, help, and dispatch.
 *
 * A command is a row of 'commands'. Global options may come before or
 * after the command name; each command parses its own options and the
 * global ones through sl_cli_next. Exit codes: see enum sl_cli_exit.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int cmd_help(struct sl_cli_ctx *ctx, int argc, char **argv);

/* The commands: name, handler (argv[0] = name), one-line help, usage text
 * printed by `sluice help NAME` and `sluice NAME --help` (NULL for the
 * commands reserved for a later release). */
/* clang-format off */
static const struct sl_cli_command commands[] = {
    {"submit", sl_cli_cmd_submit, "submit a job from a YAML or JSON file; prints the job id",
     "usage: sluice submit -f FILE [--dry-run]\n"
     "\n"
     "Submit the job document in FILE (YAML, or JSON when it starts with '{';\n"
     "'-' reads standard input; at most 1 MiB). Prints the job id; with\n"
     "-o json, the job object.\n"
     "\n"
     "  -f, --file FILE   the job document\n"
     "  --dry-run         only the admission verdict; nothing is created\n"},
    {"run", sl_cli_cmd_run, "submit a job from flags; prints the job id",
     "usage: sluice run [FLAGS] [--] CMD [ARGS...]\n"
     "\n"
     "Build a job document from the flags and submit it. Prints the job id;\n"
     "with -o json, the job object. Options end at CMD or at '--'.\n"
     "\n"
     "  --name N            job name ([a-z0-9-], at most 63 characters)\n"
     "  --team T            team (default: yours)\n"
     "  --project P         project, for reports\n"
     "  --queue Q           queue (default: the team's default queue)\n"
     "  --gpus N            whole GPUs per task (0..64)\n"
     "  --gpu-milli M       a fraction of one GPU per task (1..1000)\n"
     "  --gpu-model M       allowed GPU models; repeat or give a comma list\n"
     "  --cpus C            CPUs per task: 2, 0.5, 250m\n"
     "  --memory Q          memory per task: 4Gi, 512Mi, 1G\n"
     "  --tasks N           tasks (1..1024); more than one starts all or none\n"
     "  --priority P        priority class (spec.priorityClass)\n"
     "  --max-runtime D     run time limit: 90s, 2h, 1h30m\n"
     "  --retries N         retries after a failure (0..100)\n"
     "  --image I           image, governed and recorded\n"
     "  -e, --env K=V       environment variable; repeatable\n"
     "  --topology T        any, same-node or same-domain\n"
     "  --chdir DIR         where the job starts (spec.workdir; a relative DIR\n"
     "                      is taken under the current directory); default:\n"
     "                      the current directory\n"
     "  --export E          environment sent (spec.env): ALL (default: all but\n"
     "                      the executor's, session and secret-looking\n"
     "                      variables), NONE, or VAR[,VAR...]; -e wins\n"
     "  -d, --dependency D  start only after other jobs (spec.dependency, Slurm's\n"
     "                      syntax): afterok:ID[:ID...], afternotok:..., afterany:...,\n"
     "                      singleton; several joined with ',' (all must hold)\n"
     "  -a, --array A       a job array (spec.array): one job per index, e.g.\n"
     "                      0-99%8 (at most 8 running), 1,3,5-7, 0-15:4; each\n"
     "                      gets SLUICE_ARRAY_INDEX; prints the array's id\n"
     "  -i, --interactive   an interactive job (spec.interactive): wait for it\n"
     "                      to start (why it waits on stderr; Ctrl-C cancels\n"
     "                      it), then attach stdin and stdout to its terminal;\n"
     "                      exits with the command's exit code\n"
     "  -t, --tty           as -i, with this terminal in raw mode and its size\n"
     "                      sent (-it); without a terminal, as -i\n"},
    {"shell", sl_cli_cmd_shell, "a shell on an allocation: run -it of your login shell",
     "usage: sluice shell [FLAGS]\n"
     "\n"
     "sluice run -it [FLAGS] -- the job account's login shell (SHELL; /bin/sh\n"
     "for an account whose shell is nologin or false): an interactive job on a\n"
     "terminal attached to this one, with the resources the flags of run give\n"
     "(by default the server's: 1 CPU, 1 GiB, no GPU). The job ends when the\n"
     "shell exits; sluice exits with its exit code.\n"},
    {"attach", sl_cli_cmd_attach, "attach to an interactive job's terminal again",
     "usage: sluice attach JOB\n"
     "\n"
     "The terminal of an interactive job (run -i, run -it, shell) a client\n"
     "left: Ctrl-C after attaching, a closed laptop, a lost connection. Waits\n"
     "while the job is pending (Ctrl-C then stops waiting; the job stays), then\n"
     "carries its terminal as run -it does (raw mode when stdin and stdout are\n"
     "terminals, else the bytes as they come) and exits with the command's exit\n"
     "code. The task's last 4 KiB of output are shown first. One client at a\n"
     "time; a job left unattached ends after sluiced's\n"
     "--interactive-detach-grace.\n"},
    {"jobs", sl_cli_cmd_jobs, "list jobs (default: pending and running)",
     "usage: sluice jobs [--team T] [--state S] [--user U] [--queue Q]\n"
     "                   [--priority P] [--since T] [--limit N] [--watch]\n"
     "\n"
     "List jobs, oldest first. Table columns: ID NAME TEAM QUEUE STATE GPUS\n"
     "(total over tasks) TIME (pending: since submission; running: since start;\n"
     "finished: run time) EXIT REASON; -o wide adds USER, PRIORITY, SUBMITTED\n"
     "and NODES. -o json (or yaml) prints an array of job objects; -o csv one\n"
     "row per job with full timestamps. --watch lists them again every 2 s.\n"
     "\n"
     "  --team T    only this team's jobs\n"
     "  --state S   Pending, Running, Succeeded, Failed, Cancelled, Preempted,\n"
     "              Lost, Timeout (any case), a comma list, or all (default:\n"
     "              Pending,Running)\n"
     "  -u, --user U       only this user's jobs\n"
     "  -q, --queue Q      only this queue's jobs\n"
     "  -p, --priority P   only jobs of this priority class\n"
     "  --since T          only jobs submitted at or after T: a time\n"
     "                     (2026-12-01, RFC 3339) or a duration ago (90m, 2h, 1d)\n"
     "  -n, --limit N      only the newest N of them (1..1000000)\n"
     "  -r, --expand       each element of a job array on a line of its own\n"
     "                     (ID_INDEX); without it an array is one line,\n"
     "                     ID_[ARRAY], its elements counted by state\n"},
    {"show", sl_cli_cmd_show, "show one job and its events",
     "usage: sluice show JOB\n"
     "\n"
     "Show the job: who, where, state, exit code, times, placement, reason,\n"
     "command, then its events. -o json prints the job object as the server\n"
     "returns it; -o csv the row `jobs -o csv` prints.\n"},
    {"logs", sl_cli_cmd_logs, "print a job's output",
     "usage: sluice logs JOB [-f] [--task N] [--attempt N]\n"
     "\n"
     "Print the output of one task of the job, byte for byte. A job of more\n"
     "than one attempt (requeued, preempted, retried) gets a line before each\n"
     "attempt's output: ==> attempt 1 (started ..., after preemption) <==\n"
     "\n"
     "A pending job without output gets a line on stderr: not started yet.\n"
     "\n"
     "  -f, --follow   keep printing new output until the job has finished;\n"
     "                 across a restart of the server (reconnects for up to\n"
     "                 2 minutes, from the byte it had reached)\n"
     "  --task N       the task (default 0)\n"
     "  --attempt N    that attempt's output alone (0 = the first)\n"},
    {"cancel", sl_cli_cmd_cancel, "cancel jobs",
     "usage: sluice cancel JOB [JOB...]\n"
     "\n"
     "Cancel each job: a pending job at once, a running one with SIGTERM,\n"
     "a grace period, then SIGKILL. Prints one line per job. Exit 2 when the\n"
     "server refused any of them (e.g. already finished). The id of a job\n"
     "array cancels its pending and running elements (one request, all or\n"
     "none); ID_INDEX (12_5) one element.\n"},
    {"hold", sl_cli_cmd_jobctl, "hold pending jobs: kept in line, not scheduled",
     "usage: sluice hold JOB [JOB...]\n"
     "\n"
     "Hold each pending job: it keeps its place in line (its submit time) but\n"
     "is not scheduled until released; sluice jobs and show say held, why\n"
     "says why. The hold outlives a restart of sluiced. Only the job's user,\n"
     "a team-admin of its team or an admin may. A running job cannot be held\n"
     "(409). An admin's or team-admin's hold of another user's job is an\n"
     "admin hold, which that user cannot release. Prints one line per job;\n"
     "exit 2 when any was refused.\n"},
    {"release", sl_cli_cmd_jobctl, "release held jobs",
     "usage: sluice release JOB [JOB...]\n"
     "\n"
     "Release each held job: it is scheduled again from its place in line.\n"
     "The same users as hold may, but an admin hold only an admin or a\n"
     "team-admin of the job's team (403). A job that is not held is refused\n"
     "(409). Prints one line per job; exit 2 when any was refused.\n"},
    {"requeue", sl_cli_cmd_jobctl, "send running jobs back to Pending, through the checkpoint",
     "usage: sluice requeue JOB [JOB...] [--hold]\n"
     "\n"
     "Requeue each running job as a preemption would: its checkpoint signal,\n"
     "its grace, then SIGKILL; then it is Pending again with its submit time\n"
     "(its place in line) as its next attempt, and no retry is used. The same\n"
     "users as hold may. A job that is not running is refused (409).\n"
     "\n"
     "  --hold   and hold it once it is back in line (scontrol requeuehold)\n"},
    {"update", sl_cli_cmd_update, "change a job's class, queue, GPUs or maxRuntime",
     "usage: sluice update JOB [--priority-class C] [--queue Q] [--gpus N]\n"
     "                         [--max-runtime D]\n"
     "\n"
     "Change a pending job's priority class, queue (of its team), GPUs per\n"
     "task or maxRuntime, or a running job's maxRuntime. A new class, queue\n"
     "or GPU count is refused where a submission with it would be (admission\n"
     "policy, a spent budget, a request no node or limit can ever hold); the\n"
     "job keeps its place in line (its submit time). maxRuntime is lower only\n"
     "(an admin may raise it); a running job's limit counts from its start,\n"
     "so one already past the new limit gets its checkpoint signal at once.\n"
     "The same users as hold may; audited with each old and new value.\n"
     "\n"
     "  --priority-class C   the new class (also --priority C)\n"
     "  --queue Q            the new queue, one of the job's team\n"
     "  --gpus N             whole GPUs per task, 0 to 64\n"
     "  --max-runtime D      the new limit, e.g. 30m, 2h\n"},
    {"nodes", sl_cli_cmd_nodes, "list nodes and their GPUs",
     "usage: sluice nodes\n"
     "\n"
     "One line per node (CPUS, MEMORY and GPUS as allocated/total), then one\n"
     "line per GPU: index, model, memory, allocated milli-GPU, jobs. STATE is\n"
     "an admin's cordoned, draining or drained (REASON then says why, who and\n"
     "since when), else the executor's up, draining or down.\n"
     "-o json prints the array of node objects.\n"},
    {"drain", sl_cli_cmd_node_state, "drain a node: no new work; its running work finishes",
     "usage: sluice drain NODE [--reason TEXT]\n"
     "\n"
     "Keep new work off NODE and let the jobs running there finish (Slurm's\n"
     "DRAIN): `sluice nodes` shows it draining until its last job has ended,\n"
     "then drained. Admins only; audited. Again with a new reason replaces the\n"
     "reason; otherwise a repeat changes nothing. `sluice uncordon` ends it.\n"
     "\n"
     "  -r, --reason TEXT   why (at most 256 printable characters)\n"},
    {"cordon", sl_cli_cmd_node_state, "cordon a node: no new work",
     "usage: sluice cordon NODE [--reason TEXT]\n"
     "\n"
     "Keep new work off NODE; what runs there goes on (kubectl's cordon).\n"
     "Admins only; audited. `sluice uncordon` ends it.\n"
     "\n"
     "  -r, --reason TEXT   why (at most 256 printable characters)\n"},
    {"uncordon", sl_cli_cmd_node_state, "return a cordoned or drained node to service",
     "usage: sluice uncordon NODE [--reason TEXT]\n"
     "\n"
     "NODE takes new work again (it ends a cordon and a drain alike; a node\n"
     "its executor reports down stays out of service). Admins only; audited.\n"
     "\n"
     "  -r, --reason TEXT   why (at most 256 printable characters)\n"},
    {"apply", sl_cli_cmd_apply, "declare teams, queues, priority classes, users",
     "usage: sluice apply -f FILE [--replace]\n"
     "\n"
     "Apply the manifests in FILE (YAML documents separated by '---', or a\n"
     "JSON object or array; '-' reads standard input; at most 1 MiB). Prints\n"
     "one line per object, e.g. \"team/vision created\". A document that\n"
     "leaves out a field its object has set is refused, naming the field\n"
     "and its value now (see `sluice diff`), unless --replace.\n"
     "\n"
     "  -f, --file FILE   the manifests\n"
     "  --replace         fields left out take their defaults\n"},
    {"diff", sl_cli_cmd_diff, "what apply -f FILE would change, changing nothing",
     "usage: sluice diff -f FILE\n"
     "\n"
     "The server checks FILE as apply does and keeps nothing. One line per\n"
     "object (would be created, would change, unchanged), then per changed\n"
     "field 'spec.FIELD: OLD -> NEW', marked when FILE left it out (apply\n"
     "refuses those without --replace). -o json prints the server's answer.\n"
     "\n"
     "  -f, --file FILE   the manifests\n"},
    {"get", sl_cli_cmd_get, "list the objects of a kind, or one",
     "usage: sluice get KIND [NAME]\n"
     "\n"
     "KIND: team, queue, cohort, priorityclass, user, scheduler, pricing,\n"
     "budget, policy or dataset, singular or plural, any case ('-' and '_'\n"
     "ignored). One line per object: KIND NAME and its spec as field=value.\n"
     "A dataset's NAME is name@version. -o json prints the manifests (apply\n"
     "takes them back); -o csv kind, name, spec.\n"},
    {"describe", sl_cli_cmd_describe, "one object: every field and what relates to it",
     "usage: sluice describe KIND NAME\n"
     "\n"
     "Every field of the object's spec, defaults filled in, then what\n"
     "relates to it: a queue's use, borrowing, pending and running jobs; a\n"
     "team's users and queues; a cohort's queues. -o json prints the object.\n"},
    {"delete", sl_cli_cmd_delete, "delete an object (refused while others depend on it)",
     "usage: sluice delete KIND NAME [--force]\n"
     "\n"
     "Admins only; every deletion is audited. Refused, naming what blocks,\n"
     "while something depends on the object: a queue with pending or running\n"
     "jobs, or that is a team's default queue; a team with users, queues or\n"
     "budgets; a cohort with queues; a priority class, user or dataset that\n"
     "live jobs use; a user with live tokens. The Scheduler and the Pricing\n"
     "are never deleted.\n"
     "\n"
     "  --force   cancel a queue's jobs (pending ones end at once; with running\n"
     "            ones the queue stays until they have ended: delete again),\n"
     "            revoke a user's tokens, delete a team's users, queues and\n"
     "            budgets with it (never while its queues have jobs)\n"},
    {"why", sl_cli_cmd_why, "why a job is pending: blockers, queue position, ETA",
     "usage: sluice why JOB\n"
     "\n"
     "Explain why the job waits: the queue and its place in it, each blocking\n"
     "constraint with its numbers (quota, cohort, user limit, GPU model quota,\n"
     "nodes that cannot take a task, gang, reservation, retry backoff, jobs\n"
     "being preempted for it), the estimated start and what would let it run.\n"
     "A running or finished job gets one line. -o json prints the server's\n"
     "explanation; -o csv one row per blocker: job, kind, resource, used,\n"
     "limit, short, detail (GPUs and CPUs as decimals, memory in bytes).\n"},
    {"queues", sl_cli_cmd_queues, "list queues: quota, use, borrowing, pending jobs",
     "usage: sluice queues [--team T]\n"
     "\n"
     "One line per queue: QUEUE TEAM COHORT GPUS (used/nominal; '-' when the\n"
     "queue has no GPU quota) BORROWED and LENT (GPUs) PENDING RUNNING SHARE\n"
     "(its fair share, lower is served first). -o json prints the array of\n"
     "queue objects; -o csv one row per queue with gpus, cpus, memory (bytes)\n"
     "and gpus by model of nominal, used, borrowed, lent and opportunistic.\n"
     "\n"
     "  --team T    only this team's queues\n"},
    {"report", sl_cli_cmd_report, "usage, compute units, energy, cost and carbon",
     "usage: sluice report [--by K] [--from D] [--to D] [--period P] [--team T]\n"
     "                     [--chargeback]\n"
     "       sluice report --utilisation [--from D] [--to D]\n"
     "\n"
     "One line per key (and period): JOBS GPU-HOURS, UNUSED-GPU-H (allocated\n"
     "but idle), CU ENERGY-KWH, whether the energy was measured (NVML, RAPL)\n"
     "or estimated, COST and CO2-KG, from the usage ledger and the Pricing in\n"
     "force. Members and viewers see their team only. -o json prints the\n"
     "array of row objects (key, jobs, gpu_hours, unused_gpu_hours, cu,\n"
     "energy_kwh, energy_measured, cost, co2_kg, ...); -o csv every figure in\n"
     "full.\n"
     "\n"
     "  --by K          team (default), project, user, queue, gpu-model, node, job\n"
     "  --from D        start: 2026-12-01, 2026-12-01T08:00:00Z, epoch ms, now,\n"
     "                  today, yesterday (midnight UTC) or a duration ago: -7d\n"
     "                  (default: the start of this month, UTC)\n"
     "  --to D          end (default: now); running jobs count up to now\n"
     "  --period P      one line per day, week (from Monday) or month, UTC\n"
     "  --team T        only this team's usage\n"
     "  --chargeback    also spread the cost of unallocated GPUs over the keys\n"
     "                  in proportion to their cost (IDLE-SHARE, CHARGEBACK)\n"
     "  --utilisation   allocated against idle GPU-hours per node, GPU model and\n"
     "                  in total, with the idle cost and GPU-hours of jobs\n"
     "                  flagged idle-but-allocated; CONSERVED says allocated +\n"
     "                  idle = capacity x time\n"},
    {"budgets", sl_cli_cmd_budgets, "budgets: limit, use this period, action",
     "usage: sluice budgets\n"
     "\n"
     "One line per budget (kind: Budget): BUDGET TEAM PERIOD UNIT LIMIT USED\n"
     "PERCENT ACTION (block or demote at 100 %) EXCEEDED. -o json also lists\n"
     "the 80 % and 100 % events.\n"},
    {"carbon", sl_cli_cmd_carbon, "import hourly carbon intensity of a site",
     "usage: sluice carbon import --site SITE FILE.csv\n"
     "\n"
     "Send the hourly grid carbon intensity of SITE (a site of the Pricing's\n"
     "carbon.sites): CSV lines hour,gco2_per_kwh, the hour as RFC 3339 or epoch\n"
     "ms on the hour, an optional header line. Hours given replace the site's\n"
     "fixed intensity in reports; at most 1 MiB per file.\n"},
    {"status", sl_cli_cmd_status, "show the leader and the daemons sharing the store",
     "usage: sluice status\n"
     "\n"
     "Which sluiced answered; with several on one PostgreSQL store (docs/ha.md),\n"
     "the leader, its epoch, how long ago it renewed its lease, and every daemon\n"
     "sharing the store with its role. -o json prints GET /v1/status as it is.\n"},
    {"whoami", sl_cli_cmd_whoami, "show the user, team and role of the token",
     "usage: sluice whoami\n"},
    {"login", sl_cli_cmd_login, "sign in through the company directory (LDAP/AD) or SSO (OIDC)",
     "usage: sluice login [--user NAME] [--password-stdin] [--print]\n"
     "       sluice login --oidc [--print]\n"
     "       sluice login --id-token-stdin [--print]\n"
     "       sluice login --refresh\n"
     "\n"
     "Sign in with the user name and password of the directory the server's\n"
     "identity file names (docs/identity.md). The password is asked on the\n"
     "terminal without echo, or read from the first line of standard input\n"
     "with --password-stdin; never give it on the command line. The server\n"
     "maps the directory groups to a team and role and gives a token for the\n"
     "identity file's tokenTtl (8 h by default), saved to\n"
     "$XDG_CONFIG_HOME/sluice/token (~/.config/sluice/token), mode 0600, which\n"
     "later commands use when no --token, SLUICE_TOKEN or SLUICE_TOKEN_FILE is\n"
     "given. --print writes the token to standard output instead of saving it.\n"
     "--refresh reads the groups again and replaces the token in use (a user\n"
     "removed from a group loses its role then).\n"
     "Too many wrong passwords for a name or from an address are refused with\n"
     "429 for 15 minutes.\n"
     "--oidc signs in through the identity file's OIDC provider with the device\n"
     "flow: it prints an address and a code to enter there (on any device with a\n"
     "browser) and waits until the sign-in is approved or the code expires.\n"
     "--id-token-stdin exchanges a token the provider issued (one line on\n"
     "standard input) for a Sluice token; the provider's groups claim picks the\n"
     "team and role as LDAP groups do. OIDC sign-ins are not refreshed: sign in\n"
     "again.\n"},
    {"token", sl_cli_cmd_token, "create, list and revoke API tokens",
     "usage: sluice token create --user NAME [--expires-in D] [--label L]\n"
     "       sluice token list [--user NAME]\n"
     "       sluice token revoke ID\n"
     "\n"
     "create: a token for the user, printed once (the server keeps its hash).\n"
     "Anyone may make tokens for themselves; a team-admin for its team's\n"
     "members; an admin for anyone. list: the tokens one may manage (never\n"
     "their secrets). revoke: at once, for every later request.\n"
     "\n"
     "  --user NAME        the user\n"
     "  --expires-in D     lifetime, e.g. 24h, 30d (default: none)\n"
     "  --label L          what it is for\n"},
    {"sim", sl_cli_cmd_sim, "simulate the scheduler on a trace; prints a JSON summary",
     "usage: sluice sim --workload FILE [--nodes FILE | --vcs FILE] [OPTIONS]\n"
     "\n"
     "Run the scheduler offline against a trace with a virtual clock and print\n"
     "a JSON summary (progress on stderr when it is a terminal). Needs no server.\n"
     "\n"
     "  --nodes FILE        node list (sn,cpu_milli,memory_mib,gpu,model)\n"
     "  --workload FILE     openb pod list, or a Philly/Helios job list\n"
     "  --mode M            fill (the FGD protocol; default for a pod list without\n"
     "                      --time-scale) or timed (default otherwise)\n"
     "  --policy P          fgd (default), bestfit, packing, clustering, dotprod,\n"
     "                      random, spread\n"
     "  --seed N            random seed (default 42)\n"
     "  --target X          resample the pods to X times the GPU capacity\n"
     "                      (fill: default 1.3; timed: pod lists only, default off)\n"
     "  --placements FILE   fill: write seq,pod,node,gpus,gpu_milli rows\n"
     "  --time-scale F      timed: divide inter-arrival times by F\n"
     "  --vcs FILE          timed: the teams and their GPU quotas, a 'vc,node num'\n"
     "                      list (8-GPU nodes) or a 'date,VC...,total' table (its\n"
     "                      last row); without --nodes, the cluster too\n"
     "  --config FILE       timed: Queue, Cohort, PriorityClass, Scheduler\n"
     "                      manifests (YAML) instead of the VCs' queues\n"
     "  --scheduler S       timed: sluice (default) or fifo (one queue, strict\n"
     "                      order, no backfill, no preemption)\n"
     "  --estimate E        timed: exact (maxRuntime = run time, default) or none\n"
     "  --max-jobs N        timed: replay only the first N jobs\n"
     "  --progress, --no-progress   force the progress bar on or off\n"},
    {"slurm", sl_cli_cmd_slurm, "print the gres.conf and slurm.conf lines Sluice needs on Slurm",
     "usage: sluice slurm gres-conf --nodes HOSTLIST --gpus N --model M [--domain D]\n"
     "                              [--device PATH] [--shards S] [--per-node]\n"
     "                              [--only gres.conf|slurm.conf]\n"
     "\n"
     "Print what a Slurm cluster needs before sluiced --executor slurm can place\n"
     "exact GPUs and fractions of one on it: in gres.conf one GRES type per GPU\n"
     "index (gpu:g0 .. gpu:gN-1, one device file each) and its shards; in\n"
     "slurm.conf GresTypes and, per group of nodes, Gres= and Feature=gpu_MODEL\n"
     "and domain_DOMAIN. Needs no server. docs/slurm.md explains each line.\n"
     "\n"
     "  --nodes HOSTLIST  the nodes: n1,n2 or n[1-3,5] or gpu[01-16]\n"
     "  --gpus N          GPUs per node (1..64)\n"
     "  --model M         GPU model for every node, or NODES=M for some;\n"
     "                    repeat: --model H100 --model n[7-8]=A100\n"
     "  --domain D        topology domain (NVLink domain, rack), same forms;\n"
     "                    none: no domain feature\n"
     "  --device PATH     device file of GPU %d (default /dev/nvidia%d)\n"
     "  --shards S        shards per GPU: 0 (no fractions) or a multiple of\n"
     "                    1000 (default 1000: a shard is 1/1000 of the GPU)\n"
     "  --per-node        one slurm.conf NodeName line per node\n"
     "  --only FILE       print only the lines of gres.conf or slurm.conf\n"},
    {"help", cmd_help, "show help for sluice or a command",
     "usage: sluice help [COMMAND]\n"},
    {"audit", sl_cli_cmd_audit, "the tamper-evident audit log: read, export, verify",
     "usage: sluice audit log [--actor A] [--action X] [--object O] [--outcome ok|refused]\n"
     "                        [--from T] [--to T] [--before SEQ | --after SEQ] [--limit N]\n"
     "       sluice audit export [-f FILE]\n"
     "       sluice audit verify [-f EXPORT [--checkpoint CKPT --pubkey KEY]]\n"
     "       sluice audit checkpoint | pubkey\n"
     "\n"
     "log: records by actor, action, object, outcome and time (auditor, admin),\n"
     "newest first, one line each (-o json: in full); -n, --limit N of them\n"
     "(default 100); --before SEQ: older ones; --after SEQ: newer ones, oldest\n"
     "first.\n"
     "export: the whole log as JSON lines, exactly as hashed.\n"
     "verify: without -f, the server checks the live log against its newest\n"
     "signed checkpoint; with -f, this machine checks an export offline: the\n"
     "hash chain alone, or with a checkpoint kept earlier and the verifier key\n"
     "also the signed head (modification, deletion, insertion, reordering,\n"
     "truncation and rollback). Exit 3 names the first bad record.\n"
     "checkpoint: the log's head signed now (keep it); pubkey: the verifier key.\n"
     "docs/audit.md has the formats.\n"},
    {"lineage", sl_cli_cmd_lineage, "the chain model <- job <- image, code, datasets",
     "usage: sluice lineage model:NAME@VERSION | job:ID\n"
     "\n"
     "The model, the job that produced it (user, team, queue, GPU-hours,\n"
     "energy, cost), its image digest, code commit and dataset versions.\n"},
    {"models", sl_cli_cmd_models, "the model registry: list, register, move between stages",
     "usage: sluice models [list [--name N] [--stage S]]\n"
     "       sluice models register --name N --version V --digest sha256:HEX --uri URI\n"
     "                              [--metric K=V]... [--job ID] [--team T]\n"
     "       sluice models stage NAME@VERSION --stage none|staging|production|archived\n"
     "                           [--comment C]\n"
     "\n"
     "A job registers its models with its own token (SLUICE_TOKEN in its\n"
     "environment); stages are changed by the roles the policy names as\n"
     "approvers (default admin and team-admin).\n"},
    {"scan", sl_cli_cmd_scan, "import an image scan (Trivy JSON) for the admission policy",
     "usage: sluice scan import REPORT.json\n"
     "\n"
     "A report of `trivy image -f json IMAGE`; its findings are kept under the\n"
     "image's digest for the policy's scan gate (admin).\n"},

};
/* clang-format on */

static const char global_help[] =
    "Global options (before or after the command):\n"
    "  --server URL   sluiced URL (env SLUICE_SERVER; "
    "default " SL_CLI_DEFAULT_SERVER ")\n"
    "  --token T      bearer token (env SLUICE_TOKEN; else the file named by\n"
    "                 SLUICE_TOKEN_FILE; else ./" SL_CLI_DEFAULT_TOKEN_FILE
    ")\n"
    "  --ca-cert FILE https: verify the server against these PEM CA\n"
    "                 certificates (env SLUICE_CA_CERT; default the system's)\n"
    "  --insecure     https: do not verify the server (warns each time)\n"
    "  --cert FILE --key FILE  https: a client certificate and its key (env\n"
    "                 SLUICE_CLIENT_CERT, SLUICE_CLIENT_KEY)\n"
    "  -o FORMAT      table (default), wide (a table with more columns where a\n"
    "                 command has them: jobs), json, yaml or csv\n"
    "  -w, --watch    jobs, nodes, queues: run again every --interval until\n"
    "                 interrupted (a terminal's screen is redrawn)\n"
    "  --interval D   the interval of --watch (100ms to 1h; default 2s)\n"
    "  -h, --help     show help\n"
    "  --version      print the version\n"
    "\n"
    "Exit codes: 0 success, 1 usage error, 2 refused by the server (4xx),\n"
    "3 server or transport failure.\n";

static const struct sl_cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(commands); i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

void sl_cli_usage(FILE *fp, const struct sl_cli_command *cmd)
{
    int unavailable = 0;

    if (cmd && cmd->usage) {
        fprintf(fp, "%s\n%s", cmd->usage, global_help);
        return;
    }
    fprintf(fp, "usage: sluice [--server URL] [--token T] [-o FORMAT] "
                "COMMAND [ARGS...]\n\nCommands:\n");
    for (size_t i = 0; i < SL_ARRAY_LEN(commands); i++)
        if (commands[i].usage)
            fprintf(fp, "  %-8s %s\n", commands[i].name, commands[i].help);
    for (size_t i = 0; i < SL_ARRAY_LEN(commands); i++)
        if (!commands[i].usage)
            fprintf(fp, "%s %s", unavailable++ ? "" : "\nNot available in this release:",
                    commands[i].name);
    fprintf(fp, "%s\n%s\nRun 'sluice help COMMAND' for a command's options.\n",
            unavailable ? "\n" : "", global_help);
}

static int cmd_help(struct sl_cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[1];
    const struct sl_cli_command *cmd;
    int n, code;

    if ((code = sl_cli_parse_simple(ctx, argc, argv, pos, 1, &n)) != SL_CLI_OK)
        return code;
    if (n == 0) {
        sl_cli_usage(stdout, NULL);
        return SL_CLI_OK;
    }
    if (!(cmd = find_command(pos[0]))) {
        sl_cli_errorf("help: unknown command '%.64s' (see 'sluice help')",
                      pos[0]);
        return SL_CLI_USAGE;
    }
    if (!cmd->usage) {
        sl_cli_errorf("%s: not available in this release", cmd->name);
        return SL_CLI_USAGE;
    }
    sl_cli_usage(stdout, cmd);
    return SL_CLI_OK;
}

/* --watch (or --interval): run the command again every --interval
 * (default 2 s) until
 * interrupted or until a run fails; on a terminal the screen is cleared
 * and a header line says what and when, elsewhere a blank line separates
 * the runs. */
static int watch(struct sl_cli_ctx *ctx, int argc, char **argv, int code)
{
    int64_t every = ctx->interval_ms ? ctx->interval_ms : 2000;
    bool tty = isatty(STDOUT_FILENO);

    while (ctx->watch && (code == SL_CLI_OK || code == SL_CLI_DONE)) {
        struct timespec ts = {.tv_sec = every / 1000, .tv_nsec = (every % 1000) * 1000000};
        char when[40];
        if (sl_cli_finish_output(SL_CLI_OK) != SL_CLI_OK)
            return SL_CLI_FAILED;
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
        if (tty)
            printf("\033[H\033[2JEvery %.1fs: sluice %s    %s\n\n", (double)every / 1000,
                   ctx->cmd->name, sl_time_rfc3339(sl_now_ms(), when, sizeof(when)));
        else
            printf("\n");
        code = ctx->cmd->run(ctx, argc, argv);
    }
    return code;
}

int main(int argc, char **argv)
{
    struct sl_cli_ctx ctx = {.output = SL_CLI_OUT_TABLE, .envp = environ};
    char *cwd;
    struct sl_error err = {{0}, {0}};
    struct sl_cli_parser p;
    const char *name = NULL;
    int id, code;

    sl_cli_parser_init(&p, argc, argv, 1, true);
    while (!name &&
           (id = sl_cli_next(&p, NULL, &ctx, &name, &err)) != SL_CLI_ARG_END) {
        switch (id) {
        case SL_CLI_ARG_HELP:
            sl_cli_usage(stdout, NULL);
            return sl_cli_finish_output(SL_CLI_OK);
        case SL_CLI_ARG_VERSION:
            printf("sluice %s\n", SLUICE_VERSION);
            return sl_cli_finish_output(SL_CLI_OK);
        case SL_CLI_ARG_ERROR:
            return sl_cli_usage_error(&err);
        }
    }
    if (!name) {
        sl_cli_usage(stderr, NULL);
        return SL_CLI_USAGE;
    }
    if (!(ctx.cmd = find_command(name))) {
        sl_cli_errorf("unknown command '%.64s' (see 'sluice help')", name);
        return SL_CLI_USAGE;
    }
    if (ctx.watch && !sl_cli_watchable(name)) {
        sl_cli_errorf("--watch, --interval: only for jobs, nodes and queues, not %s", name);
        return SL_CLI_USAGE;
    }
    /* the client's directory, resolved (sluice run's default workdir) */
    cwd = realpath(".", NULL);
    ctx.cwd = cwd ? cwd : "";
    /* The command sees its name as argv[0] and parses the rest. */
    code = ctx.cmd->run(&ctx, argc - (p.i - 1), argv + (p.i - 1));
    code = watch(&ctx, argc - (p.i - 1), argv + (p.i - 1), code);
    free(cwd);
    if (code == SL_CLI_DONE)
        code = SL_CLI_OK;
    code = sl_cli_finish_output(code);
    sl_client_destroy(ctx.client);
    return code;
}
