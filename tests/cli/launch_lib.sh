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

LAUNCH_STEPS=10

launch_plan() {
  cat >"$WORK/$1.yaml" <<EOF_PLAN
format_version: 1
kind: plan
model:
  name: gpt-tiny
  vocab_size: 256
  max_seq_len: 64
  hidden: 64
  heads: 4
  kv_heads: 4
  ffn_hidden: 256
  norm: layer_norm
  positions: learned
  tied_embeddings: true
  dropout: 0.0
  layers:
    - {kind: embedding}
    - {kind: gpt_block, repeat: 2}
    - {kind: final_norm}
    - {kind: lm_head}
cluster: local-cpu
devices: $2
devices_per_node: $3
mesh: {dp: $4, pp: $5, tp: $6}
virtual_stages: 1
micro_batch_size: 2
num_micro_batches: 4
global_batch: 8
seq_len: 32
dtype: fp32
schedule: 1f1b
stages:
$7
EOF_PLAN
}

launch_stage() { echo "  - {first_layer: $1, num_layers: $2, replicas: $3, recompute: none}"; }

# The worker options of every training run in these tests.
# shellcheck disable=SC2034  # used by the scripts that source this one
LAUNCH_TRAIN=(--data synthetic --steps "$LAUNCH_STEPS" --quiet --optimizer sgd --lr 0.1
  --momentum 0.9)


same_losses() {
  # shellcheck disable=SC2034  # testlib's verdict reports it
  REASON=$(python3 "$(dirname "${BASH_SOURCE[0]}")/compare_runs.py" "$WORK/$1" "$WORK/$2" \
    "$LAUNCH_STEPS" params --all-steps 2>&1)
}
