// lockstep-web.js, following a live broadcast (the static page's `?live=URL`): the page's worker
// (engine.js) fetches; this side decides what to fetch, checks every byte before it is used,
// plays the broadcast at its pace `behind` seconds behind live with every recorded hash verified,
// and draws each tick's frame — as `lockstep spectate URL` does (BroadcastSpectator), with the
// same rules and the same line. One broadcast is followed at a time; every function catches what
// it throws and prints `error: …` on stderr.

#include <emscripten.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/cli/cli.hpp"
#include "lockstep/cli/detail/broadcast_pace.hpp"
#include "lockstep/cli/detail/live_engine.hpp"
#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/replay/broadcast_manifest.hpp"

namespace {

using namespace lockstep;
using Known = cli::detail::Simulations<World>;  // the simulations of the lockstep program

/// What the page's worker plays: a broadcast's manifest, then its engine once the opening (and
/// the keyframe segment to start at) came.
struct Followed {
  std::optional<replay::BroadcastManifest> manifest;
  std::unique_ptr<cli::detail::LiveEngine> engine;
  std::optional<cli::detail::BroadcastPace> pace;
  cli::detail::BroadcastFetched fetched;
  std::uint64_t next = 1;  ///< the next segment to append
  std::uint64_t shown = 0;  ///< the tick of the last frame drawn (the start tick's counts too)
  bool drawn_once = false;
};
Followed g_followed;
cli::view::FrameBatchWriter g_live_frame;
std::string g_live_text;

const replay::BroadcastManifest& manifest_or_throw() {
  if (!g_followed.manifest) throw cli::CommandError{"no broadcast's manifest has arrived", cli::k_exit_network};
  return *g_followed.manifest;
}
cli::detail::LiveEngine& engine_or_throw() {
  if (!g_followed.engine) throw cli::CommandError{"the broadcast is not open", cli::k_exit_network};
  return *g_followed.engine;
}
std::span<const std::byte> bytes_at(const std::byte* data, std::size_t size) { return {data, size}; }

/// Throws when segment `number` is listed with another size than `size`.
void check_listed_size(std::uint64_t number, std::size_t size) {
  const replay::BroadcastManifest& m = manifest_or_throw();
  const std::uint64_t listed = number == 0 ? m.opening_bytes : m.listed(number) ? m.listed(number)->bytes : size;
  if (size != listed) {
    throw cli::CommandError{"segment " + std::to_string(number) + " is " + std::to_string(size) + " bytes, not the " +
                               std::to_string(listed) + " the manifest gives",
                           cli::k_exit_network};
  }
}

/// A segment number from JavaScript: a whole number the manifest's numbers can be.
std::uint64_t segment_number(double number) {
  if (!(number >= 0 && number <= static_cast<double>(replay::k_max_segment_number)) || std::floor(number) != number) {
    throw cli::CommandError{"a segment number must be a whole number from 0 to " +
                                std::to_string(replay::k_max_segment_number),
                            cli::k_exit_usage};
  }
  return static_cast<std::uint64_t>(number);
}

/// spectate's --behind in ticks at `tick_rate_hz` (0 to k_max_behind_s seconds; anything else is 0).
std::uint64_t behind_ticks(double behind_s, std::uint32_t tick_rate_hz) {
  const double seconds = behind_s >= 0 && behind_s <= cli::detail::k_max_behind_s ? behind_s : 0.0;
  return static_cast<std::uint64_t>(seconds * tick_rate_hz);
}

/// The page's clock (performance.now(), milliseconds) in seconds: finite, from 0 to 10^12 s.
double page_seconds(double now_ms) {
  if (!(now_ms >= 0 && now_ms <= 1e15)) throw cli::CommandError{"the page's clock must be from 0 to 10^15 ms", cli::k_exit_usage};
  return now_ms / 1000;
}

void throw_if_failed(const Status& status, const std::string& what) {
  if (!status) throw cli::CommandError{what + status.error().message, cli::k_exit_network};
}

/// What lockstep_web_live_play found.
enum LivePlayed : int { k_nothing_new = 0, k_new_frame = 1, k_ended = 2, k_desync = 3, k_failed = 4 };

LivePlayed report_desync(std::uint64_t tick, std::uint64_t expected, std::uint64_t actual) {
  std::printf("desync at tick %llu: expected %s got %s\n", static_cast<unsigned long long>(tick),
              hash_hex(expected).c_str(), hash_hex(actual).c_str());
  return k_desync;
}

LivePlayed play_at(double now_ms) {
  cli::detail::LiveEngine& engine = engine_or_throw();
  const replay::BroadcastManifest& m = manifest_or_throw();
  const std::optional<replay::TickHash> end = engine.end();
  const std::uint64_t target = g_followed.pace->target(page_seconds(now_ms), m.live_tick(), engine.last_tick(), end.has_value());
  if (target > engine.tick()) {
    Result<std::optional<replay::Desync>> played = engine.play_to(target);
    if (!played) throw cli::CommandError{played.error().message, cli::k_exit_failed};
    if (const std::optional<replay::Desync>& d = played.value()) return report_desync(d->tick, d->expected, d->actual);
  }
  if (!g_followed.drawn_once || engine.tick() != g_followed.shown) {
    engine.frame(g_live_frame);
    g_followed.shown = engine.tick();
    g_followed.drawn_once = true;
    return k_new_frame;  // the last tick's frame too, before the end is told
  }
  if (end && m.finished_before(g_followed.next) && engine.tick() == engine.last_tick()) {
    // The end record's hash, whether or not it came with the ticks before it.
    if (end->hash != engine.hash()) return report_desync(engine.tick(), end->hash, engine.hash());
    std::printf("tick %llu hash %s\n", static_cast<unsigned long long>(engine.tick()), hash_hex(engine.hash()).c_str());
    return k_ended;
  }
  return k_nothing_new;
}

}  // namespace

extern "C" {

/// Takes the broadcast's manifest (fetched again every poll): 0; 3 when it is malformed (try
/// again at the next poll); 2 when it names another broadcast (a new id: the host started again).
EMSCRIPTEN_KEEPALIVE int lockstep_web_live_manifest(const std::byte* data, std::size_t size) {
  return cli::run_guarded([&] {
    g_followed.fetched.bytes += size;
    Result<replay::BroadcastManifest> manifest = replay::parse_manifest(bytes_at(data, size));
    if (!manifest) throw cli::CommandError{"manifest.json: " + manifest.error().message, cli::k_exit_network};
    if (g_followed.manifest && manifest->id != g_followed.manifest->id) {
      throw cli::CommandError{"the broadcast was restarted (its id is now " + manifest->id + ", not " +
                                  g_followed.manifest->id + "): follow it again",
                              cli::k_exit_usage};
    }
    g_followed.manifest = std::move(manifest).value();
    return 0;
  });
}

/// Forgets the broadcast followed (a page follows another).
EMSCRIPTEN_KEEPALIVE void lockstep_web_live_close() { g_followed = Followed{}; }

/// The segment to start from: the latest keyframe segment at least `behind_s` behind live, or 0
/// (the opening alone) with `from_start` or when none is listed.
EMSCRIPTEN_KEEPALIVE double lockstep_web_live_start_segment(int from_start, double behind_s) {
  if (!g_followed.manifest || from_start != 0) return 0;
  const replay::BroadcastManifest& m = *g_followed.manifest;
  const std::uint64_t behind = behind_ticks(behind_s, m.tick_rate_hz);
  const std::uint64_t live = m.live_tick();
  const std::optional<replay::BroadcastSegment> keyframe = m.keyframe_at_or_before(live > behind ? live - behind : 0);
  return keyframe ? static_cast<double>(keyframe->number) : 0;
}

/// Segment `number`'s file name and the most bytes to read of it ({"name":…,"bytes":…}).
EMSCRIPTEN_KEEPALIVE const char* lockstep_web_live_segment(double number) {
  g_live_text.clear();
  cli::run_guarded([&] {
    const replay::BroadcastManifest& m = manifest_or_throw();
    const std::uint64_t n = segment_number(number);
    const std::uint64_t bound = n == 0 ? m.opening_bytes : m.listed(n) ? m.listed(n)->bytes : replay::k_max_segment_bytes;
    g_live_text = "{\"name\":" + cli::view::json_string(m.segment_name(n)) + ",\"bytes\":" + std::to_string(bound) + "}";
    return 0;
  });
  return g_live_text.c_str();
}

/// Whether keyframe segment `keyframe_number` arrived whole, to start at after `opening`: its
/// listed size, its chunks, and a keyframe that reads (0); or 3 with why (fetch it again).
/// Changes nothing.
EMSCRIPTEN_KEEPALIVE int lockstep_web_live_start_whole(const std::byte* opening, std::size_t opening_size,
                                                      const std::byte* keyframe, std::size_t keyframe_size,
                                                      double keyframe_number) {
  return cli::run_guarded([&] {
    check_listed_size(segment_number(keyframe_number), keyframe_size);
    Result<replay::ReplayStream> stream =
        replay::ReplayStream::open_at_keyframe(bytes_at(opening, opening_size), bytes_at(keyframe, keyframe_size));
    if (!stream) throw cli::CommandError{stream.error().message, cli::k_exit_network};
    return 0;
  });
}

/// Opens the broadcast from its opening and, when `keyframe_number` is not 0, that keyframe
/// segment (`again`: fetched a second time): 0, 2 (another simulation or build) or 3 (cannot be
/// followed). `behind_s` as spectate's --behind; `now_ms` the page's clock.
EMSCRIPTEN_KEEPALIVE int lockstep_web_live_open(const std::byte* opening, std::size_t opening_size,
                                               const std::byte* keyframe, std::size_t keyframe_size,
                                               double keyframe_number, int again, double behind_s, double now_ms) {
  return cli::run_guarded([&] {
    const replay::BroadcastManifest& m = manifest_or_throw();
    const double now_s = page_seconds(now_ms);
    check_listed_size(0, opening_size);
    const std::uint64_t number = segment_number(keyframe_number);
    if (number != 0) check_listed_size(number, keyframe_size);
    Result<replay::ReplayStream> stream =
        number == 0 ? replay::ReplayStream::open(bytes_at(opening, opening_size))
                    : replay::ReplayStream::open_at_keyframe(bytes_at(opening, opening_size), bytes_at(keyframe, keyframe_size));
    if (!stream) throw cli::CommandError{"the broadcast's start: " + stream.error().message, cli::k_exit_network};
    g_followed.engine = cli::detail::open_live_engine<Known>(std::move(stream).value());
    g_followed.next = number + 1;
    g_followed.fetched.segments = number != 0 ? 1 : 0;
    g_followed.fetched.refetched = number != 0 && again != 0 ? 1 : 0;
    g_followed.fetched.bytes += opening_size + keyframe_size;
    g_followed.pace.emplace(m.tick_rate_hz, behind_ticks(behind_s, m.tick_rate_hz), g_followed.engine->tick(),
                            m.live_tick(), now_s);
    return 0;
  });
}

/// The live page's hello for the broadcast at `url` ("" when none is open).
EMSCRIPTEN_KEEPALIVE const char* lockstep_web_live_hello(const char* url) {
  g_live_text = g_followed.engine && g_followed.manifest
                    ? g_followed.engine->hello_json(url, g_followed.manifest->tick_rate_hz)
                    : std::string{};
  return g_live_text.c_str();
}

/// The next segment to fetch when the manifest lists it; 0 when it is not out yet (poll the
/// manifest), -1 when every segment has come.
EMSCRIPTEN_KEEPALIVE double lockstep_web_live_next() {
  if (!g_followed.manifest || !g_followed.engine) return 0;
  const replay::BroadcastManifest& m = *g_followed.manifest;
  if (m.finished_before(g_followed.next)) return -1;
  const bool out = !m.segments.empty() && g_followed.next <= m.segments.back().number;
  return out ? static_cast<double>(g_followed.next) : 0;
}

/// Whether the next segment arrived whole (its listed size, its chunks' framing and checksums):
/// 0, or 3 with why (fetch it again, past any cache). Changes nothing.
EMSCRIPTEN_KEEPALIVE int lockstep_web_live_check(const std::byte* data, std::size_t size) {
  return cli::run_guarded([&] {
    check_listed_size(g_followed.next, size);
    throw_if_failed(engine_or_throw().check(bytes_at(data, size)), "");
    return 0;
  });
}

/// Appends the next segment (checked with lockstep_web_live_check first): 0, or 3 when it breaks
/// the format. `again` counts a segment that was fetched a second time.
EMSCRIPTEN_KEEPALIVE int lockstep_web_live_append(const std::byte* data, std::size_t size, int again) {
  return cli::run_guarded([&] {
    throw_if_failed(engine_or_throw().append(bytes_at(data, size)), "the broadcast is malformed: ");
    ++g_followed.next;
    ++g_followed.fetched.segments;
    g_followed.fetched.refetched += again != 0 ? 1 : 0;
    g_followed.fetched.bytes += size;
    return 0;
  });
}

/// Plays to where the pace says at `now_ms` (LivePlayed): a new tick's frame is
/// lockstep_web_live_frame_data; the end prints `tick N hash H` and a desync `desync at tick …`
/// on stdout, as spectate does; a failure says why on stderr.
EMSCRIPTEN_KEEPALIVE int lockstep_web_live_play(double now_ms) {
  LivePlayed played = k_failed;
  const int code = cli::run_guarded([&] {
    played = play_at(now_ms);
    return 0;
  });
  std::fflush(stdout);
  return code != 0 ? k_failed : played;
}
EMSCRIPTEN_KEEPALIVE const std::byte* lockstep_web_live_frame_data() { return g_live_frame.bytes().data(); }
EMSCRIPTEN_KEEPALIVE std::size_t lockstep_web_live_frame_size() { return g_live_frame.bytes().size(); }

/// The live page's status: the tick and hash shown, the stalls, `phase` ("running", "ended",
/// "desync", "failed") and `message` — when empty, the line spectate prints once a second.
EMSCRIPTEN_KEEPALIVE const char* lockstep_web_live_status(const char* phase, const char* message) {
  cli::detail::LiveState state;
  std::string text = message;
  if (g_followed.engine && g_followed.manifest) {
    state.tick = g_followed.engine->tick();
    state.hash = g_followed.engine->hash();
    state.stalls = g_followed.pace ? g_followed.pace->stalls() : 0;
    if (text.empty()) {
      text = cli::detail::broadcast_progress_line(state.tick, g_followed.manifest->live_tick(),
                                                  g_followed.manifest->tick_rate_hz, g_followed.fetched, state.stalls);
    }
  }
  g_live_text = cli::detail::live_status_json(state, 0, 0, phase, text);
  return g_live_text.c_str();
}

/// Counts the bytes of a fetch that was not a segment appended (a damaged copy).
EMSCRIPTEN_KEEPALIVE void lockstep_web_live_fetched(double bytes) {
  if (bytes >= 0 && bytes <= static_cast<double>(replay::k_max_segment_bytes)) {
    g_followed.fetched.bytes += static_cast<std::uint64_t>(bytes);
  }
}

}  // extern "C"
