# WebAssembly with Debian's Emscripten (3.1.6: clang 14, libc++ 13):
#   cmake -S . -B build/wasm --toolchain cmake/toolchains/wasm32-emscripten.cmake \
#     -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_BUILD_TESTS=OFF -DLOCKSTEP_VIEW_SERVER=OFF
#   cmake --build build/wasm --target lockstep      # tools/lockstep.js and lockstep.wasm
#   node build/wasm/tools/lockstep.js run --ticks 2000
# The project does the rest when it sees EMSCRIPTEN: no network (LOCKSTEP_NETWORK=OFF: no UDP
# sockets), Debian's header-only libraries made visible (cmake/LockstepWebAssembly.cmake),
# exceptions on (tools/CMakeLists.txt and engine/CMakeLists.txt), one thread.
include(/usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake)
