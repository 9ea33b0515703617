#!/usr/bin/env bash
# The README's first command. On a fresh Debian 12 machine, as root: installs the packages that
# are missing, builds lockstep (Release) and runs the demo: a networked lockstep session of a
# host and three bot peers as separate processes on loopback, each recording; one recording
# verified by re-simulation; every participant's final hash compared.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j "$(nproc)" --target lockstep
lockstep=$PWD/build/release/tools/lockstep

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ticks=1200

echo
echo "== A networked lockstep session on 127.0.0.1:$port: a host and three bot peers, $ticks ticks (20 s),"
echo "   the arena with 1,000 circles; every process records its own replay. Output: $work"
"$lockstep" host --port "$port" --players 4 --bot --ticks "$ticks" --record "$work/host.lsr" >"$work/host.out" 2>&1 &
host=$!
# The host prints its invite code before it waits; only its holders get in (every datagram is
# encrypted and authenticated). The code goes to the peers in a file, off the process list, that
# only its owner can read (lockstep reads a secret from no other file).
for _ in $(seq 100); do grep -q '^invite ' "$work/host.out" 2>/dev/null && break; sleep 0.05; done
(umask 077 && sed -n 's/^invite //p' "$work/host.out" >"$work/invite")
[ -s "$work/invite" ] || { echo "error: the host printed no invite code; see $work/host.out" >&2; exit 1; }
peers=()
for p in 1 2 3; do
  "$lockstep" join "127.0.0.1:$port" --invite-file "$work/invite" --bot --record "$work/peer$p.lsr" >"$work/peer$p.out" 2>&1 &
  peers+=($!)
done
status=0
wait "$host" || status=$?
for pid in "${peers[@]}"; do wait "$pid" || status=$?; done
if [ "$status" != 0 ]; then
  echo "error: a participant failed (exit $status); see $work/*.out" >&2
  exit 1
fi

echo
echo "== The host's log"
cat "$work/host.out"
echo
echo "== Every participant's last line"
hash=""
for who in host peer1 peer2 peer3; do
  last=$(tail -n 1 "$work/$who.out")
  printf '%-6s %s\n' "$who" "$last"
  [ -z "$hash" ] && hash=$last
  if [ "$last" != "$hash" ]; then
    echo "error: $who ended on '$last', the host on '$hash'" >&2
    exit 1
  fi
done

echo
echo "== Peer 2's recording: described, then re-simulated and checked at every tick"
"$lockstep" info "$work/peer2.lsr"
verified=$("$lockstep" replay "$work/peer2.lsr")
echo "$verified"
cmp -s "$work/host.lsr" "$work/peer2.lsr" && echo "(byte-identical to the host's recording)"

if [ "${verified##* }" != "${hash##* }" ]; then
  echo "error: the replay ended on ${verified##* }, the session on ${hash##* }" >&2
  exit 1
fi
echo
echo "Every participant and the replay ended on the same state hash: ${hash##* }"
echo "Watch it in a browser: $lockstep view $work/host.lsr (then open the address it prints)"
echo "Next: $lockstep --help; $lockstep run --sync-test; $lockstep regress; $lockstep lab ball"
