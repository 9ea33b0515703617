// libFuzzer target for everything a replay file reaches: the chunk parser, the header and
// configuration decoder, input decoding, keyframe snapshots (restored and checked) and a short
// playback. And a round trip: a file the reader accepts, written again by ReplayWriter, reads
// back as the same recording (header, start state, every tick's inputs, hashes, keyframes' states,
// end record), and writing that once more gives the same bytes. Built with
// -fsanitize=fuzzer,address,undefined under clang; with any compiler, fuzz_main.cpp replays the
// saved corpus through it as a regression test.

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/engine/byte_io.hpp"
#include "lockstep/engine/canonical_archive.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/replay_file.hpp"
#include "lockstep/replay/replay_writer.hpp"
#include "replay_chunks.hpp"

namespace {

using namespace lockstep;
using namespace lockstep::replay;

/// Recomputes every chunk's header check and checksum, so that mutations reach the payload
/// decoders instead of stopping at the first checksum (which the raw input also exercises).
std::vector<std::byte> resealed(std::span<const std::byte> in) {
  std::vector<std::byte> out(in.begin(), in.end());
  for (const testing::ChunkSpan& span : testing::chunk_spans(out)) testing::reseal(out, span);
  return out;
}

/// A broken property is a crash, which libFuzzer reports and the corpus run fails on.
void check(bool condition) {
  if (!condition) __builtin_trap();
}

/// Files of more ticks, or more input bytes in all, than these are not written again: the writer
/// takes them a tick at a time, and a short run should stay short.
constexpr std::uint64_t k_round_trip_ticks = 1 << 16;
constexpr std::uint64_t k_round_trip_input_bytes = 1 << 22;

/// An in-memory file the writer writes to by path (no litter, no disk, no fsync cost).
class MemoryFile {
 public:
  MemoryFile() : fd_(::memfd_create("lockstep-replay-round-trip", MFD_CLOEXEC)) { check(fd_ >= 0); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  ~MemoryFile() { ::close(fd_); }
  [[nodiscard]] std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }
  [[nodiscard]] std::vector<std::byte> bytes() const {
    struct stat info {};
    check(::fstat(fd_, &info) == 0);
    std::vector<std::byte> out(static_cast<std::size_t>(info.st_size));
    check(::pread(fd_, out.data(), out.size(), 0) == static_cast<ssize_t>(out.size()));
    return out;
  }

 private:
  int fd_;
};

/// The recorded hash of `tick`, if the file's hashes hold one (not the end record's).
std::optional<std::uint64_t> recorded_hash(const ReplayFile& file, std::uint64_t tick) {
  const auto it = std::lower_bound(file.hashes.begin(), file.hashes.end(), tick,
                                   [](const TickHash& h, std::uint64_t t) { return h.tick < t; });
  if (it != file.hashes.end() && it->tick == tick) return it->hash;
  return std::nullopt;
}

/// What the reader refuses and the writer would not write, so a file the reader accepts never
/// holds it: a start tick without a start state (an empty start snapshot chunk), and an end record
/// that contradicts the hash recorded for its own tick (or, with no ticks, the start hash).
void check_consistent(const ReplayFile& file) {
  check(file.header.start_tick == 0 || !file.start_snapshot.empty());
  if (file.end) {
    const std::optional<std::uint64_t> recorded = recorded_hash(file, file.end->tick);
    check(!recorded || *recorded == file.end->hash);
    check(file.tick_count() != 0 || file.end->hash == file.header.start_hash);
  }
}

/// The file written again by ReplayWriter, as bytes; nothing for a file the writer cannot be
/// asked to write: too long to write here, or a keyframe that does not decode (the reader passes
/// it over; there is no state to write).
std::optional<std::vector<std::byte>> written_again(const ReplayFile& file) {
  const ReplayHeader& h = file.header;
  check_consistent(file);
  if (file.tick_count() > k_round_trip_ticks ||
      file.tick_count() * h.players * h.input_bytes > k_round_trip_input_bytes) {
    return std::nullopt;
  }
  std::vector<std::vector<std::byte>> keyframes;
  for (std::size_t k = 0; k < file.keyframes.size(); ++k) {
    Result<std::vector<std::byte>> snapshot = keyframe_snapshot(file, k);
    if (!snapshot) return std::nullopt;
    keyframes.push_back(std::move(snapshot).value());
  }
  static MemoryFile out;
  Result<ReplayWriter> writer = ReplayWriter::create(out.path(), h, file.start_snapshot);
  check(writer.ok());
  std::vector<std::size_t> run(h.players, 0);
  std::vector<std::byte> inputs(static_cast<std::size_t>(h.players) * h.input_bytes);
  std::size_t next_keyframe = 0;
  for (std::uint64_t tick = h.start_tick + 1; tick <= file.last_tick; ++tick) {
    for (std::uint32_t p = 0; p < h.players; ++p) {
      const InputRuns& runs = file.inputs[p];
      while (run[p] + 1 < runs.size() && runs.first_tick(run[p] + 1) <= tick) ++run[p];
      std::ranges::copy(runs.input(run[p]), inputs.begin() + static_cast<std::ptrdiff_t>(p * h.input_bytes));
    }
    std::uint64_t hash = recorded_hash(file, tick).value_or(0);
    if (file.end && file.end->tick == tick) hash = file.end->hash;
    check(writer->add_tick(tick, inputs, hash).ok());
    if (next_keyframe < keyframes.size() && file.keyframes[next_keyframe].tick == tick) {
      check(writer->add_keyframe(tick, keyframes[next_keyframe]).ok());
      ++next_keyframe;
    }
  }
  check(next_keyframe == keyframes.size());
  check((file.end ? writer->finish() : writer->flush()).ok());
  check(!writer->reached_limit());
  return out.bytes();
}

bool same_header(const ReplayHeader& a, const ReplayHeader& b) {
  return a.engine_version == b.engine_version && a.simulation == b.simulation &&
         a.compatibility_id == b.compatibility_id && a.build == b.build && a.seed == b.seed &&
         a.players == b.players && a.input_bytes == b.input_bytes && a.input_layout == b.input_layout &&
         a.hash_every == b.hash_every && a.keyframe_every == b.keyframe_every && a.start_tick == b.start_tick &&
         a.start_hash == b.start_hash && a.config == b.config;
}

/// One player's inputs as (first tick, input) runs, neighbours of the same input merged: where
/// runs are cut (at chunk boundaries) is the writer's choice, not part of the recording.
std::vector<std::pair<std::uint64_t, std::vector<std::byte>>> merged_runs(const InputRuns& runs) {
  std::vector<std::pair<std::uint64_t, std::vector<std::byte>>> out;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const std::span<const std::byte> input = runs.input(r);
    if (!out.empty() && std::ranges::equal(out.back().second, input)) continue;
    out.emplace_back(runs.first_tick(r), std::vector<std::byte>(input.begin(), input.end()));
  }
  return out;
}

/// Whether `again`, the file written back from `file`, holds the same recording. The writer
/// stores a hash for every tick that is a multiple of hash_every, so `again` may hold hashes
/// that `file` lacked; every hash `file` holds must be there, unchanged.
bool same_recording(const ReplayFile& file, const ReplayFile& again) {
  if (!same_header(file.header, again.header) || file.start_snapshot != again.start_snapshot ||
      file.last_tick != again.last_tick || again.truncated || file.inputs.size() != again.inputs.size()) {
    return false;
  }
  if (file.end.has_value() != again.end.has_value() ||
      (file.end && (file.end->tick != again.end->tick || file.end->hash != again.end->hash))) {
    return false;
  }
  for (std::size_t p = 0; p < file.inputs.size(); ++p) {
    if (merged_runs(file.inputs[p]) != merged_runs(again.inputs[p])) return false;
  }
  for (const TickHash& h : file.hashes) {
    if (recorded_hash(again, h.tick) != std::optional<std::uint64_t>(h.hash)) return false;
  }
  // … and the writer's own are those of the multiples of hash_every, all of them.
  const std::uint32_t every = again.header.hash_every;
  const std::uint64_t multiples = every == 0 ? 0 : again.last_tick / every - again.header.start_tick / every;
  if (again.hashes.size() != multiples) return false;
  for (const TickHash& h : again.hashes) {
    if (h.tick % every != 0 || h.tick <= again.header.start_tick || h.tick > again.last_tick) return false;
  }
  if (file.keyframes.size() != again.keyframes.size()) return false;
  for (std::size_t k = 0; k < file.keyframes.size(); ++k) {
    if (file.keyframes[k].tick != again.keyframes[k].tick) return false;
    const Result<std::vector<std::byte>> a = keyframe_snapshot(file, k);
    const Result<std::vector<std::byte>> b = keyframe_snapshot(again, k);
    if (!a || !b || a.value() != b.value()) return false;
  }
  return true;
}

void round_trip(const ReplayFile& file) {
  const std::optional<std::vector<std::byte>> bytes = written_again(file);
  if (!bytes) return;
  const Result<ReplayFile> again = parse_replay(*bytes);
  check(again.ok());
  check(same_recording(file, again.value()));
  // Written from what it read, the writer is a function of the recording: once more, the same bytes.
  const std::optional<std::vector<std::byte>> twice = written_again(again.value());
  check(twice.has_value() && *twice == *bytes);
}

void exercise(std::span<const std::byte> bytes) {
  Result<ReplayFile> file = parse_replay(bytes);
  if (!file) return;
  round_trip(file.value());

  // Keep each run short: worlds of a few thousand bodies at most, a few hundred ticks.
  WorldConfig config;
  try {
    CanonicalInputArchive in(file->header.config);
    in(config);
  } catch (const cereal::Exception&) {
    return;
  }
  if (config.arena.bodies > 2000 || config.substeps > 16 ||
      std::uint64_t{config.arena.ropes} * config.arena.rope_links > 2000) {
    return;
  }

  Result<Player<World>> player = Player<World>::open(std::move(file).value(), true);
  if (!player) return;
  (void)player->check_start();
  const std::uint64_t last = std::min(player->last_tick(), player->start_tick() + 200);
  Result<PlayOutcome> played = player->play_to(last);
  if (played && !played->desync && player->last_tick() > player->start_tick()) {
    (void)player->seek(player->start_tick() + (last - player->start_tick()) / 2);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  exercise(bytes);
  exercise(resealed(bytes));
  return 0;
}
