// A build configured without LOCKSTEP_WEB_ENGINE: `view --static` has no engine to write.
#include "lockstep/cli/view/view_static.hpp"

namespace lockstep::cli {

std::span<const ViewAsset> web_engine_assets() { return {}; }

}  // namespace lockstep::cli
