#!/usr/bin/env bash
# The README's first command. On a fresh Debian 12 machine, as root: installs the packages that
# are missing, builds lockstep (Release) and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j "$(nproc)" --target lockstep
lockstep=build/release/tools/lockstep

echo
echo "== A headless arena session: 4 bots, 1,000 circles, 4 ropes of 25 links, 1,800 ticks (30 s of play)"
first=$("$lockstep" run --ticks 1800 --seed 1)
echo "$first"

echo
echo "== The same session in a second process, with the sync test on every tick"
second=$("$lockstep" run --ticks 1800 --seed 1 --sync-test)
echo "$second"

echo
if [ "$(tail -n 1 <<<"$first")" = "$(tail -n 1 <<<"$second")" ]; then
  echo "Both processes ended on the same state hash: $(tail -n 1 <<<"$first")"
else
  echo "error: the two processes disagree — determinism is broken" >&2
  exit 1
fi
echo "Next: $lockstep --help, $lockstep lab ball, $lockstep lab energy --svg energy.svg"
