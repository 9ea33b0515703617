#!/usr/bin/env bash
# Installs the Debian 12 packages lockstep needs, and only those that are missing.
# Safe to run again: when everything is present it does nothing and needs no network.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3
  g++ clang libclang-rt-14-dev   # two compilers for the cross-compiler goldens; libFuzzer and sanitizers
  libboost-dev                   # Boost.Asio (header-only use)
  libcereal-dev                  # snapshots and replay keyframes
  rapidjson-dev                  # reading regress --jsonl files back (regress merge)
  libxxhash-dev                  # XXH3 state hashes
  catch2                         # tests (v2.13)
  libcli11-dev                   # command-line parsing
  libsodium-dev                  # sealing every datagram of a session
  libbenchmark-dev               # benchmark program
  g++-12-i686-linux-gnu g++-12-aarch64-linux-gnu g++-12-riscv64-linux-gnu g++-12-s390x-linux-gnu
  qemu-user                      # scripts/cross-check.sh: the same hashes on four other architectures
  emscripten                     # scripts/cross-check.sh wasm32 and view --static: the engine in WebAssembly (with node)
  curl                           # scripts/cross-check.sh: Debian's libsodium-dev for s390x and i386
  chromium                       # tests/browser: the viewer's page in a real headless browser
  python3-junitparser python3-yaml  # tests: regress --junit read by a JUnit parser; the Kubernetes manifests
  munge slurmctld slurmd slurm-client  # tests/cluster: regress as a Slurm job array on a one-node cluster
  nginx-light                    # tests/broadcast: spectate follows a broadcast served by a real web server
)

# The npm_package test packs and installs the WebAssembly engine with npm. Debian's nodejs has no
# npm of its own (its npm package does); a node from elsewhere (NodeSource, nvm) bundles one, and
# Debian's npm would fight it: so npm is asked for only when no npm command exists.
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "error: missing packages (${missing[*]}); run this script as root to install them" >&2
  exit 2
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
