#pragma once
// The lines the replay commands print that do not depend on the simulation, compiled once in the
// cli library.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "lockstep/replay/diff.hpp"
#include "lockstep/replay/phase_divergence.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::cli::detail {

/// 1234567 → "1,234,567".
std::string with_commas(std::uint64_t n);
/// 2.345 → "2.3".
std::string one_decimal(double value);

/// Reads a replay file or throws its one-line error as a CommandError.
replay::ReplayFile read_or_throw(const std::string& path);

/// A note on stderr when a replay is truncated or has no end record.
void note_truncation(const std::string& path, const replay::ReplayFile& file);
/// A note on stderr when a seek passed over keyframes that do not match their recorded hash.
void note_distrusted_keyframes(const replay::PlayOutcome& outcome, std::uint64_t from);
/// `desync at tick T: expected H got H`.
/// "desync at tick T: expected X got Y", and when known where inside a step the runs first part
/// ("; the runs first part at tick 812, substep 3, after contacts").
void print_desync(const replay::Desync& desync, const std::optional<replay::PhaseDivergence>& phase = std::nullopt);

/// `info` of a replay: every line about the file, its header, its ticks, hashes, keyframes and
/// sizes. `config_lines` (already formatted, may be empty) goes where the configuration is
/// described; `compatibility` says how the recorded id compares with this build's.
void print_replay_info(const std::string& path, const replay::ReplayFile& file, const std::string& compatibility,
                       const std::string& config_lines);

/// The fields of a diff, at most `max_fields`, each with `describe(path)` when it is not empty.
void print_fields(const replay::DiffResult& result, std::size_t max_fields,
                  std::string (*describe)(std::string_view path));

/// Whether `path` is a regular file that starts like a snapshot (opened the way every reader
/// opens a file: regular files only, never blocking).
bool is_snapshot(const std::string& path);

/// The ticks a replay command covers: `--from-tick`/`--to-tick` when given, else the replay's
/// own; throws for a range outside the replay or backwards.
struct TickRange {
  std::uint64_t from = 0;
  std::uint64_t to = 0;
};
TickRange tick_range(std::uint64_t start, std::uint64_t last, const CLI::Option* from_option, std::uint64_t from,
                     const CLI::Option* to_option, std::uint64_t to);

}  // namespace lockstep::cli::detail
