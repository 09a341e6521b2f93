# shellcheck shell=bash
# Helpers shared by the `trident launch` tests (source after testlib.sh; bash only).
#
#   launch_plan NAME DEVICES DEVICES_PER_NODE DP PP TP STAGE_LINES
#                        writes $WORK/NAME.yaml: gpt-tiny, 1f1b, 4 micro-batches of 2
#   launch_stage FIRST NUM REPLICAS     one line of STAGE_LINES
#   same_losses REFERENCE NAME          the rank-0 losses in $WORK/NAME/metrics.jsonl equal
#                                       those of $WORK/REFERENCE within 1e-5 relative, and so
#                                       do the parameters of both final checkpoints (STEP
#                                       $LAUNCH_STEPS); reason in $REASON otherwise

# shellcheck source=plan_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/plan_lib.sh"

LAUNCH_STEPS=10

launch_plan() { tiny_plan "$1" "$2" "$3" "$4" "$5" "$6" 1 2 4 1f1b "$7"; }

launch_stage() { tiny_stage "$1" "$2" "$3" none; }

# The worker options of every training run in these tests.
# shellcheck disable=SC2034  # used by the scripts that source this one
LAUNCH_TRAIN=(--data synthetic --steps "$LAUNCH_STEPS" --quiet --optimizer sgd --lr 0.1
  --momentum 0.9)


same_losses() {
  # shellcheck disable=SC2034  # testlib's verdict reports it
  REASON=$(python3 "$(dirname "${BASH_SOURCE[0]}")/compare_runs.py" "$WORK/$1" "$WORK/$2" \
    "$LAUNCH_STEPS" params --all-steps 2>&1)
}
