# Shared by the per-architecture toolchain files in this folder: Debian's cross compilers
# (g++-12-<triple>), the target's C and C++ libraries from their -cross packages, and the build
# machine's header-only dependencies (Boost.Asio, cereal, xxHash, CLI11), which are the same on
# every architecture. Binaries are linked statically so that qemu-user (or, for i686, the
# x86-64 kernel itself) runs them without the target's loader and libraries installed.
#
# Set LOCKSTEP_CROSS_TRIPLE (e.g. aarch64-linux-gnu), LOCKSTEP_CROSS_PROCESSOR and, for targets
# this machine cannot run directly, LOCKSTEP_CROSS_QEMU before including this file; configure with
# LOCKSTEP_CROSS_PREFIX (and PKG_CONFIG_LIBDIR) naming where the target's libsodium is.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${LOCKSTEP_CROSS_PROCESSOR})
set(CMAKE_CXX_COMPILER ${LOCKSTEP_CROSS_TRIPLE}-g++-12)
set(CMAKE_LIBRARY_ARCHITECTURE ${LOCKSTEP_CROSS_TRIPLE})

# Libraries built for the target outside the -cross packages (scripts/cross-check.sh builds
# libsodium into LOCKSTEP_CROSS_PREFIX) are found there too.
set(CMAKE_FIND_ROOT_PATH /usr/${LOCKSTEP_CROSS_TRIPLE} ${LOCKSTEP_CROSS_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
# Header-only packages: their headers and CMake files are the build machine's.
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(cereal_DIR /usr/lib/x86_64-linux-gnu/cmake/cereal CACHE PATH "cereal's CMake files (header-only)")

set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
if(LOCKSTEP_CROSS_QEMU)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${LOCKSTEP_CROSS_QEMU})
endif()
