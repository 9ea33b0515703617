#pragma once
// `export`: re-simulates a replay (checking every recorded hash on the way) and writes, for every
// K-th tick of a range, the tick, the state hash, optionally the inputs, and the state's values by
// the names the field report uses ("state.pos_x[17]"), as JSON lines or CSV.

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/replay_commands.hpp"
#include "lockstep/cli/detail/simulations.hpp"
#include "lockstep/cli/detail/text.hpp"
#include "lockstep/cli/numbers.hpp"
#include "lockstep/cli/progress.hpp"
#include "lockstep/replay/field_report.hpp"
#include "lockstep/replay/player.hpp"

namespace lockstep::cli::detail {

struct ExportOptions {
  std::string path;
  std::string output;
  std::uint64_t from_tick = 0;
  std::uint64_t to_tick = 0;
  std::uint64_t every = 1;
  std::string format = "jsonl";
  bool inputs = false;
  std::vector<std::string> fields;
  bool force = false;
  std::uint64_t max_state_mb = replay::k_default_max_state_bytes >> 20;
  CLI::Option* from_option = nullptr;
  CLI::Option* to_option = nullptr;
};

/// Registers `export` and its options; returns it for its callback.
CLI::App* add_export_options(CLI::App& app, ExportOptions& options);

/// Where the rows go: stdout, or a file (never the replay being read).
class ExportSink {
 public:
  ExportSink(const std::string& output, const std::string& replay_path);
  ~ExportSink();
  ExportSink(const ExportSink&) = delete;
  ExportSink& operator=(const ExportSink&) = delete;
  void write(const std::string& text) { std::fwrite(text.data(), 1, text.size(), file_); }
  /// Flushes and throws if anything failed to be written.
  void finish();

 private:
  std::FILE* file_ = stdout;
  std::string name_;
};

/// The rows of an export, in one format: a header (CSV) from the first row's field names, then
/// one row per exported tick.
class ExportFormat {
 public:
  ExportFormat(bool csv, bool with_inputs, std::vector<std::string> names, std::size_t players)
      : csv_(csv), with_inputs_(with_inputs), names_(std::move(names)), players_(players) {}

  /// The row of one tick. `inputs` holds each player's input as hex, or nothing for the start
  /// tick (no inputs led to it). Throws if the fields' names differ from the first row's (CSV).
  std::string row(std::uint64_t tick, std::uint64_t hash, const std::vector<std::string>& inputs,
                  const std::vector<replay::Field>& fields);

 private:
  /// Keeps the fields named by --fields; checks every name matched something.
  std::vector<const replay::Field*> select(const std::vector<replay::Field>& fields) const;

  bool csv_;
  bool with_inputs_;
  std::vector<std::string> names_;  ///< --fields, empty for all
  bool first_row_done_ = false;
  std::size_t players_;
  std::vector<std::string> columns_;
  bool header_written_ = false;
};

template <Simulation S>
std::vector<std::string> input_hex(const std::vector<typename S::Input>& inputs) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::vector<std::string> out;
  for (const typename S::Input& input : inputs) {
    std::array<std::byte, S::Input::k_bytes> bytes{};
    input.to_bytes(std::span<std::byte, S::Input::k_bytes>(bytes));
    std::string text;
    for (const std::byte b : bytes) {
      text += k_digits[static_cast<unsigned>(b) >> 4];
      text += k_digits[static_cast<unsigned>(b) & 15u];
    }
    out.push_back(std::move(text));
  }
  return out;
}

template <Simulation S>
void export_command(const ExportOptions& options, replay::ReplayFile file, int* exit_code) {
  note_truncation(options.path, file);
  replay::Player<S> player = open_or_throw<S>(std::move(file), options.force, options.max_state_mb);
  const auto [from, to] = tick_range(player.start_tick(), player.last_tick(), options.from_option, options.from_tick,
                                     options.to_option, options.to_tick);
  if (std::optional<replay::Desync> start = player.check_start()) {
    throw CommandError{"desync at tick " + std::to_string(start->tick) + ": the replay's start state does not "
                       "match its recorded hash; nothing exported", k_exit_failed};
  }
  std::optional<ExportSink> sink;  // opened with the first row: a refused --fields truncates nothing
  ExportFormat format(options.format == "csv", options.inputs, options.fields, player.file().header.players);
  Progress progress("export", to);
  auto report = [&progress](std::uint64_t tick) { progress.update(tick & ~std::uint64_t{255}); };
  std::vector<typename S::Input> inputs;
  std::uint64_t rows = 0;
  for (std::uint64_t tick = from; tick <= to; tick += options.every) {
    Result<replay::PlayOutcome> outcome = tick == from ? player.seek(tick, report) : player.play_to(tick, report);
    if (outcome && outcome->desync) {
      progress.finish();
      throw CommandError{"desync at tick " + std::to_string(outcome->desync->tick) + ": expected " +
                         hash_hex(outcome->desync->expected) + " got " + hash_hex(outcome->desync->actual) +
                         "; the rows before it are written", k_exit_failed};
    }
    if (!outcome) throw CommandError{outcome.error().message, k_exit_failed};
    if (tick > player.start_tick()) player.inputs_at(tick, inputs);
    const std::vector<std::string> hex = tick > player.start_tick() ? input_hex<S>(inputs) : std::vector<std::string>{};
    const std::string row = format.row(tick, player.runner().hash(), hex, replay::list_fields(tick, player.runner().simulation()));
    if (!sink) sink.emplace(options.output, options.path);
    sink->write(row);
    ++rows;
    if (to - tick < options.every) break;
  }
  progress.finish();
  sink->finish();
  std::fprintf(stderr, "exported %llu ticks (%llu to %llu, every %llu)%s%s\n", static_cast<unsigned long long>(rows),
               static_cast<unsigned long long>(from), static_cast<unsigned long long>(to),
               static_cast<unsigned long long>(options.every), options.output.empty() ? "" : " to ",
               options.output.c_str());
  *exit_code = k_exit_ok;
}

template <class Sims>
void add_export_command(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ExportOptions>();
  add_export_options(app, *options)->callback([options, exit_code] {
    replay::ReplayFile file = read_or_throw(options->path);
    const std::string simulation = file.header.simulation;
    Sims::with(simulation, [&]<class S>() { export_command<S>(*options, std::move(file), exit_code); });
  });
}

}  // namespace lockstep::cli::detail
