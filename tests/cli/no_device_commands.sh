#!/usr/bin/env bash
# Usage: no_device_commands.sh TRIDENT_BIN SOURCE_DIR
#
# The commands of a machine with no device library: a copy of `trident` alone in a folder (no
# trident-profile, no trident-worker beside it) profiles analytically, plans, simulates,
# explains, prints a launch command (--dry-run) and writes a Slurm script (--slurm); measuring
# (profile --device, --comm) exits 1 naming the missing trident-profile and how to build it.
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"

configs=$2/configs
bin=$WORK/bin/trident
mkdir -p "$WORK/bin" && cp "$1" "$bin"
tiny=$configs/models/gpt-tiny.yaml
cpu=$configs/clusters/local-cpu.yaml
plan=$WORK/plan.yaml

run "$bin" profile "$tiny" --analytic --cluster "$cpu" --micro-batch 1,2 -o "$WORK/profile.yaml"
expect_rc 0 && expect_in out "wrote $WORK/profile.yaml"
verdict "profile --analytic"

run "$bin" plan --model "$tiny" --cluster "$cpu" --profile "$WORK/profile.yaml" \
  --global-batch 8 --seq 64 --fix pp=2 -o "$plan"
expect_rc 0 && expect_in out "predicted step time"
verdict "plan"

run "$bin" simulate "$plan" --cluster "$cpu"
expect_rc 0 && expect_in out "step time"
verdict "simulate"

run "$bin" explain "$plan" --cluster "$cpu"
expect_rc 0 && expect_in out "bottleneck: stage"
verdict "explain"

run "$bin" launch "$plan" --dry-run -- --steps 2
expect_rc 0 && expect_in out "$WORK/bin/trident-worker $plan --steps 2" &&
  expect_in err "$WORK/bin/trident-worker is not there yet"
verdict "launch --dry-run names the worker beside trident"

run "$bin" launch "$plan" --slurm -o "$WORK/job.sbatch" -- --steps 2
expect_rc 0 && expect_in out "wrote $WORK/job.sbatch" && grep -q "trident-worker" "$WORK/job.sbatch"
verdict "launch --slurm writes the script"

run "$bin" launch "$plan" -- --steps 2 --out "$WORK/never"
expect_rc 1 && expect_in err "trident-worker is not beside $bin" && [[ ! -e $WORK/never ]]
verdict "launch without --dry-run needs the worker"

for request in "$tiny --device cpu" "--comm --cluster $cpu"; do
  # shellcheck disable=SC2086  # the request's words
  run "$bin" profile $request -o "$WORK/measured.yaml"
  expect_rc 1 && expect_in err "trident-profile is not beside $bin" &&
    expect_in err "--target trident-profile" && [[ ! -e $WORK/measured.yaml ]]
  verdict "profile $request names the missing trident-profile"
done
summary 9
