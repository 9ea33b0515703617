#!/usr/bin/env bash
# The README's second command, and what CI runs: builds lockstep twice — g++ at -O0 (Debug) and
# clang++ at -O2 — with warnings as errors, runs every test in both, and has the clang build's
# tests compare every tick's hash with the g++ -O0 binary. Then builds lockstep for i686,
# aarch64, riscv64 and s390x (g++ -O3) and compares every hash with the clang++ -O2 build's.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
jobs=$(nproc)

cmake -S . -B build/gcc-debug -DCMAKE_CXX_COMPILER=g++ -DCMAKE_BUILD_TYPE=Debug \
  -DLOCKSTEP_WERROR=ON
cmake --build build/gcc-debug -j "$jobs"

cmake -S . -B build/clang-release -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" -DLOCKSTEP_WERROR=ON \
  "-DLOCKSTEP_PEER_LOCKSTEP=$PWD/build/gcc-debug/tools/lockstep"
cmake --build build/clang-release -j "$jobs"

echo "== tests: g++ -O0"
(cd build/gcc-debug && ctest -j "$jobs" --output-on-failure)
echo "== tests: clang++ -O2 (with the cross-build comparison against g++ -O0)"
(cd build/clang-release && ctest -j "$jobs" --output-on-failure)
echo "== cross-architecture check: the same hashes on i686, aarch64, riscv64 and s390x"
LOCKSTEP_NATIVE=$PWD/build/clang-release/tools/lockstep ./scripts/cross-check.sh
