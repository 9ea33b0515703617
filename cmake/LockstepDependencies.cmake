# cereal, which every lockstep target's headers use, the threads library the world steps on, and
# libsodium, which seals the datagrams of a session (lockstep::net), found the same way when
# lockstep is built and when an installed lockstep is found by a user's project
# (lockstepConfig.cmake includes this).

find_package(Threads REQUIRED)

# cereal is header-only, but Debian's package file accepts 64-bit builds only: a 32-bit build
# (i686) uses the same headers through a target of its own.
find_package(cereal QUIET)
if(NOT TARGET cereal::cereal)
  find_path(LOCKSTEP_CEREAL_INCLUDE_DIR cereal/cereal.hpp REQUIRED)
  add_library(cereal::cereal INTERFACE IMPORTED)
  target_include_directories(cereal::cereal INTERFACE "${LOCKSTEP_CEREAL_INCLUDE_DIR}")
endif()

# libsodium (Debian's libsodium-dev), through its pkg-config file; a cross build points
# PKG_CONFIG_LIBDIR at the target's own (scripts/cross-check.sh builds it from Debian's source).
# A build without the network (LOCKSTEP_NETWORK=OFF) needs none.
if(NOT DEFINED LOCKSTEP_NETWORK OR LOCKSTEP_NETWORK)
  find_package(PkgConfig REQUIRED)
  if(NOT TARGET PkgConfig::lockstep_sodium)
    pkg_check_modules(lockstep_sodium REQUIRED IMPORTED_TARGET GLOBAL libsodium>=1.0.18)
  endif()
endif()
