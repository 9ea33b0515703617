#!/usr/bin/env bash
# The README's first command. On a fresh Debian 12 machine, as root: installs the packages that
# are missing, builds lockstep (Release) and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j "$(nproc)" --target lockstep
lockstep=build/release/tools/lockstep

replay=$(mktemp -d)/session.lsr
echo
echo "== A headless arena session, recorded: 4 bots, 1,000 circles, 4 ropes of 25 links, 1,800 ticks (30 s of play)"
first=$("$lockstep" run --ticks 1800 --seed 1 --record "$replay" --keyframe-every 600)
echo "$first"

echo
echo "== The same session in a second process, with the sync test on every tick"
second=$("$lockstep" run --ticks 1800 --seed 1 --sync-test)
echo "$second"

echo
echo "== The recording: described, re-simulated and checked at every tick, then from the keyframe at 1,200"
"$lockstep" info "$replay"
verified=$("$lockstep" replay "$replay")
echo "$verified"
seeked=$("$lockstep" replay "$replay" --from-tick 1500)
echo "$seeked"

hash=$(tail -n 1 <<<"$first"); hash=${hash##* }
echo
for line in "$(tail -n 1 <<<"$second")" "$verified" "$seeked"; do
  if [ "${line##* }" != "$hash" ]; then
    echo "error: '$line' does not end on $hash: determinism is broken" >&2
    exit 1
  fi
done
echo "Every run ended on the same state hash: $hash"
echo "Next: $lockstep --help, $lockstep diff, $lockstep regress, $lockstep lab ball, $lockstep lab energy --svg energy.svg"
