#!/usr/bin/env bash
# Usage: fidelity_commands.sh TRIDENT_BIN SOURCE_DIR [--table5-bounds]
#
# trident fidelity on configs/published/korthikanti-2022-table5.yaml: one row per run, the
# JSON form consistent with the published times, bounds that pass and bounds that fail naming
# the worst run, files that do not import, usage errors.
#
# With --table5-bounds, only the cost model's standing on Table 5: its runs predicted within a
# mean |error| of 4.5% and a max |error| of 8%, what the model reaches today (4.0% and 7.5%);
# the target is 3.5% and 8% (planner/README.md, The time model of a GPU cluster).
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"

bin=$1
cd "$2" || exit 1
table5=configs/published/korthikanti-2022-table5.yaml

if [[ ${3:-} == --table5-bounds ]]; then
  run "$bin" fidelity "$table5" --max-mean-error 3.5 --max-error 8
  expect_rc 0 && expect_empty err
  verdict "Table 5 within mean 3.5% and max 8%"
  cat "$WORK/out"
  summary 1
  exit
fi

rows='^(22B|175B|530B|1T), (full recompute|sequence parallel \+ selective recompute) '
run "$bin" fidelity "$table5"
expect_rc 0 && expect_empty err && [[ $(grep -caE "$rows" "$WORK/out") -eq 8 ]] &&
  expect_match out "^mean \|error\| [0-9.]+%, max \|error\| [0-9.]+% \(" &&
  expect_in out "published s" && expect_in out "exposed sync s" && expect_in out "peak memory"
verdict "fidelity without bounds prints the 8 runs of Table 5 and exits 0"

# The JSON form: error = (predicted − published) / published, the mean and max of |error|.
consistent='(len(d) == 1 and len(d[0]["runs"]) == 8 and d[0]["ok"] and all(
  abs(r["error_pct"] - 100 * (r["predicted_s"] - r["published_s"]) / r["published_s"]) < 1e-9
  for r in d[0]["runs"]) and abs(d[0]["mean_abs_error_pct"]
  - sum(abs(r["error_pct"]) for r in d[0]["runs"]) / 8) < 1e-9 and d[0]["max_abs_error_pct"]
  == max(abs(r["error_pct"]) for r in d[0]["runs"]) and [r["published_s"] for r in d[0]["runs"]]
  == [1.42, 1.10, 18.13, 13.75, 49.05, 37.83, 94.42, 71.49])'
run "$bin" fidelity "$table5" --json
expect_rc 0 && expect_json "$consistent"
verdict "fidelity --json: errors, mean and max agree with the published times"
worst=$(python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["worst_run"])' <"$WORK/out")

run "$bin" fidelity "$table5" --max-mean-error 100 --max-error 100 --cluster \
  configs/clusters/dgx-a100-80gb.yaml
expect_rc 0 && expect_empty err
verdict "bounds every run meets exit 0"

run "$bin" fidelity "$table5" --max-error 0.1
expect_rc 1 && expect_in err "run '$worst' is off by " && expect_in err "beyond --max-error 0.1%" &&
  expect_in err "8 of 8 runs beyond it" && [[ $(grep -caE "$rows" "$WORK/out") -eq 8 ]]
verdict "--max-error 0.1 exits 1 naming the worst run"

run "$bin" fidelity "$table5" --max-mean-error 0.1
expect_rc 1 && expect_match err "mean \|error\| [0-9.]+% exceeds --max-mean-error 0.1% by"
verdict "--max-mean-error 0.1 exits 1 naming the mean"

bad=tests/data/bad/published-runs-megatron-does-not-import.yaml
run "$bin" fidelity "$table5" "$bad"
where="^error: $(regex_escape "$bad"):[0-9]+:[0-9]+: runs\[0\]\.megatron: run 'tiny'"
expect_rc 1 && expect_match err "$where" && [[ $(grep -caE "$rows" "$WORK/out") -eq 8 ]]
verdict "a run that does not import exits 1 naming file, line and run; the other file still runs"

sed 's/^cluster: dgx-a100-80gb/cluster: no-such-cluster/' "$table5" >"$WORK/elsewhere.yaml"
run "$bin" fidelity "$WORK/elsewhere.yaml"
expect_rc 1 && expect_in err "names cluster 'no-such-cluster'" &&
  expect_in err "pass --cluster FILE"
verdict "a cluster with no file under configs/clusters exits 1 asking for --cluster"

run "$bin" fidelity "$table5" --cluster configs/clusters/local-cpu.yaml
expect_rc 1 && expect_in err "$table5: run '1T, full recompute': cluster local-cpu" &&
  expect_in out "no run was predicted"
verdict "runs that cannot be evaluated exit 1 naming the file, the run and the reason"

run "$bin" fidelity
expect_rc 2
verdict "fidelity without a file is a usage error"

run "$bin" fidelity "$table5" --max-error -1
expect_rc 2
verdict "a negative bound is a usage error"

summary 10
