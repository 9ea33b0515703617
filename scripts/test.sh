#!/usr/bin/env bash
# The README's second command, and what CI runs: builds lockstep twice — g++ at -O0 (Debug) and
# clang++ at -O2 — with warnings as errors, runs every test in both, and has the clang build's
# tests compare every tick's hash with the g++ -O0 binary; and lockstep in WebAssembly
# (Emscripten), whose engine the clang build's `view --static` writes and its tests run in Chromium
# and as an npm package. Then builds lockstep for i686, aarch64, riscv64 and s390x (g++ -O3) and
# compares every hash of those and of wasm32 (under node) with the clang++ -O2 build's.
# Each phase's time is printed at the end (also when a phase fails).
set -euo pipefail
cd "$(dirname "$0")/.."

phase_times=()
started=$SECONDS
print_times() {
  echo "== phase times"
  for line in "${phase_times[@]}"; do echo "  $line"; done
  printf '  %-50s %5d s\n' "total" $((SECONDS - started))
}
trap print_times EXIT
phase() {  # phase NAME COMMAND...: runs COMMAND and keeps how long it took
  local name=$1 start=$SECONDS
  shift
  "$@"
  phase_times+=("$(printf '%-50s %5d s' "$name" $((SECONDS - start)))")
}

phase "install-deps" ./scripts/install-deps.sh
jobs=$(nproc)
# Ninja for every build tree this creates (and the packaging test's, the cross builds'): it compiles a
# target's sources while the libraries it links are still building, where Make waits for them, which
# took a fifth off the -O0 build here (317 s to 250 s). A tree made before keeps its generator.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}

# Unity builds (each target's sources compiled as a few files) take half the time; the libraries are
# also built file by file, as users build them, by install_and_consume in the clang build. The
# tests of packaging, of the pages in Chromium and of the Slurm cluster do not depend on the compiler,
# and the networked sessions of real processes run in real time (their arithmetic is the engine's,
# whose every hash the clang build compares with the -O0 binary's): clang's build runs them, and
# builds the benchmark program (one test runs it, to check the side-by-side script with it).
# The Debug build without debug information (-g), which nothing here reads: that saves a fifth of
# the time to compile the largest test source (32.6 s to 25.3 s).
phase "build: g++ -O0" bash -c "cmake -S . -B build/gcc-debug -DCMAKE_CXX_COMPILER=g++ -DCMAKE_BUILD_TYPE=Debug '-DCMAKE_CXX_FLAGS_DEBUG=-O0' \
  -DCMAKE_UNITY_BUILD=ON -DLOCKSTEP_TEST_BEYOND_THE_COMPILER=OFF -DLOCKSTEP_TEST_NETWORK_PROCESSES=OFF \
  -DLOCKSTEP_BUILD_BENCHMARKS=OFF -DLOCKSTEP_WERROR=ON && cmake --build build/gcc-debug -j $jobs"

# The WebAssembly build (Emscripten) first: the clang build embeds its engine for `view --static`
# and tests it in Chromium and as an npm package; the cross check compares its hashes.
phase "build: wasm32 (Emscripten)" ./scripts/build-web-engine.sh build/wasm

phase "build: clang++ -O2" bash -c "cmake -S . -B build/clang-release -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release \
  '-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG' -DCMAKE_UNITY_BUILD=ON -DLOCKSTEP_WERROR=ON \
  '-DLOCKSTEP_PEER_LOCKSTEP=$PWD/build/gcc-debug/tools/lockstep' \
  '-DLOCKSTEP_WEB_ENGINE=$PWD/build/wasm/tools/lockstep-web.js' && cmake --build build/clang-release -j $jobs"

slowest_tests() {  # build dir: the eight slowest tests of its last ctest run, for the phase summary
  # (the last stage reads all of sort's output: `head` would close the pipe early, and sort's
  # SIGPIPE fails the script under pipefail)
  awk '/^[0-9]+\/[0-9]+ Testing: / { sub(/^[0-9]+\/[0-9]+ Testing: /, ""); name = $0 }
       /^Test time = / && name != "" { printf "%8.1f s  %s\n", $4, name; name = "" }' \
    "$1/Testing/Temporary/LastTest.log" 2>/dev/null | sort -rn | awk 'NR <= 8'
}
echo "== tests: g++ -O0"
phase "tests: g++ -O0" bash -c "cd build/gcc-debug && ctest -j $jobs --output-on-failure"
echo "== the slowest tests of g++ -O0"; slowest_tests build/gcc-debug
echo "== tests: clang++ -O2 (with the cross-build comparison against g++ -O0)"
phase "tests: clang++ -O2" bash -c "cd build/clang-release && ctest -j $jobs --output-on-failure"
echo "== the slowest tests of clang++ -O2"; slowest_tests build/clang-release
echo "== cross-architecture check: the same hashes on s390x, riscv64, aarch64, i686 and wasm32"
phase "cross-architecture check" env LOCKSTEP_NATIVE="$PWD/build/clang-release/tools/lockstep" ./scripts/cross-check.sh
