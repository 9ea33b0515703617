#!/usr/bin/env bash
# Proves lockstep can be consumed as the README says: installs BUILD_DIR into a temporary prefix,
# builds tests/install/consumer against it with find_package(lockstep 0.2 REQUIRED) and with the
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
echo "find_package(lockstep 0.2): $got"

for example in particle duel; do
  cmake -S "$src/examples/$example" -B "$work/$example" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
  cmake --build "$work/$example" -j 2 >/dev/null
done
"$work/particle/particle" run --ticks 300 --record "$work/p.lsr" >/dev/null
got=$("$work/particle/particle" replay "$work/p.lsr")
case $got in "ok 300 ticks verified, 300 hashes checked, final hash "*) ;; *) echo "particle replay: '$got'" >&2; exit 1 ;; esac
echo "examples/particle (installed lockstep): $got"
"$work/duel/duel" run --ticks 300 --record "$work/d.lsr" >/dev/null
rows=$("$work/duel/duel" export "$work/d.lsr" --every 100 --fields red.score,blue.score 2>/dev/null | wc -l)
[ "$rows" = 4 ] || { echo "duel export: $rows rows, want 4" >&2; exit 1; }
echo "examples/duel (installed lockstep): export gives $rows rows"

# pkg-config, with the compiler alone: the .pc file gives the include path, the determinism flags
# and the libraries.
flags=$(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/$(gcc -print-multiarch 2>/dev/null)/pkgconfig" \
  pkg-config --cflags --libs lockstep)
case " $flags " in *" -ffp-contract=off "*) ;; *) echo "pkg-config: no -ffp-contract=off in '$flags'" >&2; exit 1 ;; esac
"$cxx" "$src/tests/install/consumer/main.cpp" -o "$work/pc-consumer" $flags
got=$("$work/pc-consumer")
[ "$got" = "$want" ] || { echo "pkg-config: '$got', lockstep run: '$want'" >&2; exit 1; }
echo "pkg-config lockstep: $got"

cmake -S "$src/tests/install/consumer" -B "$work/sub" -DCMAKE_CXX_COMPILER="$cxx" \
  -DLOCKSTEP_SOURCE_DIR="$src" >/dev/null
cmake --build "$work/sub" -j 2 >/dev/null
got=$("$work/sub/consumer")
[ "$got" = "$want" ] || { echo "add_subdirectory: '$got', lockstep run: '$want'" >&2; exit 1; }
echo "add_subdirectory(lockstep): $got"

tar -C "$src" --exclude=./build --exclude=./.git -czf "$work/lockstep-src.tar.gz" .
cmake -S "$src/tests/install/consumer" -B "$work/fetched" -DCMAKE_CXX_COMPILER="$cxx" \
  -DLOCKSTEP_FETCH_URL="file://$work/lockstep-src.tar.gz" >/dev/null
cmake --build "$work/fetched" -j 2 >/dev/null
got=$("$work/fetched/consumer")
[ "$got" = "$want" ] || { echo "FetchContent: '$got', lockstep run: '$want'" >&2; exit 1; }
echo "FetchContent(lockstep): $got"
