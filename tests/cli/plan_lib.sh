# shellcheck shell=bash
# The gpt-tiny plan files of the CLI tests (source after testlib.sh; bash only).
#
#   tiny_plan NAME DEVICES DEVICES_PER_NODE DP PP TP V MICRO_BATCH MICRO_BATCHES SCHEDULE STAGE_LINES
#       writes $WORK/NAME.yaml: gpt-tiny (tied embeddings unless $tied is false), seq 32,
#       sequence parallelism when $sp is true, context parallelism over $cp ranks (default 1)
#   tiny_stage FIRST NUM REPLICAS RECOMPUTE     one line of STAGE_LINES

tiny_plan() {
  cat >"$WORK/$1.yaml" <<EOF
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
  tied_embeddings: ${tied:-true}
  dropout: 0.0
  layers:
    - {kind: embedding}
    - {kind: gpt_block, repeat: 2}
    - {kind: final_norm}
    - {kind: lm_head}
cluster: local-cpu
devices: $2
devices_per_node: $3
mesh: {dp: $4, pp: $5, cp: ${cp:-1}, tp: $6}
virtual_stages: $7
micro_batch_size: $8
num_micro_batches: $9
global_batch: $(($8 * $9))
seq_len: 32
dtype: fp32
schedule: ${10}
sequence_parallel: ${sp:-false}
stages:
${11}
EOF
}

tiny_stage() { echo "  - {first_layer: $1, num_layers: $2, replicas: $3, recompute: $4}"; }
