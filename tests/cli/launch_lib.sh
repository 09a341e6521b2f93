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

LAUNCH_COMPARE='
import json, struct, sys
def losses(d):
    rows = [json.loads(l) for l in open(d + "/metrics.jsonl")]
    return {r["step"]: r["loss"] for r in rows if r["rank"] == 0}
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    out = {}
    for k, v in h.items():
        s, e = v["data_offsets"]
        out[k] = struct.unpack("<%df" % ((e - s) // 4), b[8 + n + s:8 + n + e])
    return out
ref, got, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
a, b = losses(ref), losses(got)
if sorted(b) != list(range(1, steps + 1)):
    sys.exit(f"steps {sorted(b)}, expected 1..{steps}")
for k in b:
    if abs(a[k] - b[k]) > 1e-5 * abs(a[k]):
        sys.exit(f"step {k}: loss {b[k]!r}, single process {a[k]!r}")
ta = tensors(f"{ref}/ckpt/step-{steps}.safetensors")
tb = tensors(f"{got}/ckpt/step-{steps}.safetensors")
if ta.keys() != tb.keys(): sys.exit(f"tensors differ: {sorted(ta.keys() ^ tb.keys())[:4]}")
for k in ta:
    scale = max(1e-6, max(abs(x) for x in ta[k]))
    err = max(abs(x - y) for x, y in zip(ta[k], tb[k]))
    if err > 1e-5 * scale: sys.exit(f"{k}: max difference {err:.3g} of scale {scale:.3g}")
'

same_losses() {
  # shellcheck disable=SC2034  # testlib's verdict reports it
  REASON=$(python3 -c "$LAUNCH_COMPARE" "$WORK/$1" "$WORK/$2" "$LAUNCH_STEPS" 2>&1)
}
