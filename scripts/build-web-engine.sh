#!/usr/bin/env bash
# Builds lockstep in WebAssembly with Debian's Emscripten (cmake/toolchains/wasm32-emscripten.cmake)
# into build/wasm (or DIR): tools/lockstep.js + lockstep.wasm, the command line under node, and
# tools/lockstep-web.js, the engine for JavaScript — what `lockstep view --static` writes beside
# the page (configure the native build with -DLOCKSTEP_WEB_ENGINE=$PWD/build/wasm/tools/lockstep-web.js)
# and what the npm package lockstep-engine holds (`npm pack` in build/wasm/tools).
# The network (no UDP sockets in WebAssembly) and the viewer's server are left out.
# A build already there is brought up to date. Its log is DIR/build.log; exits 2 if it fails.
#
# usage: scripts/build-web-engine.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build/wasm}
case $dir in -*) echo "usage: scripts/build-web-engine.sh [DIR]" >&2; exit 2 ;; esac
command -v emcc >/dev/null || { echo "error: no emcc: install Debian's emscripten (scripts/install-deps.sh)" >&2; exit 2; }
mkdir -p "$dir"
echo "build-web-engine: building lockstep for wasm32 in $dir" >&2
if ! { cmake -S . -B "$dir" --toolchain "$PWD/cmake/toolchains/wasm32-emscripten.cmake" \
         -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DLOCKSTEP_BUILD_TESTS=OFF -DLOCKSTEP_WERROR=ON \
         -DLOCKSTEP_VIEW_SERVER=OFF &&
       cmake --build "$dir" -j "$(nproc)" --target lockstep lockstep_web; } >"$dir/build.log" 2>&1; then
  tail -n 20 "$dir/build.log" >&2
  echo "error: the wasm32 build failed; see $dir/build.log" >&2
  exit 2
fi
echo "build-web-engine: $dir/tools/lockstep.js (node) and $dir/tools/lockstep-web.js (browsers, the npm package)" >&2
