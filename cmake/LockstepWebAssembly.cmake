# The WebAssembly build (Emscripten; cmake/toolchains/wasm32-emscripten.cmake). Emscripten
# compiles against its own sysroot, which holds none of Debian's headers. The header-only
# libraries lockstep uses — cereal, xxHash, CLI11, RapidJSON — are taken from Debian's packages
# through a folder of links to them alone: adding /usr/include itself would put glibc's headers
# beside Emscripten's C library.
set(lockstep_host_headers "${CMAKE_BINARY_DIR}/host-headers")
file(MAKE_DIRECTORY "${lockstep_host_headers}")
foreach(entry cereal xxhash.h CLI rapidjson)
  if(NOT EXISTS "/usr/include/${entry}")
    message(FATAL_ERROR "the WebAssembly build uses /usr/include/${entry}, which is missing "
                        "(Debian: libcereal-dev, libxxhash-dev, libcli11-dev, rapidjson-dev)")
  endif()
  file(CREATE_LINK "/usr/include/${entry}" "${lockstep_host_headers}/${entry}" SYMBOLIC)
endforeach()

add_library(cereal::cereal INTERFACE IMPORTED)
target_include_directories(cereal::cereal SYSTEM INTERFACE "${lockstep_host_headers}")
add_library(CLI11::CLI11 INTERFACE IMPORTED)
target_include_directories(CLI11::CLI11 SYSTEM INTERFACE "${lockstep_host_headers}")
set(LOCKSTEP_XXHASH_INCLUDE_DIR "${lockstep_host_headers}" CACHE PATH "xxhash.h's folder" FORCE)

# Emscripten's linker runs JavaScript tools of its own under node that require Debian's node
# packages (acorn), which Debian installs where this node does not look by itself.
if(EXISTS /usr/share/nodejs)
  set_property(GLOBAL PROPERTY RULE_LAUNCH_LINK "${CMAKE_COMMAND} -E env NODE_PATH=/usr/share/nodejs")
endif()
