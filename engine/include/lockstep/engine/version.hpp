#pragma once
/// The engine's version and a description of the build, for file headers and diagnostics.

#include <string>

namespace lockstep {

/// "major.minor.patch" of this lockstep build.
const char* engine_version();

/// Compiler, its version, build type and optimisation flags, e.g.
/// "g++ 12.2.0, Release, -O3 -DNDEBUG". For diagnosis only: the hash never depends on it.
std::string build_description();

}  // namespace lockstep
