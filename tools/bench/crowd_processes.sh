#!/usr/bin/env bash
# A crowd on loopback in real processes (docs/BENCHMARKS.md, "crowds … real processes"): a host and
# PLAYERS − 1 `lockstep join --bot` at 60 Hz, the world without bodies (`--bodies 0 --substeps 2`),
# the joiners started 2 a second (one address's share of the host's key work), TICKS ticks (600).
# Prints the bytes a tick each side sends and receives — over the whole session from
# `--stats-json`, and in the steady state from every process's `net:` lines from tick 120 on (the
# median and 99th percentile of its seconds) — the host's CPU time a tick (/proc, utime + stime),
# the players' own CPU a tick (their median), and how the session ended.
#
# usage: tools/bench/crowd_processes.sh LOCKSTEP PLAYERS [TICKS]
set -euo pipefail
lockstep=${1:?usage: crowd_processes.sh LOCKSTEP PLAYERS [TICKS]}
players=${2:?usage: crowd_processes.sh LOCKSTEP PLAYERS [TICKS]}
ticks=${3:-600}
[[ "$players" =~ ^[0-9]+$ && "$players" -ge 2 && "$players" -le 256 ]] || { echo "error: PLAYERS must be 2 to 256" >&2; exit 2; }
[[ "$ticks" =~ ^[1-9][0-9]*$ ]] || { echo "error: TICKS must be a positive whole number" >&2; exit 2; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
common=(--bodies 0 --substeps 2)

"$lockstep" host --open --players "$players" --bot --ticks "$ticks" --port "$port" "${common[@]}" \
  --timeout-ms 20000 --wait-timeout 600 --stats-json "$work/host.json" > "$work/host.log" 2>&1 &
host_pid=$!
until grep -q "^host: session " "$work/host.log" 2>/dev/null; do sleep 0.05; done
pids=()
for ((i = 1; i < players; ++i)); do
  "$lockstep" join "127.0.0.1:$port" --bot --timeout-ms 20000 --stats-json "$work/peer$i.json" > "$work/peer$i.log" 2>&1 &
  pids+=($!)
  sleep 0.5
done
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# The host's CPU once every joiner is in, to its end (a process's CPU is read while it lives).
host_cpu=0
while kill -0 "$host_pid" 2>/dev/null; do
  now=$(cpu_ticks "$host_pid")
  [ "$now" -gt 0 ] && host_cpu=$now
  sleep 0.2
done
wait "$host_pid" || true
for pid in "${pids[@]}"; do wait "$pid" || true; done

python3 - "$work" "$players" "$ticks" "$host_cpu" "$(getconf CLK_TCK)" <<'EOF'
import json, re, statistics, sys
work, players, ticks, host_cpu, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def steady(log):
    """Bytes a tick sent and received in each second of `net:` lines from tick 120 on (rates a
    second over the ticks stepped that second)."""
    sent, received, last = [], [], None
    for line in open(log):
        m = re.search(r"net: tick (\d+),.*? sent [\d.]+ dgrams/s ([\d.]+) KB/s, received [\d.]+ dgrams/s ([\d.]+) KB/s", line)
        if not m:
            continue
        tick = int(m.group(1))
        if last is not None and tick >= 120 and tick > last:
            sent.append(float(m.group(2)) * 1024 / (tick - last))
            received.append(float(m.group(3)) * 1024 / (tick - last))
        last = tick
    return sent, received
def p99(values):
    return sorted(values)[max(0, int(len(values) * 0.99) - 1)] if values else float("nan")
host = json.load(open(f"{work}/host.json"))
peers = [json.load(open(f"{work}/peer{i}.json")) for i in range(1, players)]
finals = {open(f"{work}/peer{i}.log").read().strip().splitlines()[-1] for i in range(1, players)}
host_final = open(f"{work}/host.log").read().strip().splitlines()[-1]
print(f"players {players}, ticks {ticks}: host ends '{host_final}'; the joiners end on {len(finals)} distinct last line(s)"
      f"{'' if finals == {host_final} else ': ' + repr(sorted(finals)[:3])}")
print(f"  --stats-json: a joiner sends {statistics.median(p['bytes_sent'] / p['ticks'] for p in peers):.1f} and receives "
      f"{statistics.median(p['bytes_received'] / p['ticks'] for p in peers):.1f} B/tick (medians); the host sends "
      f"{host['bytes_sent'] / host['ticks']:.0f} B/tick")
sent, received = [], []
for i in range(1, players):
    s, r = steady(f"{work}/peer{i}.log")
    sent += s
    received += r
if sent:
    print(f"  steady (net: lines from tick 120): a joiner sends {statistics.median(sent):.1f} (p99 {p99(sent):.1f}) and "
          f"receives {statistics.median(received):.1f} (p99 {p99(received):.1f}) B/tick; bound to one 40 + 4 x {players} = {40 + 4 * players}")
print(f"  host CPU: {host_cpu / hz * 1e6 / ticks:.0f} us a tick (utime + stime over its whole run)")
decided = sum(d["inputs"] for d in host["inputs_decided"])
print(f"  input delay at the end {host['input_delay']}; inputs the host decided {decided} "
      f"({100 * decided / (ticks * (players - 1)):.1f}% of the joiners')")
EOF
