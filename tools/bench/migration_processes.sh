#!/usr/bin/env bash
# Host migration in real processes on loopback (docs/BENCHMARKS.md, "host migration"): a host and
# three `lockstep join --bot` players of the arena with 300 bodies, 1,200 ticks at 60 Hz, the host
# killed with SIGKILL once a player has printed tick 400's second (the `net:` line after it), RUNS
# times (5). For each run: the handoff tick, whether the three survivors ended on one hash, and the
# wall time from the SIGKILL until the successor printed `host: took over` and until the last
# survivor printed `moved to the host` (its logs read every 5 ms; the successor steps the first
# tick it decides right after that), with the default --timeout-ms 5,000, so a detection time of
# 2.5 s. Then the median and the worst over the runs.
#
# usage: tools/bench/migration_processes.sh LOCKSTEP [RUNS]
set -euo pipefail
lockstep=${1:?usage: migration_processes.sh LOCKSTEP [RUNS]}
runs=${2:-5}
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "error: RUNS must be a positive whole number" >&2; exit 2; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
stalls=()
for ((run = 1; run <= runs; ++run)); do
  port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$lockstep" host --open --players 4 --bot --bodies 300 --ticks 1200 --port "$port" --wait-timeout 60 \
    > "$work/host.log" 2>&1 &
  host_pid=$!
  until grep -q "^host: session " "$work/host.log" 2>/dev/null; do sleep 0.05; done
  pids=()
  for p in 1 2 3; do
    "$lockstep" join "127.0.0.1:$port" --bot > "$work/peer$p.log" 2>&1 &
    pids+=($!)
  done
  until grep -Eq "^net: tick (4[0-9][0-9]|[5-9][0-9][0-9])," "$work/peer1.log" 2>/dev/null; do sleep 0.02; done
  kill -KILL "$host_pid"
  killed=$(date +%s%N)
  until grep -q "took over at tick" "$work"/peer*.log 2>/dev/null; do sleep 0.005; done
  took_over=$(( ($(date +%s%N) - killed) / 1000000 ))
  until [ "$(grep -l "took over at tick\|moved to the host" "$work"/peer*.log 2>/dev/null | wc -l)" = 3 ]; do sleep 0.005; done
  moved=$(( ($(date +%s%N) - killed) / 1000000 ))
  wait "$host_pid" 2>/dev/null || true
  for pid in "${pids[@]}"; do wait "$pid" || true; done
  handoff=$(grep -ho "took over at tick [0-9]*" "$work"/peer*.log | grep -o "[0-9]*$" || echo "none")
  hashes=$(for p in 1 2 3; do tail -n 1 "$work/peer$p.log"; done | sort -u | wc -l)
  stalls+=("$moved")
  echo "run $run: handoff at tick $handoff, $( [ "$hashes" = 1 ] && echo "one hash" || echo "$hashes hashes" ), took over after $took_over ms, everyone moved after $moved ms"
done
sorted=($(printf '%s\n' "${stalls[@]}" | sort -n))
echo "host loss to every survivor moved, $runs runs: median ${sorted[$((runs / 2))]} ms, worst ${sorted[$((runs - 1))]} ms"
