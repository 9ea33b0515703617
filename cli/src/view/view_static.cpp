#include "lockstep/cli/view/view_static.hpp"

#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

namespace lockstep::cli {
namespace {

constexpr std::string_view k_page_scripts = "<script src=\"viewer.js\"></script>";
constexpr std::string_view k_static_scripts = "<script src=\"engine.js\"></script>\n<script src=\"viewer.js\"></script>";

}  // namespace

Result<StaticViewWritten> write_static_view(const std::string& dir) {
  const std::span<const ViewAsset> engine = web_engine_assets();
  if (engine.empty()) {
    return fail("this lockstep was built without the WebAssembly engine (LOCKSTEP_WEB_ENGINE): build it with "
                "scripts/build-web-engine.sh and configure with -DLOCKSTEP_WEB_ENGINE=build/wasm/tools/lockstep-web.js");
  }
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path folder(dir);
  if (fs::exists(folder, error)) {
    if (!fs::is_directory(folder, error)) return fail("'", dir, "' exists and is not a folder");
    const bool empty = fs::is_empty(folder, error);
    if (error) return fail("cannot read '", dir, "': ", error.message());
    if (!empty) return fail("'", dir, "' is not empty: --static writes a new folder and replaces nothing");
  } else if (!fs::create_directories(folder, error)) {
    return fail("cannot create '", dir, "': ", error.message());
  }
  std::vector<ViewAsset> files(view_assets().begin(), view_assets().end());
  files.insert(files.end(), engine.begin(), engine.end());
  StaticViewWritten written;
  for (const ViewAsset& asset : files) {
    std::string bytes(asset.bytes);
    if (asset.path == "/index.html") {  // the page loads the engine before the viewer
      const std::size_t at = bytes.find(k_page_scripts);
      if (at == std::string::npos) return fail("the embedded page has no ", k_page_scripts, " to load the engine before");
      bytes.replace(at, k_page_scripts.size(), k_static_scripts);
    }
    const fs::path path = folder / std::string(asset.path.substr(1));
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) return fail("cannot write '", path.string(), "'");
    ++written.files;
    written.bytes += bytes.size();
  }
  return written;
}

}  // namespace lockstep::cli
