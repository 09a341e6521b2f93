#!/usr/bin/env bash
# Usage: launch_two_hosts.sh TRIDENT_BIN
#
# Multi-host for real: two "hosts" on this machine — network namespaces joined by a veth pair,
# 10.213.0.1 and 10.213.0.2, loopback up in each — and `trident launch --hosts
# 10.213.0.1:2,10.213.0.2:2` run in the first. mpirun starts the second host's daemon through
# an rsh agent that enters that namespace instead of ssh, and the ranks talk Open MPI TCP over
# the veth pair only (btl tcp,self). Two gpt-tiny plans of 4 ranks in nodes of 2 — pp 2 x tp 2
# (activations cross hosts) and dp 2 x tp 2 (gradient all-reduce across hosts) — train to the
# single-process losses and parameters; mpirun's map shows ranks 0-1 on the first host and
# 2-3 on the second, and the second host's veth carried the traffic.
#
# The namespaces are created and always removed by this script (trap; namespaces left by a
# killed earlier run are removed at the start), every command runs under a timeout, and it
# exits 77 (ctest SKIP) with the reason where namespaces cannot be created (not root, no
# CAP_SYS_ADMIN, no `ip`).
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"
# shellcheck source=launch_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/launch_lib.sh"

trident=$1
prefix="trident-2h"
ns_a="$prefix-$$-a"
ns_b="$prefix-$$-b"
veth_a="tr2h$$a"
veth_b="tr2h$$b"
addr_a=10.213.0.1
addr_b=10.213.0.2

remove_namespaces() {  # NS...: kills what runs inside, then deletes them (and so the veths)
  local ns
  for ns in "$@"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  return 0
}
cleanup() {
  remove_namespaces "$ns_a" "$ns_b"
  ip link del "$veth_a" 2>/dev/null # still here only if moving it into its namespace failed
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# testlib's run, in the background: bash runs a trap only once the foreground command ends,
# but interrupts `wait` at once, so a SIGTERM (a ctest timeout) cleans up without delay.
run() {
  "$@" >"$WORK/out" 2>"$WORK/err" &
  wait $!
  RC=$?
}

# Namespaces of earlier runs whose script is gone (killed before its trap ran).
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-"); do
  pid=${ns#"$prefix-"}
  pid=${pid%-?}
  kill -0 "$pid" 2>/dev/null || remove_namespaces "$ns"
done
for link in $(ip -o link show type veth 2>/dev/null | awk -F': ' '{print $2}' | grep -o '^tr2h[0-9]*a'); do
  pid=${link#tr2h}
  kill -0 "${pid%a}" 2>/dev/null || ip link del "$link" 2>/dev/null
done

skip() {
  echo "SKIP: $1"
  exit 77
}
command -v ip >/dev/null || skip "no 'ip' command (apt-get install iproute2)"
ip netns add "$ns_a" 2>"$WORK/err" ||
  skip "cannot create a network namespace (needs root or CAP_SYS_ADMIN): $(cat "$WORK/err")"
if ! {
  ip netns add "$ns_b" &&
    ip link add "$veth_a" type veth peer name "$veth_b" &&
    ip link set "$veth_a" netns "$ns_a" && ip link set "$veth_b" netns "$ns_b" &&
    ip -n "$ns_a" addr add "$addr_a/24" dev "$veth_a" &&
    ip -n "$ns_b" addr add "$addr_b/24" dev "$veth_b" &&
    ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up &&
    ip -n "$ns_a" link set "$veth_a" up && ip -n "$ns_b" link set "$veth_b" up
}; then
  echo "FAIL: setting up the namespaces and the veth pair failed"
  exit 1
fi
pass "two namespaces joined by a veth pair ($addr_a, $addr_b)"

# The rsh agent mpirun uses instead of ssh: `agent HOST COMMAND...` runs COMMAND (a shell
# command line, as ssh would pass it) inside HOST's namespace.
cat >"$WORK/rsh-agent" <<EOF_AGENT
#!/bin/bash
host=\$1
shift
case \$host in
  $addr_a) ns=$ns_a ;;
  $addr_b) ns=$ns_b ;;
  *) echo "rsh-agent: unknown host \$host" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
EOF_AGENT
chmod +x "$WORK/rsh-agent"

two_host_env=(
  OMPI_MCA_plm_rsh_agent="$WORK/rsh-agent"
  OMPI_MCA_pml=ob1 "OMPI_MCA_btl=tcp,self"
  OMPI_MCA_btl_tcp_if_include=10.213.0.0/24 OMPI_MCA_oob_tcp_if_include=10.213.0.0/24
  OMPI_MCA_rmaps_base_display_map=1
)

# launch NAME HOSTS: trains $WORK/NAME.yaml from namespace A on HOSTS into $WORK/NAME.
launch_two_hosts() {
  run timeout 240 ip netns exec "$ns_a" env "${two_host_env[@]}" "$trident" launch \
    "$WORK/$1.yaml" --hosts "$2" --time-limit 200 -- "${LAUNCH_TRAIN[@]}" --out "$WORK/$1" \
    --save "$WORK/$1/ckpt"
}

# mpirun's map (display_map, which Open MPI may print more than once): the ranks on the node
# named NODE, e.g. "2 3".
ranks_on() {
  awk -v node="$1" '
    /Data for node:/ { on = ($4 == node) }
    on && /Process rank:/ { for (i = 1; i <= NF; ++i) if ($i == "rank:") print $(i + 1) }
  ' "$WORK/out" "$WORK/err" | sort -nu | paste -sd' '
}

rx_bytes_b() { ip netns exec "$ns_b" cat "/sys/class/net/$veth_b/statistics/rx_bytes"; }

launch_plan single 1 1 1 1 1 "$(launch_stage 0 5 1)"
run timeout 120 "$trident" launch "$WORK/single.yaml" --time-limit 100 -- "${LAUNCH_TRAIN[@]}" \
  --out "$WORK/single" --save "$WORK/single/ckpt"
expect_rc 0
verdict "the single-process reference trains"

check_two_hosts() {  # NAME DESCRIPTION
  local before after ranks
  REASON=""
  before=$(rx_bytes_b)
  launch_two_hosts "$1" "$addr_a:2,$addr_b:2"
  after=$(rx_bytes_b)
  ranks="$(ranks_on "$(uname -n)") / $(ranks_on "$addr_b")"
  if ! expect_rc 0 || ! expect_in out "--host $addr_a:2" || ! expect_in out "--host $addr_b:2"; then
    false
  elif [[ $ranks != "0 1 / 2 3" ]]; then
    REASON="mpirun's map puts ranks $ranks on $addr_a (mpirun's node) / $addr_b"
    false
  elif ((after - before < 100000)); then
    REASON="only $((after - before)) bytes reached $addr_b over the veth"
    false
  else
    same_losses single "$1"
  fi
  verdict "$2 across two hosts: ranks 0-1 on $addr_a, 2-3 on $addr_b, $(((after - before) / 1024)) KiB over the veth, single-process losses"
}

launch_plan pp2tp2 4 2 1 2 2 "$(launch_stage 0 2 1)
$(launch_stage 2 3 1)"
check_two_hosts pp2tp2 "pp 2 x tp 2"
launch_plan dp2tp2 4 2 2 1 2 "$(launch_stage 0 5 2)"
check_two_hosts dp2tp2 "dp 2 x tp 2"

# The network between the hosts fails mid-run. The ranks' communication timeout (--timeout 5)
# fires and they abort, but mpirun cannot reach the second host's daemon to finish the abort
# (TCP retries for minutes); the launcher's --time-limit ends it (40 s, so that a slow start
# under load still leaves the ranks time to time out): exit 124, SIGKILL after the
# grace period at the latest, and no rank left on the first host.
run_cut() {
  ip netns exec "$ns_a" env "${two_host_env[@]}" "$trident" launch "$WORK/pp2tp2.yaml" \
    --hosts "$addr_a:2,$addr_b:2" --time-limit 40 -- --data synthetic --steps 1000000 --quiet \
    --timeout 5 --out "$WORK/cut" >"$WORK/out" 2>"$WORK/err" &
  local job=$!
  for _ in $(seq 300); do
    [[ -s $WORK/cut/metrics.jsonl ]] && break
    sleep 0.2
  done
  ip -n "$ns_b" link set "$veth_b" down
  start=$(date +%s)
  wait "$job"
  RC=$?
  elapsed=$(($(date +%s) - start))
}
ranks_left_on_a() {
  for _ in $(seq 50); do
    ip netns pids "$ns_a" | xargs -r ps -o comm= -p | grep -q trident-worker || return 0
    sleep 0.2
  done
  REASON="trident-worker ranks still run on $addr_a"
  return 1
}
run_cut
if ((elapsed > 75)); then
  REASON="the job ran $elapsed s after the cut"
  false
else
  expect_rc 124 && expect_in err "did not complete within 5000 ms" &&
    expect_in err "the job ran past --time-limit 40 s" && ranks_left_on_a
fi
verdict "a network cut between the hosts: ranks time out, --time-limit ends mpirun (${elapsed} s)"
ip -n "$ns_b" link set "$veth_b" up

# A dead host must not hang the job: the second namespace's agent fails, mpirun reports it
# and the launch ends with a failure well inside its time limit.
sed -i "s|^  $addr_b) ns=.*|  $addr_b) echo 'rsh-agent: host down' >\&2; exit 255 ;;|" "$WORK/rsh-agent"
start=$(date +%s)
launch_two_hosts pp2tp2 "$addr_a:2,$addr_b:2"
elapsed=$(($(date +%s) - start))
if ((RC == 0 || RC == 124 || elapsed > 120)); then
  REASON="exit status $RC after $elapsed s"
  false
else
  expect_in err "ORTE was unable to reliably start" &&
    expect_in err "error: the job failed with exit status"
fi
verdict "an unreachable second host fails the launch without hanging (${elapsed} s)"

summary 6
