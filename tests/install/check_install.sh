#!/usr/bin/env bash
# Proves lockstep can be consumed as the README says: installs BUILD_DIR into a temporary prefix,
# builds tests/install/consumer against it with find_package(lockstep 0.3 REQUIRED) and with the
# flags of pkg-config alone, and again
# with add_subdirectory of the source tree and with FetchContent of an archive of it (no options
# set, no build type), and checks that all three programs end on the hash `lockstep run` gives for
# the same session. Then builds the two example programs of examples/ against the installed
# prefix with find_package alone, and runs a command of each on its own simulation.
# usage: check_install.sh SOURCE_DIR BUILD_DIR CXX_COMPILER LOCKSTEP_BINARY
set -euo pipefail
src=$1 build=$2 cxx=$3 lockstep=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

want=$("$lockstep" run --bodies 200 --ticks 100 --seed 5 | tail -n 1)

cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/tests/install/consumer" -B "$work/found" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/found" -j 2 >/dev/null
got=$("$work/found/consumer")
[ "$got" = "$want" ] || { echo "find_package: '$got', lockstep run: '$want'" >&2; exit 1; }
echo "find_package(lockstep 0.3): $got"

for example in particle duel; do
  cmake -S "$src/examples/$example" -B "$work/$example" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
  cmake --build "$work/$example" -j 2 >/dev/null
done
# Each example's own simulation through every file command: run --record, replay, info, diff, export.
check_example() {  # program name
  local bin=$1 name=$2 got rows
  "$bin" run --ticks 300 --seed 2 --record "$work/$name-a.lsr" >/dev/null
  "$bin" run --ticks 300 --seed 2 --record "$work/$name-b.lsr" >/dev/null
  got=$("$bin" replay "$work/$name-a.lsr")
  case $got in "ok 300 ticks verified, 300 hashes checked, final hash "*) ;; *) echo "$name replay: '$got'" >&2; exit 1 ;; esac
  "$bin" info "$work/$name-a.lsr" | grep -q "^simulation  example.$name, " || { echo "$name info: no simulation line" >&2; exit 1; }
  got=$("$bin" diff "$work/$name-a.lsr" "$work/$name-b.lsr")
  [ "$got" = "identical through tick 300" ] || { echo "$name diff: '$got'" >&2; exit 1; }
  rows=$("$bin" export "$work/$name-a.lsr" --every 100 2>/dev/null | grep -c '^{"tick":')
  [ "$rows" = 4 ] || { echo "$name export: $rows rows, want 4" >&2; exit 1; }
  echo "examples/$name against the installed lockstep: run, replay, info, diff and export work"
}
check_example "$work/particle/particle" particle
check_example "$work/duel/duel" duel

cmake -S "$src/tests/install/consumer" -B "$work/sub" -DCMAKE_CXX_COMPILER="$cxx" \
  -DLOCKSTEP_SOURCE_DIR="$src" >/dev/null
cmake --build "$work/sub" -j 2 >/dev/null
got=$("$work/sub/consumer")
[ "$got" = "$want" ] || { echo "add_subdirectory: '$got', lockstep run: '$want'" >&2; exit 1; }
echo "add_subdirectory(lockstep): $got"
# The examples, added beside lockstep's source in the same project, use its targets.
check_example "$work/sub/particle/particle" particle
check_example "$work/sub/duel/duel" duel

tar -C "$src" --exclude=./build --exclude=./.git -czf "$work/lockstep-src.tar.gz" .
cmake -S "$src/tests/install/consumer" -B "$work/fetched" -DCMAKE_CXX_COMPILER="$cxx" \
  -DLOCKSTEP_FETCH_URL="file://$work/lockstep-src.tar.gz" >/dev/null
cmake --build "$work/fetched" -j 2 >/dev/null
got=$("$work/fetched/consumer")
[ "$got" = "$want" ] || { echo "FetchContent: '$got', lockstep run: '$want'" >&2; exit 1; }
echo "FetchContent(lockstep): $got"
