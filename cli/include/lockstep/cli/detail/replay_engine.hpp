#pragma once
// A replay opened for a JavaScript host (the browser page of `view --static`, the npm package):
// verified as `lockstep replay FILE` verifies it, with the same printed lines; then answered as
// the viewer's server answers a page (hello, frame batches); and stepped tick by tick with its
// hash and its fields by the field report's names. Compiled into the WebAssembly module
// (tools/web/); nothing here needs Emscripten, so the native tests build it too.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/replay_commands.hpp"
#include "lockstep/cli/view/view_command.hpp"
#include "lockstep/replay/field_report.hpp"

namespace lockstep::cli::detail {

class ReplayEngine {
 public:
  virtual ~ReplayEngine() = default;

  /// Plays the whole replay from its start, checking every recorded hash, and prints what
  /// `lockstep replay FILE` prints; returns its exit code (0 ok, 1 desync, 4 no hash to check).
  /// Afterwards the view (hello, frames) shows the replay with its first divergence, if any; a
  /// view that cannot be built (memory) leaves hello_json empty and says why on stderr.
  virtual int verify() = 0;
  /// The viewer's first message (view_command.hpp's hello), once verified.
  [[nodiscard]] virtual std::string hello_json() const = 0;
  /// Answers one message a page sent (view_protocol.hpp), as the server does: a frame batch
  /// into `batch` (true), or a JSON text message into `text` (false).
  virtual bool answer(std::span<const std::byte> request, view::FrameBatchWriter& batch, std::string& text) = 0;

  [[nodiscard]] virtual std::uint64_t start_tick() const = 0;
  [[nodiscard]] virtual std::uint64_t last_tick() const = 0;
  /// The tick of the state `hash` and `fields` describe.
  [[nodiscard]] virtual std::uint64_t tick() const = 0;
  [[nodiscard]] virtual std::uint64_t hash() const = 0;
  /// The recorded hash of the current tick, when the file holds one.
  [[nodiscard]] virtual std::optional<std::uint64_t> recorded_hash() const = 0;
  /// Moves to any tick of the replay as `replay --from-tick` does: from the nearest trusted
  /// keyframe (whose hash the file records), verifying hashes on the way.
  virtual Status seek(std::uint64_t tick) = 0;
  /// One tick forward, checking its recorded hash (a divergence is an error naming it).
  virtual Status step() = 0;
  /// Every field of the current state, "tick" and "state.…", as the field report names them.
  [[nodiscard]] virtual std::vector<replay::Field> fields() const = 0;
};

template <Simulation S>
class ReplayEngineOf final : public ReplayEngine {
 public:
  ReplayEngineOf(std::string path, replay::ReplayFile file, std::uint64_t max_state_mb)
      : path_(std::move(path)), max_state_mb_(max_state_mb),
        player_(open_or_throw<S>(std::move(file), false, max_state_mb)) {}

  int verify() override {
    int exit_code = k_exit_ok;
    Progress progress("verify", player_.last_tick());
    verify_replay_range(player_, player_.start_tick(), player_.last_tick(), progress, &exit_code);
    std::fflush(stdout);
    // The verdict stands whatever happens to the view, which needs a second player (and, for a
    // desync, a field report).
    const int view_made = run_guarded([&] {
      ViewWorld<S> world{open_or_throw<S>(player_.file(), false, max_state_mb_), path_, std::nullopt, std::nullopt};
      std::optional<ViewDivergence> divergence;
      if (exit_code == k_exit_failed) {  // a desync: its field report, as `view FILE` shows it
        divergence = view_divergence<S>(replay::diff_against_recording(world.player));
        if (divergence) world.diverges_at = divergence->tick;
      }
      std::vector<ViewWorld<S>> worlds;
      worlds.push_back(std::move(world));
      view_.emplace(std::move(worlds), std::move(divergence));
      return k_exit_ok;
    });
    if (view_made != k_exit_ok) std::fprintf(stderr, "note: the replay cannot be shown, only verified\n");
    return exit_code;
  }

  [[nodiscard]] std::string hello_json() const override { return view_ ? view_->hello_json(false) : std::string{}; }

  bool answer(std::span<const std::byte> message, view::FrameBatchWriter& batch, std::string& text) override {
    Result<view::Request> request = view::decode_request(message);
    Status made = request ? Status{} : Status(request.error());
    if (made && !view_) made = fail("the replay is not verified yet");
    if (made) {
      if (const auto* frames = std::get_if<view::FramesRequest>(&request.value())) {
        made = view_->frames(*frames, batch);
        if (made) return true;
      } else {
        made = fail("keys play a live session (lockstep play), not a replay");
      }
    }
    text = "{\"type\":\"error\",\"message\":" + view::json_string(made.error().message) + "}";
    return false;
  }

  [[nodiscard]] std::uint64_t start_tick() const override { return player_.start_tick(); }
  [[nodiscard]] std::uint64_t last_tick() const override { return player_.last_tick(); }
  [[nodiscard]] std::uint64_t tick() const override { return player_.tick(); }
  [[nodiscard]] std::uint64_t hash() const override { return player_.runner().hash(); }
  [[nodiscard]] std::optional<std::uint64_t> recorded_hash() const override { return player_.file().hash_at(tick()); }

  Status seek(std::uint64_t tick) override { return checked(player_.seek(tick)); }

  Status step() override {
    if (tick() >= last_tick()) return fail("tick ", tick() + 1, " is past the replay's last tick ", last_tick());
    // From the current state, never a keyframe: past a divergence it goes on diverging.
    return checked(player_.play_to(tick() + 1));
  }

  [[nodiscard]] std::vector<replay::Field> fields() const override {
    return replay::list_fields(player_.tick(), player_.runner().simulation());
  }

 private:
  /// A played stretch as a status: a desync is an error naming it, as `replay` prints it.
  static Status checked(const Result<replay::PlayOutcome>& outcome) {
    if (!outcome) return outcome.error();
    if (outcome->desync) {
      return fail("desync at tick ", outcome->desync->tick, ": expected ", hash_hex(outcome->desync->expected), " got ",
                  hash_hex(outcome->desync->actual));
    }
    return {};
  }

  std::string path_;
  std::uint64_t max_state_mb_;
  replay::Player<S> player_;
  std::optional<ReplayView<S>> view_;
};

/// Opens the replay at `path` for the simulation it names (one of Sims), printing the notes
/// `replay` prints (truncation); a bad file throws CommandError with `replay`'s message.
template <class Sims>
std::unique_ptr<ReplayEngine> open_replay_engine(const std::string& path, std::uint64_t max_state_mb) {
  replay::ReplayFile file = read_or_throw(path);
  note_truncation(path, file);
  std::unique_ptr<ReplayEngine> engine;
  const std::string simulation = file.header.simulation;
  Sims::with(simulation, [&]<class S>() {
    engine = std::make_unique<ReplayEngineOf<S>>(path, std::move(file), max_state_mb);
  });
  return engine;
}

}  // namespace lockstep::cli::detail
