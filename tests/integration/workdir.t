#!/bin/sh
# Where and with what a job starts: `sluice run` starts it in the client's
# directory (spec.workdir) with the client's environment as --export says
# (ALL by default, NONE, or a list), the executor's own variables kept;
# a workdir the job's account cannot enter fails the job, naming
# spec.workdir; `sluice submit` without one starts it in the home.
. "$(dirname "$0")/../lib.sh"

start_sluiced || bail "sluiced starts"

# A project directory the job's account (nobody) can enter and read.
proj=$SLUICE_JOBS/proj
mkdir -p "$proj" && chmod 0755 "$proj"
cat >"$proj/train.sh" <<'SH'
#!/bin/sh
echo "pwd=$(pwd) epochs=${EPOCHS:-unset}"
SH
chmod 0755 "$proj/train.sh"

# cd proj; sluice run -- ./train.sh: the README's first step.
id=$(cd "$proj" && EPOCHS=3 sluice run --cpus 0.1 --memory 64Mi -- ./train.sh)
like "$id" '^[0-9]+$' "run from the project directory prints the job id"
ok "./train.sh runs from the directory it was submitted in" wait_state "$id" Succeeded 30
is "$(sluice logs "$id")" "pwd=$proj epochs=3" \
    "it starts there, with the client's EPOCHS (--export ALL by default)"
is "$(sluice show "$id" -o json | json_get spec.spec.workdir)" "$proj" "its spec.workdir is that directory"

# --chdir: a spelling with redundant parts is stored normalised.
id=$(sluice run --chdir "$SLUICE_JOBS//proj/./" --cpus 0.1 --memory 64Mi -- ./train.sh)
ok "--chdir DIR starts it in DIR" wait_state "$id" Succeeded 30
is "$(sluice show "$id" -o json | json_get spec.spec.workdir)" "$proj" "spec.workdir is stored normalised"

# A relative --chdir is taken under the current directory.
id=$(cd "$SLUICE_JOBS" && sluice run --chdir proj --cpus 0.1 --memory 64Mi -- ./train.sh)
ok "a relative --chdir is under the current directory" wait_state "$id" Succeeded 30
like "$(sluice logs "$id")" "^pwd=$proj " "and the job starts there"

# ALL leaves out the client's identity, session, Sluice's and secret-looking
# variables: the job gets its own account's HOME and USER.
id=$(MY_API_TOKEN=hunter2 DB_PASSWORD=pw SSH_AUTH_SOCK=/tmp/agent PLAIN=yes HOME=/root USER=root \
    sluice run --cpus 0.1 --memory 64Mi -- sh -c \
    'echo "tok=${MY_API_TOKEN-unset} pw=${DB_PASSWORD-unset} ssh=${SSH_AUTH_SOCK-unset} plain=$PLAIN home=$HOME user=$USER same=$([ "${SLUICE_TOKEN-}" = "'"$SLUICE_TOKEN"'" ] && echo yes || echo no)"')
ok "a job with the client's environment runs" wait_state "$id" Succeeded 30
is "$(sluice logs "$id")" "tok=unset pw=unset ssh=unset plain=yes home=/nonexistent user=nobody same=no" \
    "ALL sends PLAIN but no secret, no SSH agent, not the client's HOME, USER or SLUICE_TOKEN"
is "$(sluice show "$id" -o json | python3 -c 'import json,sys; e=json.load(sys.stdin)["spec"]["spec"]["env"]; print(",".join(k for k in sorted(e) if k in ("SLUICE_TOKEN","SLUICE_SERVER","HOME","USER","MY_API_TOKEN","DB_PASSWORD","PWD")) or "none")')" \
    none "and none of them is stored in the job's spec.env"

# --export NONE: only what the executor sets.
id=$(EPOCHS=3 sluice run --export NONE --cpus 0.1 --memory 64Mi -- env)
ok "an --export NONE job runs" wait_state "$id" Succeeded 30
names=$(sluice logs "$id" | sed 's/=.*//' | sort | tr '\n' ' ')
extra=$(printf '%s\n' $names | grep -Ev '^(HOME|USER|LOGNAME|SHELL|PATH|LANG|SLUICE_[A-Z_]+|CUDA_VISIBLE_DEVICES|NVIDIA_VISIBLE_DEVICES|CUDA_DEVICE_ORDER)$' | tr '\n' ' ')
is "$extra" "" "NONE: only the executor's variables ($names)"
like "$names" 'HOME .*SLUICE_JOB_ID ' "which it still sets"
is "$(sluice show "$id" -o json | json_get spec.spec.env)" "{}" "and spec.env is empty"

# --export A,C: only those; -e wins over an exported value.
id=$(A=1 B=2 C=3 sluice run --export A,C -e C=30 --cpus 0.1 --memory 64Mi -- \
    sh -c 'echo "A=${A-unset} B=${B-unset} C=${C-unset}"')
ok "an --export list job runs" wait_state "$id" Succeeded 30
is "$(sluice logs "$id")" "A=1 B=unset C=30" "a list sends only the named variables; -e wins"

# Reserved variables stay the executor's: refused when named, left out of ALL.
out=$(CUDA_VISIBLE_DEVICES=3 sluice run --export CUDA_VISIBLE_DEVICES --cpus 0.1 -- true 2>&1)
is "$?" 2 "naming a reserved variable in --export is refused"
like "$out" 'spec.env.CUDA_VISIBLE_DEVICES.*set by the executor' "and the error names spec.env.CUDA_VISIBLE_DEVICES"
id=$(CUDA_VISIBLE_DEVICES=3 SLUICE_JOB_ID=77 sluice run --cpus 0.1 --memory 64Mi -- \
    sh -c 'echo "cvd=[$CUDA_VISIBLE_DEVICES] job=$SLUICE_JOB_ID"')
ok "with reserved variables in the client's environment, ALL runs" wait_state "$id" Succeeded 30
is "$(sluice logs "$id")" "cvd=[] job=$id" "the job sees the executor's values, not the client's"

# A workdir the job cannot use fails the job, naming spec.workdir; never
# another directory in its place.
id=$(sluice run --chdir /sluice-no-such-dir --cpus 0.1 --memory 64Mi -- pwd)
ok "a job whose workdir does not exist fails" wait_state "$id" Failed 30
like "$(sluice show "$id" -o json | json_get message)" \
    'spec.workdir: cannot enter /sluice-no-such-dir as nobody: No such file or directory' \
    "its message names spec.workdir, the directory, the account and why"
is "$(sluice logs "$id" 2>/dev/null | grep -c '^/')" 0 "the command never ran elsewhere"
private=$SLUICE_JOBS/private
mkdir -p "$private" && chmod 0700 "$private"
id=$(cd "$private" && sluice run --cpus 0.1 --memory 64Mi -- pwd)
ok "a job started from a directory its account cannot enter fails" wait_state "$id" Failed 30
like "$(sluice show "$id" -o json | json_get message)" "spec.workdir: cannot enter $private as nobody: Permission denied" \
    "the chdir is the job's account's, not sluiced's"

# sluice submit leaves it to the spec: without spec.workdir, the home
# (nobody's does not exist: then /).
cat >"$SLUICE_TMP/home.yaml" <<'YAML'
apiVersion: sluice/v1
kind: Job
metadata: {name: at-home}
spec:
  command: [pwd]
  resources: {cpus: 0.1, memory: 64Mi}
YAML
id=$(cd "$proj" && sluice submit -f "$SLUICE_TMP/home.yaml")
ok "a submitted job without spec.workdir runs" wait_state "$id" Succeeded 30
is "$(sluice logs "$id")" "/" "in its account's home (here /), not the client's directory"
printf 'apiVersion: sluice/v1\nkind: Job\nspec: {command: [pwd], workdir: "%s", resources: {cpus: 0.1, memory: 64Mi}}\n' \
    "$proj" >"$SLUICE_TMP/wd.yaml"
id=$(sluice submit -f "$SLUICE_TMP/wd.yaml")
ok "a submitted job with spec.workdir runs" wait_state "$id" Succeeded 30
is "$(sluice logs "$id")" "$proj" "in its spec.workdir"
printf 'apiVersion: sluice/v1\nkind: Job\nspec: {command: [pwd], workdir: "proj/../x"}\n' >"$SLUICE_TMP/rel.yaml"
out=$(sluice submit -f "$SLUICE_TMP/rel.yaml" 2>&1)
is "$?" 2 "a relative spec.workdir is refused"
like "$out" 'spec.workdir.*absolute path' "naming spec.workdir"

done_testing
