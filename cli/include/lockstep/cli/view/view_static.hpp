#pragma once
// `lockstep view --static DIR`: the viewer's page and lockstep's WebAssembly engine written as a
// folder that any static web server (or a browser, from disk) shows with no lockstep server: the
// person opens a replay and the page re-simulates and verifies it (cli/src/view/page/engine.js).

#include <cstdint>
#include <span>
#include <string>

#include "lockstep/cli/view/view_server.hpp"
#include "lockstep/engine/result.hpp"

namespace lockstep::cli {

/// The WebAssembly engine's files (lockstep-web.js), embedded when the build was configured with
/// LOCKSTEP_WEB_ENGINE; none otherwise.
std::span<const ViewAsset> web_engine_assets();

struct StaticViewWritten {
  std::size_t files = 0;
  std::uint64_t bytes = 0;
};

/// Writes the folder into `dir`, which must not exist or be empty (nothing in it is replaced).
[[nodiscard]] Result<StaticViewWritten> write_static_view(const std::string& dir);

}  // namespace lockstep::cli
