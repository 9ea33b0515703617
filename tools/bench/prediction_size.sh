#!/usr/bin/env bash
# Prediction at full size (docs/BENCHMARKS.md): a host and three `lockstep join --bot` in real
# processes on loopback, every side with `--netsim delay=65,jitter=20` and the session with
# `--rollback 12`, the arena with BODIES bodies, TICKS ticks (1,200) at 60 Hz. Prints every player's
# `input_latency_p99_ticks` and `stalls` from `--stats-json`, and `ok` when every player's is at
# most 2, which is the figure: the largest arena that stays `ok`.
#
# usage: tools/bench/prediction_size.sh LOCKSTEP BODIES [TICKS]
set -euo pipefail
usage='usage: prediction_size.sh LOCKSTEP BODIES [TICKS]'
lockstep=${1:?$usage}
bodies=${2:?$usage}
ticks=${3:-1200}
[ -x "$lockstep" ] || { echo "error: $lockstep is not an executable" >&2; exit 2; }
[[ "$bodies" =~ ^[0-9]+$ ]] || { echo "error: BODIES must be a whole number" >&2; exit 2; }
[[ "$ticks" =~ ^[1-9][0-9]*$ ]] || { echo "error: TICKS must be a positive whole number" >&2; exit 2; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
netsim=(--netsim delay=65,jitter=20)

"$lockstep" host --open --players 4 --bot --ticks "$ticks" --port "$port" --bodies "$bodies" --rollback 12 \
  "${netsim[@]}" --wait-timeout 60 --stats-json "$work/player0.json" > "$work/host.log" 2>&1 &
host=$!
until grep -q "^host: session " "$work/host.log" 2>/dev/null; do
  kill -0 "$host" 2>/dev/null || { cat "$work/host.log" >&2; exit 1; }
  sleep 0.05
done
joiners=()
for p in 1 2 3; do
  "$lockstep" join "127.0.0.1:$port" --bot "${netsim[@]}" --stats-json "$work/player$p.json" > "$work/player$p.log" 2>&1 &
  joiners+=($!)
done
status=0
wait "$host" || status=$?
for pid in "${joiners[@]}"; do wait "$pid" || status=$?; done
[ "$status" -eq 0 ] || { tail -n 3 "$work"/*.log >&2; echo "error: a process failed (exit $status)" >&2; exit 1; }
python3 - "$work" "$bodies" <<'EOF'
import json, sys
work, bodies = sys.argv[1], sys.argv[2]
worst = 0
for p in range(4):
    stats = json.load(open(f'{work}/player{p}.json'))
    p99 = stats['input_latency_p99_ticks']
    worst = max(worst, p99)
    print(f'player {p}: input_latency_p99_ticks {p99}, p50 {stats["input_latency_p50_ticks"]}, '
          f'window {stats.get("prediction_window", "-")}, stalls {stats.get("stalls", "-")}')
print(f'{bodies} bodies: worst p99 {worst} ticks: ' + ('ok' if worst <= 2 else 'over 2'))
EOF
