#!/usr/bin/env bash
# Proves lockstep can be consumed as docs/GUIDE.md (Building) says: installs BUILD_DIR into a
# temporary prefix and builds tests/install/consumer four ways — against the prefix with find_package(lockstep 0.4
# REQUIRED), against the prefix with the compiler and the flags of its lockstep.pc alone
# (pkg-config --cflags --libs lockstep), with add_subdirectory of the source tree, and with
# FetchContent of an archive of it (no options set, no build type; configured and generated, which
# fails on any source the archive lacks, the same sources built by add_subdirectory) — and checks
# that the three programs built end on the hash `lockstep run` gives for the same session. Builds
# examples/duel (the command-line library and the network) against the installed prefix with
# find_package alone, and runs its run --record, replay, info, diff and export on its own
# simulation (lockstep's own build adds both examples beside its source, the add_subdirectory way,
# and the test suite runs those).
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
echo "find_package(lockstep 0.4): $got"

# pkg-config, with the compiler alone: the installed lockstep.pc gives the include path, the
# determinism flags and the libraries (libsodium's through the system's libsodium.pc, which it
# requires). The installed folder comes first and the answer must come from its file; the prefix
# it names comes from where the file is, so this temporary prefix (not the configured one) proves
# it relocates.
pc_files=$(find "$work/prefix" -path '*/pkgconfig/lockstep.pc')
[ "$(printf '%s\n' "$pc_files" | grep -c .)" = 1 ] || { echo "pkg-config: want one lockstep.pc in the prefix, found '$pc_files'" >&2; exit 1; }
lockstep_pc() {
  PKG_CONFIG_LIBDIR="$(dirname "$pc_files"):$(pkg-config --variable pc_path pkg-config)" PKG_CONFIG_PATH='' \
    pkg-config "$@" lockstep
}
[ "$(lockstep_pc --path)" = "$pc_files" ] || { echo "pkg-config: lockstep.pc found at '$(lockstep_pc --path)', not '$pc_files'" >&2; exit 1; }
version=$(lockstep_pc --modversion)
grep -qF "$version" <<<"$("$lockstep" --version)" || { echo "pkg-config: version '$version', lockstep --version: '$("$lockstep" --version)'" >&2; exit 1; }
cflags=$(lockstep_pc --cflags)
libs=$(lockstep_pc --libs)
for flag in -std=c++20 -ffp-contract=off; do
  case " $cflags " in *" $flag "*) ;; *) echo "pkg-config: no $flag in --cflags '$cflags'" >&2; exit 1 ;; esac
done
installed_include=$(cd "$work/prefix/include" && pwd -P)
include_found=
for word in $cflags; do
  case $word in -I*) if [ "$(cd "${word#-I}" 2>/dev/null && pwd -P)" = "$installed_include" ]; then include_found=1; fi ;; esac
done
[ -n "$include_found" ] || { echo "pkg-config: --cflags '$cflags' has no -I for $installed_include" >&2; exit 1; }
# shellcheck disable=SC2086  # the flags are words
"$cxx" "$src/tests/install/consumer/main.cpp" -o "$work/pc-consumer" $cflags $libs
got=$("$work/pc-consumer")
[ "$got" = "$want" ] || { echo "pkg-config: '$got', lockstep run: '$want'" >&2; exit 1; }
echo "pkg-config --cflags --libs lockstep ($version): $got"

cmake -S "$src/examples/duel" -B "$work/duel" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/duel" -j 2 >/dev/null
# Each example's own simulation through every file command: run --record, replay, info, diff, export.
check_example() {  # program name
  local bin=$1 name=$2 got rows
  "$bin" run --ticks 300 --seed 2 --record "$work/$name-a.lsr" >/dev/null
  "$bin" run --ticks 300 --seed 2 --record "$work/$name-b.lsr" >/dev/null
  got=$("$bin" replay "$work/$name-a.lsr")
  case $got in "ok 300 ticks verified, 300 hashes checked, final hash "*) ;; *) echo "$name replay: '$got'" >&2; exit 1 ;; esac
  grep -q "^simulation  example.$name, " <<<"$("$bin" info "$work/$name-a.lsr")" || { echo "$name info: no simulation line" >&2; exit 1; }
  got=$("$bin" diff "$work/$name-a.lsr" "$work/$name-b.lsr")
  [ "$got" = "identical through tick 300" ] || { echo "$name diff: '$got'" >&2; exit 1; }
  rows=$("$bin" export "$work/$name-a.lsr" --every 100 2>/dev/null | grep -c '^{"tick":')
  [ "$rows" = 4 ] || { echo "$name export: $rows rows, want 4" >&2; exit 1; }
  echo "examples/$name against the installed lockstep: run, replay, info, diff and export work"
}
check_example "$work/duel/duel" duel

cmake -S "$src/tests/install/consumer" -B "$work/sub" -DCMAKE_CXX_COMPILER="$cxx" \
  -DLOCKSTEP_SOURCE_DIR="$src" >/dev/null
# Everything lockstep builds as a subproject: its libraries, each source file compiled alone (the
# test suite's own builds are unity builds), which proves each library file includes what it uses.
cmake --build "$work/sub" -j 2 >/dev/null
got=$("$work/sub/consumer")
[ "$got" = "$want" ] || { echo "add_subdirectory: '$got', lockstep run: '$want'" >&2; exit 1; }
echo "add_subdirectory(lockstep): $got"

tar -C "$src" --exclude=./build --exclude=./.git -czf "$work/lockstep-src.tar.gz" .
# FetchContent adds the fetched copy as a subdirectory, whose sources add_subdirectory built above:
# configuring and generating proves the archive holds every file the build lists and that the
# consumer's targets link lockstep's; building them again would prove nothing new.
cmake -S "$src/tests/install/consumer" -B "$work/fetched" -DCMAKE_CXX_COMPILER="$cxx" \
  -DLOCKSTEP_FETCH_URL="file://$work/lockstep-src.tar.gz" >/dev/null
[ -f "$work/fetched/_deps/lockstep-src/engine/CMakeLists.txt" ] || { echo "FetchContent: the archive was not unpacked" >&2; exit 1; }
echo "FetchContent(lockstep): fetched, configured and generated"
