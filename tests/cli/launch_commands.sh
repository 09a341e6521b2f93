#!/usr/bin/env bash
# Usage: launch_commands.sh TRIDENT_BIN
#
# `trident launch`, end to end with the real mpirun and the trident-worker beside TRIDENT_BIN:
# --dry-run of 2-node plans shows each host's ranks in rank-map order with every tp group on
# one host; too few slots, a bad hostfile, a plan for another world size, hosts smaller than
# the plan's nodes, a missing trident-worker and a plan the runtime would not carry out as
# written (trident-worker --check: fp16, dropout; interleaved passes on cpu and cuda) or a
# --load checkpoint of another model each exit 1 with the message before anything starts; a
# pp 2 gpt-tiny plan launched on this machine trains to the single-process losses;
# a worker failure comes back as the exit status; a --time-limit that is hit exits 124 and a
# forwarded SIGTERM ends the job, neither leaving a rank behind; --slurm writes an sbatch
# script that a stand-in srun runs with the right placement.
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"
# shellcheck source=launch_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/launch_lib.sh"

trident=$1

two="$(launch_stage 0 2 1)
$(launch_stage 2 3 1)"
launch_plan single 1 1 1 1 1 "$(launch_stage 0 5 1)"
launch_plan pp2 2 2 1 2 1 "$two"
launch_plan mesh8 8 4 2 2 2 "$(launch_stage 0 2 2)
$(launch_stage 2 3 2)"
launch_plan uneven 6 4 2 2 2 "$(launch_stage 0 2 2)
$(launch_stage 2 3 1)"

# The dry-run's command against the rank map: contexts in order, one per host, `-np n --host
# h:n`, ranks numbered context by context, every tp group on one host, each context running
# the worker with the absolute plan path and the worker options.
PLACEMENT_CHECK='
import os, shlex, sys
out, plan, hosts, tp, replicas, root = sys.argv[1:7]
tp, replicas = int(tp), [int(r) for r in replicas.split(",")]
want_hosts = [(h.split(":")[0], int(h.split(":")[1])) for h in hosts.split(",")]
lines = open(out).read().splitlines()
argv = shlex.split(lines[lines.index("command:") + 1])
if argv[0] != "mpirun": sys.exit(f"not mpirun: {argv[0]}")
if ("--allow-run-as-root" in argv) != (root == "0"): sys.exit("--allow-run-as-root iff root")
contexts, cur = [], []
for w in argv[1:] + [":"]:
    if w == ":": contexts.append(cur); cur = []
    else: cur.append(w)
got, rank, host_of = [], 0, {}
for c in contexts:
    n = int(c[c.index("-np") + 1]); h, slots = c[c.index("--host") + 1].split(":")
    if int(slots) != n: sys.exit(f"--host {h}:{slots} but -np {n}")
    if c[c.index("-x") + 1] != "OMP_NUM_THREADS=1": sys.exit("OMP_NUM_THREADS")
    prog = c[c.index("-x") + 2:]
    if not (os.path.isabs(prog[0]) and prog[0].endswith("/trident-worker")): sys.exit(prog[0])
    if prog[1:] != [os.path.abspath(plan), "--steps", "3"]: sys.exit(f"program {prog}")
    got.append((h, n))
    for r in range(rank, rank + n): host_of[r] = h
    rank += n
if got != want_hosts: sys.exit(f"hosts and ranks {got}, expected {want_hosts}")
first, ranks = [], 0
for r in replicas: first.append(ranks); ranks += r * tp
if rank != ranks: sys.exit(f"{rank} ranks placed, the plan has {ranks}")
for r in range(ranks):
    p = max(i for i in range(len(first)) if first[i] <= r)
    g0 = first[p] + (r - first[p]) // tp * tp
    for peer in range(g0, g0 + tp):
        if host_of[peer] != host_of[r]: sys.exit(f"tp group of rank {r} spans hosts")
'
placement_is() {  # PLAN HOSTS TP REPLICAS: the last run's dry-run output places PLAN so
  REASON=$(python3 -c "$PLACEMENT_CHECK" "$WORK/out" "$WORK/$1.yaml" "$2" "$3" "$4" \
    "$(id -u)" 2>&1)
}

run "$trident" launch "$WORK/mesh8.yaml" --hosts node-a:4,node-b:4 --dry-run -- --steps 3
expect_rc 0 && placement_is mesh8 node-a:4,node-b:4 2 2,2 &&
  expect_match out "node-a +4 +0-3 +\(0, 0, 0\) \.\. \(1, 0, 1\)" &&
  expect_match out "node-b +4 +4-7 +\(0, 1, 0\) \.\. \(1, 1, 1\)"
verdict "--dry-run of a 2-node plan (dp 2 x pp 2 x tp 2) puts one node on each host"

cat >"$WORK/hosts.txt" <<'EOF_HOSTS'
# the two nodes of the plan, then a spare
node-a slots=4   # first
node-b slots=6 max_slots=8

spare slots=4
EOF_HOSTS
run "$trident" launch "$WORK/uneven.yaml" --hostfile "$WORK/hosts.txt" --dry-run -- --steps 3
expect_rc 0 && placement_is uneven node-a:4,node-b:2 2 2,1 && expect_match out "spare +4 +- "
verdict "--dry-run from a hostfile: 6 ranks in nodes of 4 use 4 + 2 slots, the spare idles"

# Refusals: exit 1, the message, and nothing started (no output folder, nothing on stdout).
refused() {  # EXPECTED_MESSAGE
  expect_rc 1 && expect_in err "$1" && expect_empty out || return 1
  [[ ! -e $WORK/never ]] || {
    REASON="the job started"
    return 1
  }
}
run "$trident" launch "$WORK/mesh8.yaml" --hosts node-a:4,node-b:2 -- --out "$WORK/never"
refused "the plan runs 8 ranks in 2 nodes of 4 devices but the hosts offer 6 slots (node-a:4, node-b:2); add hosts or slots"
verdict "too few slots are refused before anything starts"

printf 'node-a slots=4\n# fine so far\nnode-b slots=four\n' >"$WORK/bad-hosts.txt"
run "$trident" launch "$WORK/mesh8.yaml" --hostfile "$WORK/bad-hosts.txt" -- --out "$WORK/never"
refused "$WORK/bad-hosts.txt:3: slot count 'four' is not a whole number"
verdict "a hostfile that does not parse is refused with its file and line"

run "$trident" launch "$WORK/mesh8.yaml" --hosts a:4,b:4,c:4 --np-check -- --out "$WORK/never"
refused "--np-check: $WORK/mesh8.yaml runs 8 ranks but the hosts offer 12 slots (a:4, b:4, c:4)"
verdict "a plan for another world size than the hosts (--np-check) is refused"

run "$trident" launch "$WORK/mesh8.yaml" --hosts a:2,b:2,c:2,d:2 -- --out "$WORK/never"
refused "the plan was made for nodes of 4 devices (devices_per_node: 4), so ranks 0-3 must share a host, but host 'a' has 2 slots"
verdict "hosts smaller than the plan's nodes are refused with both fixes"

# The plan contract: launch runs trident-worker --check PLAN (with the worker options) first,
# and a plan whose fields the runtime would not carry out as written starts nothing.
sed 's/^dtype: fp32$/dtype: fp16/; s/^  dropout: 0.0$/  dropout: 0.1/' \
  "$WORK/mesh8.yaml" >"$WORK/fp16-dropout.yaml"
run "$trident" launch "$WORK/fp16-dropout.yaml" -- --out "$WORK/never"
refused "$WORK/fp16-dropout.yaml: the cpu runtime cannot run this plan as written:" &&
  expect_in err "  model.dropout: dropout 0.1 is not implemented by the layers" &&
  expect_in err "hint: set dropout: 0 in the model and plan again" &&
  expect_in err "  dtype: fp16 training (with loss scaling) is not implemented by the runtime" &&
  expect_in err "nothing was started"
verdict "an fp16 plan with dropout is refused, naming both fields and their fixes, before mpirun"

tiny_plan interleaved 2 2 1 2 1 2 2 4 interleaved_1f1b "$(launch_stage 0 2 1)
$(launch_stage 2 1 1)
$(launch_stage 3 1 1)
$(launch_stage 4 1 1)"
run "$(dirname "$trident")/trident-worker" --check "$WORK/interleaved.yaml" --device cuda
expect_rc 0 &&
  expect_in out "interleaved.yaml: the cuda runtime carries out every field of this plan as written"
verdict "trident-worker --check accepts the interleaved plan on the cuda runtime"

run "$(dirname "$trident")/trident-worker" --check "$WORK/interleaved.yaml" --steps 3
expect_rc 0 &&
  expect_in out "interleaved.yaml: the cpu runtime carries out every field of this plan as written"
verdict "trident-worker --check accepts the interleaved plan on the cpu runtime"

mkdir -p "$WORK/bin" && cp "$trident" "$WORK/bin/trident"
run "$WORK/bin/trident" launch "$WORK/pp2.yaml" -- --out "$WORK/never"
refused "trident-worker is not beside $WORK/bin/trident"
verdict "a missing trident-worker is refused"

run "$trident" launch "$WORK/pp2.yaml" --hosts a:2 --hostfile "$WORK/hosts.txt"
expect_rc 2
verdict "--hosts with --hostfile is a usage error"

# Real jobs on this machine.
train() {  # NAME [launch options...]: trains $WORK/NAME.yaml into $WORK/NAME
  local name=$1
  shift
  run timeout 180 "$trident" launch "$WORK/$name.yaml" --time-limit 150 "$@" -- \
    "${LAUNCH_TRAIN[@]}" --out "$WORK/$name" --save "$WORK/$name/ckpt"
}
train single
expect_rc 0 && [[ -s $WORK/single/ckpt/step-$LAUNCH_STEPS.safetensors ]] &&
  expect_match out "^  mpirun .*-np 1 -x OMP_NUM_THREADS=1 [^ ]*/trident-worker $WORK/single.yaml"
verdict "a 1-rank plan launches and trains (the reference)"

train pp2
expect_rc 0 && same_losses single pp2
verdict "a pp 2 plan launched on this machine gives the single-process losses and parameters"

# --load of another model's checkpoint: refused from its header before mpirun.
sed 's/^  name: gpt-tiny$/  name: gpt-other/' "$WORK/pp2.yaml" >"$WORK/other.yaml"
run "$trident" launch "$WORK/other.yaml" -- --load "$WORK/single/ckpt/step-$LAUNCH_STEPS.safetensors" \
  --out "$WORK/never"
refused "step-$LAUNCH_STEPS.safetensors: written for model gpt-tiny, but the plan trains gpt-other" &&
  expect_in err "nothing was started"
verdict "a checkpoint of another model is refused before mpirun"

run timeout 120 "$trident" launch "$WORK/pp2.yaml" -- --data synthetic --out "$WORK/nan" \
  --lr 1e30 --optimizer sgd
expect_rc 1 && expect_in err "the loss is not finite" &&
  expect_in err "error: the job failed with exit status 1"
verdict "a failing job's exit status comes back"

no_ranks_left() {  # PLAN_NAME: no trident-worker of that plan still runs
  for _ in $(seq 50); do
    pgrep -f "trident-worker $WORK/$1.yaml" >/dev/null || return 0
    sleep 0.2
  done
  REASON="ranks of $1 still run"
  return 1
}

cp "$WORK/pp2.yaml" "$WORK/limited.yaml"
start=$(date +%s)
run timeout 120 "$trident" launch "$WORK/limited.yaml" --time-limit 8 -- --data synthetic \
  --steps 1000000 --quiet --out "$WORK/limited"
elapsed=$(($(date +%s) - start))
expect_rc 124 && expect_in err "the job ran past --time-limit 8 s and was stopped" &&
  [[ -s $WORK/limited/metrics.jsonl ]] && ((elapsed < 30)) && no_ranks_left limited
verdict "a --time-limit that is hit stops the job with exit 124 (${elapsed} s)"

cp "$WORK/pp2.yaml" "$WORK/stopped.yaml"
"$trident" launch "$WORK/stopped.yaml" -- --data synthetic --steps 1000000 --quiet \
  --out "$WORK/stopped" >"$WORK/out" 2>"$WORK/err" &
job=$!
for _ in $(seq 150); do
  [[ -s $WORK/stopped/metrics.jsonl ]] && break
  sleep 0.2
done
kill -TERM "$job"
for _ in $(seq 300); do
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$job" 2>/dev/null; then
  REASON="trident launch still runs 30 s after SIGTERM"
  kill -KILL "$job"
  pkill -KILL -f "trident-worker $WORK/stopped.yaml"
  false
else
  wait "$job"
  RC=$?
  if ((RC == 0)); then
    REASON="exit status 0"
    false
  else
    expect_in err "passed SIGTERM on to mpirun" && no_ranks_left stopped
  fi
fi
verdict "SIGTERM to trident launch is passed on to the job, which ends"

# Slurm: the script, run by bash with stand-ins for srun and scontrol that record what srun
# would start where.
mkdir -p "$WORK/slurm-bin"
cat >"$WORK/slurm-bin/srun" <<'EOF_SRUN'
#!/bin/bash
echo "srun $*"
if [[ -n ${SLURM_HOSTFILE:-} ]]; then echo "hosts: $(paste -sd, "$SLURM_HOSTFILE")"; fi
echo "OMP_NUM_THREADS=$OMP_NUM_THREADS"
EOF_SRUN
cat >"$WORK/slurm-bin/scontrol" <<'EOF_SCONTROL'
#!/bin/bash
[[ "$1 $2" == "show hostnames" ]] && tr ',' '\n' <<<"$3"
EOF_SCONTROL
cat >"$WORK/slurm-bin/sbatch" <<'EOF_SBATCH'
#!/bin/bash
echo "Submitted batch job 42 ($1)"
EOF_SBATCH
chmod +x "$WORK/slurm-bin/"*

run "$trident" launch "$WORK/mesh8.yaml" --slurm -o "$WORK/mesh8.sbatch" --time-limit 600 -- \
  --steps 3
expect_rc 0 && expect_in out "wrote $WORK/mesh8.sbatch" && bash -n "$WORK/mesh8.sbatch" &&
  grep -q "^#SBATCH --nodes=2$" "$WORK/mesh8.sbatch" &&
  grep -q "^#SBATCH --ntasks-per-node=4$" "$WORK/mesh8.sbatch" &&
  grep -q "^#SBATCH --time=10$" "$WORK/mesh8.sbatch" &&
  run env PATH="$WORK/slurm-bin:$PATH" SLURM_JOB_NODELIST=n1,n2 bash "$WORK/mesh8.sbatch" &&
  expect_match out "^srun --nodes=2 --ntasks=8 --ntasks-per-node=4 --cpus-per-task=1 --distribution=block --kill-on-bad-exit=1 /[^ ]*/trident-worker $WORK/mesh8.yaml --steps 3$"
verdict "--slurm writes an sbatch script: 2 nodes x 4 tasks, block distribution, srun per rank"

run "$trident" launch "$WORK/uneven.yaml" --slurm -o "$WORK/uneven.sbatch"
expect_rc 0 && run env PATH="$WORK/slurm-bin:$PATH" SLURM_JOB_NODELIST=n1,n2 \
  bash "$WORK/uneven.sbatch" && expect_in out "hosts: n1,n1,n1,n1,n2,n2" &&
  expect_match out "^srun --ntasks=6 --cpus-per-task=1 --distribution=arbitrary --kill-on-bad-exit=1 "
verdict "--slurm with a partial last node names each rank's node (4 + 2)"

run env PATH=/usr/bin:/bin "$trident" launch "$WORK/pp2.yaml" --slurm --submit \
  -o "$WORK/never.sbatch"
expect_rc 1 && expect_in err "sbatch is not on PATH" && [[ ! -e $WORK/never.sbatch ]]
verdict "--submit without sbatch is refused and writes nothing"

run env PATH="$WORK/slurm-bin:$PATH" "$trident" launch "$WORK/pp2.yaml" --slurm --submit \
  -o "$WORK/pp2.sbatch"
expect_rc 0 && expect_in out "Submitted batch job 42 ($WORK/pp2.sbatch)"
verdict "--slurm --submit runs sbatch on the script"

run "$trident" launch "$WORK/pp2.yaml" --submit
expect_rc 2
verdict "--submit without --slurm is a usage error"

summary 22
