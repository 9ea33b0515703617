// lockstep-web.js: the engine for JavaScript (the page `lockstep view --static` writes, and the
// npm package), a WebAssembly module whose C functions below its glue (engine.js) calls. One
// replay is open at a time; every function catches what it throws and prints `error: …` on
// stderr, as the command line does, so that no input can take the module down.

#include <emscripten.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/cli/cli.hpp"
#include "lockstep/cli/detail/replay_engine.hpp"

namespace {

using namespace lockstep;
using Known = cli::detail::Simulations<World>;  // the simulations of the lockstep program

std::unique_ptr<cli::detail::ReplayEngine> g_engine;
cli::view::FrameBatchWriter g_batch;
std::vector<std::byte> g_answer;
std::string g_text;

/// A failed Status as a command's error (printed by run_guarded).
int status_code(const Status& status) {
  if (!status) throw cli::CommandError{status.error().message};
  return cli::k_exit_ok;
}

}  // namespace

extern "C" {

/// Opens and verifies the replay at `path` (the module's file system): prints what
/// `lockstep replay PATH` prints and returns its exit code. `max_state_mb` as --max-state-mb
/// (0: its default).
EMSCRIPTEN_KEEPALIVE int lockstep_web_open(const char* path, double max_state_mb) {
  g_engine.reset();
  if (max_state_mb == 0) max_state_mb = static_cast<double>(replay::k_default_max_state_bytes >> 20);
  return cli::run_guarded([&] {
    if (!(max_state_mb >= 1 && max_state_mb <= (1u << 20)) || std::floor(max_state_mb) != max_state_mb) {
      throw cli::CommandError{"max_state_mb must be a whole number from 1 to 1048576"};
    }
    std::unique_ptr<cli::detail::ReplayEngine> engine =
        cli::detail::open_replay_engine<Known>(path, static_cast<std::uint64_t>(max_state_mb));
    const int code = engine->verify();
    std::fflush(stdout);
    g_engine = std::move(engine);
    return code;
  });
}

/// The viewer's hello for the open replay ("" when none is open).
EMSCRIPTEN_KEEPALIVE const char* lockstep_web_hello() {
  g_text = g_engine ? g_engine->hello_json() : std::string{};
  return g_text.c_str();
}

/// Answers a page's message (`size` bytes at `request`): 1 with a frame batch, 0 with a JSON text
/// message; lockstep_web_answer_data and _size give its bytes.
EMSCRIPTEN_KEEPALIVE int lockstep_web_answer(const std::byte* request, std::size_t size) {
  int binary = 0;
  const int code = cli::run_guarded([&] {
    if (!g_engine) throw cli::CommandError{"no replay is open"};
    binary = g_engine->answer(std::span<const std::byte>(request, size), g_batch, g_text) ? 1 : 0;
    if (binary == 1) g_answer = g_batch.bytes();
    return 0;
  });
  if (code != 0) {  // whatever was made before the failure is not the answer
    binary = 0;
    g_text = "{\"type\":\"error\",\"message\":\"the engine failed to answer (see the console)\"}";
  }
  if (binary == 0) g_answer.assign(reinterpret_cast<const std::byte*>(g_text.data()),
                                   reinterpret_cast<const std::byte*>(g_text.data() + g_text.size()));
  return binary;
}
EMSCRIPTEN_KEEPALIVE const std::byte* lockstep_web_answer_data() { return g_answer.data(); }
EMSCRIPTEN_KEEPALIVE std::size_t lockstep_web_answer_size() { return g_answer.size(); }

// Stepping (ticks are below 2^53 in any replay this module can hold: doubles carry them exactly).
EMSCRIPTEN_KEEPALIVE double lockstep_web_start_tick() { return g_engine ? static_cast<double>(g_engine->start_tick()) : -1; }
EMSCRIPTEN_KEEPALIVE double lockstep_web_last_tick() { return g_engine ? static_cast<double>(g_engine->last_tick()) : -1; }
EMSCRIPTEN_KEEPALIVE double lockstep_web_tick() { return g_engine ? static_cast<double>(g_engine->tick()) : -1; }

/// The current state's hash, 16 hex digits ("" when no replay is open).
EMSCRIPTEN_KEEPALIVE const char* lockstep_web_hash() {
  g_text = g_engine ? hash_hex(g_engine->hash()) : std::string{};
  return g_text.c_str();
}
/// The current tick's recorded hash, or "" when the file holds none.
EMSCRIPTEN_KEEPALIVE const char* lockstep_web_recorded_hash() {
  const std::optional<std::uint64_t> recorded = g_engine ? g_engine->recorded_hash() : std::nullopt;
  g_text = recorded ? hash_hex(*recorded) : std::string{};
  return g_text.c_str();
}

EMSCRIPTEN_KEEPALIVE int lockstep_web_seek(double tick) {
  return cli::run_guarded([&] {
    if (!g_engine) throw cli::CommandError{"no replay is open"};
    if (!(tick >= 0 && tick <= 9007199254740992.0) || std::floor(tick) != tick) {
      throw cli::CommandError{"the tick must be a whole number of at least 0"};
    }
    return status_code(g_engine->seek(static_cast<std::uint64_t>(tick)));
  });
}

EMSCRIPTEN_KEEPALIVE int lockstep_web_step() {
  return cli::run_guarded([&] {
    if (!g_engine) throw cli::CommandError{"no replay is open"};
    return status_code(g_engine->step());
  });
}

/// Every field of the current state as a JSON object {"path": "value", …}, in report order.
EMSCRIPTEN_KEEPALIVE const char* lockstep_web_fields() {
  g_text = "{";
  cli::run_guarded([&] {
    if (!g_engine) return 0;
    for (const replay::Field& f : g_engine->fields()) {
      g_text += (g_text.size() > 1 ? "," : "") + cli::view::json_string(f.path) + ":" + cli::view::json_string(f.value);
    }
    return 0;
  });
  g_text += "}";
  return g_text.c_str();
}

}  // extern "C"
