#pragma once
// `view`: a web page that plays one replay, two replays overlaid, or two participants of a desync
// evidence bundle, served by ViewServer; frames are re-simulated on demand from the nearest keyframe or snapshot.
// The page's messages, the server's loop and the options need no simulation type: they are
// compiled once in the cli library (src/view_command.cpp).

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/replay_commands.hpp"
#include "lockstep/cli/detail/simulations.hpp"
#include "lockstep/cli/detail/text.hpp"
#include "lockstep/cli/hooks.hpp"
#include "lockstep/cli/progress.hpp"
#include "lockstep/cli/view/view_protocol.hpp"
#include "lockstep/cli/view/view_server.hpp"
#include "lockstep/replay/diff.hpp"
#include "lockstep/replay/player.hpp"

namespace lockstep::cli::detail {

/// The shapes of a state, through the simulation's draw hook (nothing without one).
template <Simulation S>
void draw_state(const S& sim, DrawList& out) {
  if constexpr (HasDraw<S>) {
    Hooks<S>::draw(sim, out);
  } else {
    (void)sim;
    out.clear();
  }
}

/// The hello message's description of a file's recorded hashes: runs of ticks whose hashes are
/// at most `hash_every` apart, as [first, last] pairs (at most 1,024; the rest merged).
std::string hash_ranges_json(const replay::ReplayFile& file);

/// The divergence of two worlds: where, the field report, and the names of the parts it lists.
struct ViewDivergence {
  std::uint64_t tick = 0;
  replay::DiffResult report;
  std::set<std::string> parts;  ///< "body 18": what describe_field names each differing field
};

/// The hello message's `divergence`: null, or its tick, note and fields (each named by
/// `describe`), the first 256 KiB of them.
std::string divergence_json(const std::optional<ViewDivergence>& divergence, std::string (*describe)(std::string_view));

/// What a page is told first, the JSON text message `hello`.
struct ViewHello {
  std::string_view mode;  ///< "replay", "compare", "evidence" or "live"
  std::string simulation;
  std::vector<std::string> files;
  std::size_t worlds = 1;
  std::uint64_t start_tick = 0;
  std::uint64_t last_tick = 0;
  std::uint32_t tick_rate_hz = 0;
  std::uint32_t players = 0;
  std::size_t input_bytes = 0;
  std::string_view input_layout;
  std::vector<std::uint64_t> keyframes;
  std::string hash_ranges = "[]";  ///< JSON, from hash_ranges_json
  bool truncated = false;
  bool drawable = false;
  std::string divergence = "null";  ///< JSON, from divergence_json
  bool live = false;                ///< a live session: the hello names the local player
  std::optional<std::uint32_t> local_player;  ///< live only; none: a spectator
};
std::string hello_json(const ViewHello& hello);

/// Per shape of two drawings of one tick, 1 where they differ: in place or size, or (when
/// both are the same) named by a part of `parts`.
void mark_differing_shapes(const DrawList& a, const DrawList& b, const std::set<std::string>& parts,
                           std::vector<std::uint8_t>& differs);

/// One world of the view: a replay played on demand, and optionally the state a participant
/// had at its evidence tick (a participant of an evidence bundle), which replaces the replay's there.
template <Simulation S>
struct ViewWorld {
  replay::Player<S> player;
  std::string name;
  std::optional<Runner<S>> evidence;  ///< its own state at the evidence tick
  /// The first tick whose recorded hash re-simulation does not reproduce, when known. From there
  /// on the file's keyframes hold the recording's states, not re-simulation's, so ticks past it
  /// are reached by stepping from before it: a tick looks the same however the page got there.
  std::optional<std::uint64_t> diverges_at;
};

/// Answers a page's requests for frames from one or two worlds.
template <Simulation S>
class ReplayView {
 public:
  ReplayView(std::vector<ViewWorld<S>> worlds, std::optional<ViewDivergence> divergence)
      : worlds_(std::move(worlds)), divergence_(std::move(divergence)) {
    first_ = worlds_[0].player.start_tick();
    last_ = ~std::uint64_t{0};
    for (const ViewWorld<S>& w : worlds_) {
      first_ = std::max(first_, w.player.start_tick());
      // A participant's evidence ends at its own state, which may lie past its replay's last tick.
      last_ = std::min(last_, w.evidence ? w.evidence->tick() : w.player.last_tick());
    }
    if (first_ > last_) throw CommandError{"the files share no tick to show"};
    draws_.resize(worlds_.size());
    differs_.resize(worlds_.size());
  }

  [[nodiscard]] std::uint64_t first_tick() const { return first_; }
  [[nodiscard]] std::uint64_t last_tick() const { return last_; }

  /// The JSON text message a page gets first.
  [[nodiscard]] std::string hello_json(bool evidence) const {
    const replay::ReplayFile& file = worlds_[0].player.file();
    ViewHello hello;
    hello.mode = evidence ? "evidence" : worlds_.size() > 1 ? "compare" : "replay";
    hello.simulation = file.header.simulation;
    hello.worlds = worlds_.size();
    hello.start_tick = first_;
    hello.last_tick = last_;
    hello.tick_rate_hz = shown_tick_rate_hz<S>(worlds_[0].player.config());
    hello.players = file.header.players;
    hello.input_bytes = S::Input::k_bytes;
    hello.input_layout = S::Input::k_layout;
    hello.hash_ranges = hash_ranges_json(file);
    hello.drawable = HasDraw<S>;
    hello.divergence = divergence_json(divergence_, &replay::describe_field<S>);
    for (const ViewWorld<S>& w : worlds_) {
      hello.files.push_back(w.name);
      hello.truncated = hello.truncated || w.player.file().truncated;
    }
    for (const replay::Keyframe& k : file.keyframes) hello.keyframes.push_back(k.tick);
    return detail::hello_json(hello);
  }

  /// The frames a request asks for, in one batch (shorter past the last tick or the batch bound).
  Status frames(const view::FramesRequest& request, view::FrameBatchWriter& out) {
    if (request.from_tick < first_ || request.from_tick > last_) {
      return fail("tick ", request.from_tick, " is outside the view (", first_, " to ", last_, ")");
    }
    const std::uint64_t end = std::min<std::uint64_t>(last_, request.from_tick + request.count - 1);
    out.begin(static_cast<std::uint8_t>(worlds_.size()), static_cast<std::uint16_t>(worlds_[0].player.file().header.players),
              static_cast<std::uint16_t>(S::Input::k_bytes));
    for (std::uint64_t t = request.from_tick; t <= end; ++t) {
      out.begin_frame(t);
      for (std::size_t w = 0; w < worlds_.size(); ++w) {
        if (Status placed = place(worlds_[w], t); !placed) return placed;
      }
      mark_differences(t);
      for (std::size_t w = 0; w < worlds_.size(); ++w) add_world(w, t, out);
      if (out.size() >= view::k_max_batch_bytes) break;
    }
    return {};
  }

 private:
  /// Brings a world's player to tick t: the next tick is one step, anything else a seek (from
  /// before the world's divergence, when t lies past it).
  static Status place(ViewWorld<S>& world, std::uint64_t t) {
    replay::Player<S>& p = world.player;
    if (t > p.last_tick() || p.tick() == t) return {};
    if (p.tick() + 1 == t) {
      Result<std::uint64_t> stepped = p.step();
      return stepped ? Status{} : Status(stepped.error());
    }
    std::uint64_t from = t;
    if (world.diverges_at && *world.diverges_at > p.start_tick()) from = std::min(t, *world.diverges_at - 1);
    if (p.tick() < t && p.tick() >= from) from = p.tick();  // already on the way: step on
    Result<replay::PlayOutcome> sought = p.seek(from);
    if (!sought) return sought.error();
    // A recorded hash that does not hold stops a seek there; the view goes on to show what
    // re-simulation gives (and marks the mismatch).
    while (p.tick() < t) {
      Result<std::uint64_t> stepped = p.step();
      if (!stepped) return stepped.error();
    }
    return {};
  }

  /// The state world w shows at tick t: its evidence state at the evidence tick, else the
  /// replay's (none past the replay's end).
  [[nodiscard]] const S* shown(std::size_t w, std::uint64_t t, std::uint64_t* hash) const {
    const ViewWorld<S>& world = worlds_[w];
    if (world.evidence && world.evidence->tick() == t) {
      *hash = world.evidence->hash();
      return &world.evidence->simulation();
    }
    if (t > world.player.last_tick()) return nullptr;
    *hash = world.player.runner().hash();
    return &world.player.runner().simulation();
  }

  /// Draws every world at t and marks, from the divergence on, the shapes of each other world
  /// that differ from the first's or that the field report names; the first world's shapes that
  /// differ from any other's.
  void mark_differences(std::uint64_t t) {
    for (std::size_t w = 0; w < worlds_.size(); ++w) {
      std::uint64_t hash = 0;
      if (const S* sim = shown(w, t, &hash)) draw_state(*sim, draws_[w]);
      else draws_[w].clear();
      differs_[w].clear();
    }
    if (worlds_.size() < 2 || !divergence_ || t < divergence_->tick) return;
    for (std::size_t w = 1; w < worlds_.size(); ++w) {
      mark_differing_shapes(draws_[0], draws_[w], divergence_->parts, differs_[w]);
      if (differs_[0].size() < differs_[w].size()) differs_[0].resize(differs_[w].size(), 0);
      for (std::size_t i = 0; i < differs_[w].size(); ++i) differs_[0][i] |= differs_[w][i];
    }
  }

  void add_world(std::size_t w, std::uint64_t t, view::FrameBatchWriter& out) {
    std::uint64_t hash = 0;
    const S* sim = shown(w, t, &hash);
    if (sim == nullptr) return out.add_absent_world();
    const replay::Player<S>& p = worlds_[w].player;
    std::uint8_t flags = HasDraw<S> ? 0 : static_cast<std::uint8_t>(view::WorldFlags::not_drawable);
    const bool own_state = worlds_[w].evidence && worlds_[w].evidence->tick() == t;
    if (const std::optional<std::uint64_t> recorded = p.file().hash_at(t); recorded && !own_state) {
      flags |= static_cast<std::uint8_t>(view::WorldFlags::hash_recorded);
      if (*recorded != hash) flags |= static_cast<std::uint8_t>(view::WorldFlags::hash_mismatch);
    }
    if (!draws_[w].y_down) flags |= static_cast<std::uint8_t>(view::WorldFlags::y_up);
    inputs_bytes_.assign(std::size_t{p.file().header.players} * S::Input::k_bytes, std::byte{0});
    if (t > p.start_tick() && t <= p.last_tick()) {
      p.inputs_at(t, inputs_);
      for (std::size_t i = 0; i < inputs_.size(); ++i) {
        inputs_[i].to_bytes(std::span<std::byte, S::Input::k_bytes>(inputs_bytes_.data() + i * S::Input::k_bytes, S::Input::k_bytes));
      }
    }
    out.add_world(hash, flags, inputs_bytes_, draws_[w], differs_[w]);
  }

  std::vector<ViewWorld<S>> worlds_;
  std::optional<ViewDivergence> divergence_;
  std::uint64_t first_ = 0;
  std::uint64_t last_ = 0;
  std::vector<DrawList> draws_;
  /// Per world, per shape: 1 when it differs (another world against the first; the first against any).
  std::vector<std::vector<std::uint8_t>> differs_;
  std::vector<typename S::Input> inputs_;
  std::vector<std::byte> inputs_bytes_;
};

struct ViewOptions {
  std::vector<std::string> paths;
  std::string listen = ViewServerConfig{}.listen_address;
  std::uint16_t port = k_default_view_port;
  std::string static_dir;  ///< --static DIR: write the static page there instead of serving
  std::uint32_t participant = 0;  ///< of an evidence bundle: shown beside the host's group
  CLI::Option* participant_option = nullptr;
  bool force = false;
  std::uint64_t max_state_mb = replay::k_default_max_state_bytes >> 20;
};

/// Registers `view` and its options; returns it for its callback.
CLI::App* add_view_options(CLI::App& app, ViewOptions& options);

/// `--static DIR`: writes the folder and returns true; without it checks that files were given.
bool write_static_view_folder(const ViewOptions& options);

/// What `view` shows.
enum class ViewedFiles { replays, bundle };

/// Checks the paths `view` was given (and --listen, --participant); returns what they are.
ViewedFiles viewed_files(const ViewOptions& options);

/// Answers a page's request for frames (into the writer), or says why not.
using FramesFn = std::function<Status(const view::FramesRequest& request, view::FrameBatchWriter& out)>;

/// Serves the page until SIGINT or SIGTERM. Handlers only queue what pages ask; this loop
/// answers, so re-simulation never runs inside a network handler.
void serve_view(std::uint64_t first_tick, std::uint64_t last_tick, const std::string& hello, const FramesFn& frames,
                const ViewOptions& options, int* exit_code);

template <Simulation S>
ViewWorld<S> open_view_world(replay::ReplayFile file, std::string name, const ViewOptions& options) {
  note_truncation(name, file);
  return ViewWorld<S>{open_or_throw<S>(std::move(file), options.force, options.max_state_mb), std::move(name), std::nullopt,
                      std::nullopt};
}
template <Simulation S>
ViewWorld<S> open_view_world(const std::string& path, std::string name, const ViewOptions& options) {
  return open_view_world<S>(read_or_throw(path), std::move(name), options);
}

/// The divergence a field report found (none when identical).
template <Simulation S>
std::optional<ViewDivergence> view_divergence(Result<replay::DiffResult> result) {
  if (!result) throw CommandError{result.error().message, k_exit_failed};
  if (result->identical) return std::nullopt;
  ViewDivergence divergence{result->divergence_tick, std::move(result).value(), {}};
  for (const replay::FieldDifference& f : divergence.report.fields) {
    if (std::string part = replay::describe_field<S>(f.path); !part.empty()) divergence.parts.insert(std::move(part));
  }
  return divergence;
}

/// The worlds of `view`: one replay (checked against its own recording), or two replays (compared
/// tick by tick).
template <Simulation S>
ReplayView<S> open_view(const ViewOptions& options) {
  std::vector<ViewWorld<S>> worlds;
  std::optional<ViewDivergence> divergence;
  const std::string& a = options.paths[0];
  if (options.paths.size() == 2) {
    worlds.push_back(open_view_world<S>(a, a, options));
    worlds.push_back(open_view_world<S>(options.paths[1], options.paths[1], options));
    Progress progress("compare", std::min(worlds[0].player.last_tick(), worlds[1].player.last_tick()));
    divergence = view_divergence<S>(replay::diff_replays(worlds[0].player, worlds[1].player,
                                                         [&progress](std::uint64_t t) { progress.update(t); }));
  } else {
    worlds.push_back(open_view_world<S>(a, a, options));
    Progress progress("verify", worlds[0].player.last_tick());
    divergence = view_divergence<S>(
        replay::diff_against_recording(worlds[0].player, [&progress](std::uint64_t t) { progress.update(t); }));
    if (divergence) worlds[0].diverges_at = divergence->tick;
  }
  return ReplayView<S>(std::move(worlds), std::move(divergence));
}

/// The worlds of `view BUNDLE`: the evidence of the host's group's first participant overlaid by
/// one of every other group's (or by the one --participant names: view_participants), each replay
/// with that participant's own state at the desync tick. The field report shown is the first
/// pair's; every pair's differing parts are marked.
template <Simulation S>
ReplayView<S> open_bundle_view(const ViewOptions& options, const replay::EvidenceBundle& bundle) {
  const std::vector<std::size_t> shown =
      view_participants<S>(bundle, options.participant_option->count() > 0, options.participant);
  std::vector<ViewWorld<S>> worlds;
  std::vector<EvidenceState<S>> states;
  for (const std::size_t index : shown) {
    ViewWorld<S> world = open_view_world<S>(participant_replay(bundle, index), participant_label(bundle, index), options);
    EvidenceState<S> state = participant_state<S>(bundle, index);
    world.evidence.emplace(state.sim, state.tick);
    worlds.push_back(std::move(world));
    states.push_back(std::move(state));
  }
  std::optional<ViewDivergence> divergence;
  for (std::size_t w = 1; w < states.size(); ++w) {
    replay::DiffResult result;
    result.identical = false;
    result.divergence_tick = result.report_tick = states[0].tick;
    replay::report_fields(result, states[0].tick, states[0].sim, states[w].sim, std::max(states[0].bytes, states[w].bytes),
                          options.max_state_mb << 20);
    if (result.fields.empty() && result.note.empty()) result.identical = true;
    std::optional<ViewDivergence> pair = view_divergence<S>(std::move(result));
    if (!divergence) divergence = std::move(pair);
    else if (pair) divergence->parts.insert(pair->parts.begin(), pair->parts.end());
  }
  return ReplayView<S>(std::move(worlds), std::move(divergence));
}

template <class Sims>
void view_command(const ViewOptions& options, int* exit_code) {
  if (write_static_view_folder(options)) {
    *exit_code = k_exit_ok;
    return;
  }
  const ViewedFiles files = viewed_files(options);
  if (files == ViewedFiles::bundle) {
    const replay::EvidenceBundle bundle = read_bundle_or_throw(options.paths[0]);
    Sims::with(bundle.simulation, [&]<class S>() {
      ReplayView<S> view = open_bundle_view<S>(options, bundle);
      const FramesFn frames = [&view](const view::FramesRequest& request, view::FrameBatchWriter& out) {
        return view.frames(request, out);
      };
      serve_view(view.first_tick(), view.last_tick(), view.hello_json(true), frames, options, exit_code);
    });
    return;
  }
  const replay::ReplayFile first = read_or_throw(options.paths[0]);
  Sims::with(first.header.simulation, [&]<class S>() {
    ReplayView<S> view = open_view<S>(options);
    const FramesFn frames = [&view](const view::FramesRequest& request, view::FrameBatchWriter& out) {
      return view.frames(request, out);
    };
    serve_view(view.first_tick(), view.last_tick(), view.hello_json(false), frames, options, exit_code);
  });
}

template <class Sims>
void add_view_command(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ViewOptions>();
  add_view_options(app, *options)->callback([options, exit_code] { view_command<Sims>(*options, exit_code); });
}

}  // namespace lockstep::cli::detail
