#include "lockstep/cli/detail/text.hpp"

#include <array>
#include <cstdio>
#include <cstring>

#include "lockstep/cli/command.hpp"
#include "lockstep/replay/regular_file.hpp"

namespace lockstep::cli::detail {

std::string with_commas(std::uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string one_decimal(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

replay::ReplayFile read_or_throw(const std::string& path) {
  Result<replay::ReplayFile> file = replay::read_replay_file(path);
  if (!file) throw CommandError{file.error().message};
  return std::move(file).value();
}

void note_truncation(const std::string& path, const replay::ReplayFile& file) {
  if (file.truncated) {
    std::fprintf(stderr, "note: '%s' is truncated at tick %llu, byte %llu (the recording did not finish); "
                 "its %llu complete ticks are played\n",
                 path.c_str(), static_cast<unsigned long long>(file.last_tick),
                 static_cast<unsigned long long>(file.truncated_at_byte),
                 static_cast<unsigned long long>(file.tick_count()));
  } else if (!file.end) {
    std::fprintf(stderr, "note: '%s' has no end record (the recording did not finish); "
                 "its %llu complete ticks are played\n",
                 path.c_str(), static_cast<unsigned long long>(file.tick_count()));
  }
}

void note_distrusted_keyframes(const replay::PlayOutcome& outcome, std::uint64_t from) {
  if (outcome.keyframes_distrusted == 0) return;
  std::fprintf(stderr, "note: %u keyframe(s) at or before tick %llu do not match a recorded hash of their tick "
               "and were not used; played from tick %llu\n",
               outcome.keyframes_distrusted, static_cast<unsigned long long>(from),
               static_cast<unsigned long long>(outcome.restored_tick));
}

void print_desync(const replay::Desync& d, const std::optional<replay::PhaseDivergence>& phase) {
  std::printf("desync at tick %llu: expected %s got %s%s\n", static_cast<unsigned long long>(d.tick),
              hash_hex(d.expected).c_str(), hash_hex(d.actual).c_str(),
              phase ? ("; the runs first part at " + replay::describe(*phase)).c_str() : "");
}

void print_replay_info(const std::string& path, const replay::ReplayFile& file, const std::string& compatibility,
                       const std::string& config_lines) {
  const replay::ReplayHeader& h = file.header;
  const replay::SizeBreakdown& s = file.sizes;
  std::printf("file        %s, %s bytes, %s\n", path.c_str(), with_commas(s.total()).c_str(),
              file.truncated ? ("truncated at byte " + with_commas(file.truncated_at_byte)).c_str()
                             : (file.end ? "complete" : "no end record"));
  std::printf("format      version %u, written by lockstep %s\n", replay::k_format_version,
              replay::printable(h.engine_version).c_str());
  std::printf("build       %s\n", replay::printable(h.build).c_str());
  std::printf("simulation  %s, compatibility id %s (%s)\n", replay::printable(h.simulation).c_str(),
              hash_hex(h.compatibility_id).c_str(), compatibility.c_str());
  std::printf("seed        %llu\n", static_cast<unsigned long long>(h.seed));
  std::printf("players     %u, %u-byte input (%s)\n", h.players, h.input_bytes,
              replay::printable(h.input_layout).c_str());
  std::fputs(config_lines.c_str(), stdout);
  std::printf("ticks       %llu to %llu (%s ticks)%s\n", static_cast<unsigned long long>(h.start_tick),
              static_cast<unsigned long long>(file.last_tick), with_commas(file.tick_count()).c_str(),
              h.start_tick > 0 ? ", starting from a snapshot" : "");
  std::printf("hashes      %s (%zu recorded)\n",
              h.hash_every == 0 ? "final only"
              : h.hash_every == 1 ? "every tick"
                                  : ("every " + std::to_string(h.hash_every) + " ticks").c_str(),
              file.hashes.size());
  std::string keyframe_ticks;
  for (std::size_t i = 0; i < file.keyframes.size() && i < 8; ++i) keyframe_ticks += " " + std::to_string(file.keyframes[i].tick);
  if (file.keyframes.size() > 8) keyframe_ticks += " …";
  std::printf("keyframes   %s, %zu in the file%s%s\n",
              h.keyframe_every == 0 ? "none" : ("every " + std::to_string(h.keyframe_every) + " ticks").c_str(),
              file.keyframes.size(), keyframe_ticks.empty() ? "" : ":", keyframe_ticks.c_str());
  if (!file.phase_hashes.empty()) {
    std::string names;
    for (const std::string& name : file.phase_names) names += (names.empty() ? "" : ", ") + replay::printable(name);
    std::printf("phases      hashes inside the step of %s ticks, %s checkpoints (%s)\n",
                with_commas(file.phase_ticks().size()).c_str(), with_commas(file.phase_hashes.size()).c_str(), names.c_str());
  }
  if (file.end) {
    std::printf("end         tick %llu hash %s\n", static_cast<unsigned long long>(file.end->tick), hash_hex(file.end->hash).c_str());
  }
  std::printf("size        header %s, inputs %s, hashes %s, keyframes %s, end %s%s%s bytes\n",
              with_commas(s.header).c_str(), with_commas(s.inputs).c_str(), with_commas(s.hashes).c_str(),
              with_commas(s.keyframes).c_str(), with_commas(s.end).c_str(),
              s.phase_hashes > 0 ? (", phase hashes " + with_commas(s.phase_hashes)).c_str() : "",
              file.truncated ? (", incomplete chunk " + with_commas(s.truncated)).c_str() : "");
  const double player_ticks = static_cast<double>(file.tick_count()) * h.players;
  if (player_ticks > 0) {
    std::printf("per player per tick  %.3f bytes of inputs, %.3f bytes in all\n",
                static_cast<double>(s.inputs) / player_ticks, static_cast<double>(s.total()) / player_ticks);
  }
}

void print_fields(const replay::DiffResult& result, std::size_t max_fields,
                  std::string (*describe)(std::string_view path)) {
  if (result.report_tick != result.divergence_tick) {
    std::printf("fields that differ at tick %llu, the first recorded state after it:\n",
                static_cast<unsigned long long>(result.report_tick));
  } else {
    std::printf("fields that differ at tick %llu:\n", static_cast<unsigned long long>(result.report_tick));
  }
  const std::size_t shown = std::min(max_fields, result.fields.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const replay::FieldDifference& f = result.fields[i];
    const std::string what = describe(f.path);
    std::printf("  %s%s: %s vs %s\n", f.path.c_str(), what.empty() ? "" : (" (" + what + ")").c_str(),
                f.a.c_str(), f.b.c_str());
  }
  if (result.fields.size() > shown) std::printf("  … and %zu more fields differ\n", result.fields.size() - shown);
  if (result.fields.empty() && result.note.empty()) std::printf("  (none: the states differ only in what is not serialised)\n");
  if (!result.note.empty()) std::printf("  %s\n", result.note.c_str());
}

bool is_snapshot(const std::string& path) {
  Result<replay::RegularFile> file = replay::RegularFile::open(path, replay::k_max_file_bytes);
  std::array<std::byte, 4> magic{};
  if (!file || file->size() < magic.size() || !file->read_at(0, magic).ok()) return false;
  return std::memcmp(magic.data(), "LSNP", 4) == 0;
}

TickRange tick_range(std::uint64_t start, std::uint64_t last, const CLI::Option* from_option, std::uint64_t from,
                     const CLI::Option* to_option, std::uint64_t to) {
  const bool from_given = from_option != nullptr && from_option->count() > 0;
  TickRange range{from_given ? from : start, to_option != nullptr && to_option->count() > 0 ? to : last};
  if (range.from < start || range.to > last || range.from > range.to) {
    throw CommandError{"ticks " + std::to_string(range.from) + " to " + std::to_string(range.to) +
                       " are not within the replay's " + std::to_string(start) + " to " + std::to_string(last)};
  }
  return range;
}

}  // namespace lockstep::cli::detail
