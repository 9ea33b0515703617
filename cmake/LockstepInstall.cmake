# `cmake --install` puts the headers, the three libraries, a CMake package and a pkg-config file
# in the prefix, so
# that `find_package(lockstep 0.4 REQUIRED)` gives lockstep::engine, lockstep::replay,
# lockstep::net and lockstep::cli with their include directories, their dependencies and the compile options that
# determinism needs (-ffp-contract=off; SSE2 on 32-bit x86) as usage requirements.
include(CMakePackageConfigHelpers)

set(LOCKSTEP_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/lockstep")
set(LOCKSTEP_INSTALLED_TARGETS lockstep_engine lockstep_replay lockstep_net)
set(LOCKSTEP_CONFIG_HAS_CLI FALSE)
if(TARGET lockstep_cli)
  list(APPEND LOCKSTEP_INSTALLED_TARGETS lockstep_cli)
  set(LOCKSTEP_CONFIG_HAS_CLI TRUE)
endif()
install(TARGETS ${LOCKSTEP_INSTALLED_TARGETS} EXPORT lockstepTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/engine/include/" "${PROJECT_SOURCE_DIR}/replay/include/"
                  "${PROJECT_SOURCE_DIR}/net/include/" "${PROJECT_SOURCE_DIR}/cli/include/"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(EXPORT lockstepTargets NAMESPACE lockstep:: DESTINATION "${LOCKSTEP_CMAKE_DIR}")

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/lockstepConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/lockstepConfig.cmake" INSTALL_DESTINATION "${LOCKSTEP_CMAKE_DIR}")
# 0.x: a minor version may change the API, so 0.2 accepts 0.2.* only.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/lockstepConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/lockstepConfig.cmake" "${PROJECT_BINARY_DIR}/lockstepConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/LockstepDependencies.cmake"
        DESTINATION "${LOCKSTEP_CMAKE_DIR}")

# pkg-config, for builds without CMake: lib/pkgconfig/lockstep.pc (libsodium through its own
# lockstep.pc requires, since the libraries are static; cereal and Boost are headers
# the system compiler finds; xxHash is compiled into lockstep_engine).
set(LOCKSTEP_PC_DETERMINISM_FLAGS "-ffp-contract=off")
if(LOCKSTEP_TARGET_IS_X86_32)
  string(APPEND LOCKSTEP_PC_DETERMINISM_FLAGS " -msse2 -mfpmath=sse")
endif()
# The prefix, from the .pc file's own folder: ../.. under lib/pkgconfig, ../../.. under a
# multiarch lib/<triplet>/pkgconfig.
file(RELATIVE_PATH LOCKSTEP_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
set(LOCKSTEP_PC_CLI_LIB "")
if(LOCKSTEP_CONFIG_HAS_CLI)
  set(LOCKSTEP_PC_CLI_LIB "-llockstep_cli ")
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/lockstep.pc.in" "${PROJECT_BINARY_DIR}/lockstep.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/lockstep.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
