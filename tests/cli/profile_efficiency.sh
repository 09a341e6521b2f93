#!/usr/bin/env bash
# Usage: profile_efficiency.sh TRIDENT_BIN SOURCE_DIR
#
# trident profile --efficiency --device cpu end to end: GEMMs up to 0.3 GFLOP and the memory
# pass timed on this CPU against a cluster file whose datasheet figures no core reaches, the
# table printed and the written copy validated; local-cpu.yaml either fits or names the
# figure this machine beats; bad requests fail naming the flag or the key, and write nothing.
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"

bin=$1
generous=$2/tests/data/good/clusters/cpu-core-generous.yaml
cpu=$2/configs/clusters/local-cpu.yaml
quick=(--time-budget-s 0.1 --max-repeats 20)

out=$WORK/cluster.yaml
run "$bin" profile --efficiency --cluster "$generous" --max-gflop 0.3 "${quick[@]}" -o "$out"
# m=n=k 64, 96, 128, 176, 256, 368, 512: seven sizes up to 0.268 GFLOP.
expect_rc 0 && expect_in out "7 GEMM sizes in fp32" &&
  expect_match out "^m=n=k +GFLOP +samples +median +TFLOP/s +fraction" &&
  expect_match out "^512 +0\.2684 +[0-9]+ +[0-9.]+ (us|ms) +[0-9.]+ +0\.[0-9]{3}$" &&
  expect_match out "^memory: in-place scale of 256.00 MiB, median [0-9.]+ ms, [0-9.]+ GB/s" &&
  expect_in out "clock: 1, kept from" && expect_in out "wrote $out" &&
  expect_match err "efficiency 8/8: memory pass"
verdict "profile --efficiency prints the table and the memory line"

[[ $(grep -c '^      - {gflop: [0-9.e-]*, fraction: [0-9][0-9.e-]*}$' "$out") -eq 7 ]] &&
  grep -q '^    fp32: 10$' "$out" && grep -Eq '^    memory: [0-9][0-9.e-]*$' "$out" ||
  { REASON="the written file lacks the 7 points, the peak or the memory fraction" && false; }
verdict "the written file holds one point per size and keeps the datasheet figures"

run "$bin" validate "$out"
expect_rc 0 && expect_in out "ok: cluster cpu-core-generous"
verdict "the written cluster file validates"

run "$bin" profile --efficiency --cluster "$cpu" --max-gflop 0.01 "${quick[@]}" -o "$WORK/cpu.yaml"
if ((RC == 0)); then
  run "$bin" validate "$WORK/cpu.yaml"
  expect_rc 0
else
  expect_rc 1 && expect_match err "local-cpu.yaml: device\.(peak_tflops\.fp32|memory_bw_gb_per_s) is" &&
    expect_in err "raise device." && [[ ! -e $WORK/cpu.yaml ]]
fi
verdict "local-cpu.yaml: fitted, or the estimate this CPU beats named"

# bad REASON EXIT TEXT ARGS...: the profile fails with EXIT, stderr holds TEXT, no file.
bad() {
  local reason=$1 code=$2 text=$3
  shift 3
  run "$bin" profile --efficiency "$@" "${quick[@]}" -o "$WORK/bad.yaml"
  expect_rc "$code" && expect_in err "$text" && [[ ! -e $WORK/bad.yaml ]]
  verdict "$reason"
}
# with FIELD VALUE: a copy of the generous cluster whose FIELD line holds VALUE.
with() {
  sed "s/^\(  *$1:\).*/\1 $2/" "$generous" >"$WORK/$1.yaml"
  echo "$WORK/$1.yaml"
}
bad "a GEMM above peak_tflops names the key and the rate" 1 \
  "device.peak_tflops.fp32 is 0.0001 TFLOP/s, but a 0.0005 GFLOP GEMM ran at" \
  --cluster "$(with fp32 0.0001)" --max-gflop 0.001
bad "a memory pass above memory_bw_gb_per_s names the key" 1 \
  "raise device.memory_bw_gb_per_s to the device's bandwidth" \
  --cluster "$(with memory_bw_gb_per_s 0.1)" --max-gflop 0.001
sed 's/^    fp32: 10$/    bf16: 10/' "$generous" >"$WORK/bf16-only.yaml"
bad "a cluster without peak_tflops for the dtype" 1 "device.peak_tflops.fp32 is missing" \
  --cluster "$WORK/bf16-only.yaml"
bad "--dtype bf16 on the CPU" 1 "the CPU backend computes in fp32" --cluster "$generous" \
  --dtype bf16
bad "--device tpu" 1 "--device tpu: unknown device" --cluster "$generous" --device tpu
# Without CUDA in the build, or without a GPU: the cause, then the fix.
bad "--device cuda here: exit 1 with the fix" 1 "or use --device cpu" --cluster "$generous" \
  --device cuda
bad "--max-gflop below the smallest size" 1 "--max-gflop 1.0e-05 is below the smallest GEMM" \
  --cluster "$generous" --max-gflop 0.00001
bad "--efficiency without --cluster: usage error" 2 "--efficiency needs --cluster"
bad "--efficiency with a model: usage error" 2 "drop MODEL" "$2/configs/models/gpt-tiny.yaml" \
  --cluster "$generous"
bad "--efficiency with --clock cpu: usage error" 2 "drop --clock cpu" --cluster "$generous" \
  --clock cpu

summary 14
