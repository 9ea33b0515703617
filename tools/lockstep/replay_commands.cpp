// `lockstep replay`, `info`, `diff` and `regress`: verifying, describing and comparing replay
// files of the built-in world, and the golden regression cases.

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <cereal/archives/json.hpp>

#include "commands.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/replay/diff.hpp"
#include "lockstep/replay/golden.hpp"
#include "lockstep/replay/player.hpp"
#include "lockstep/replay/regular_file.hpp"
#include "lockstep/replay/replay_file.hpp"
#include "progress.hpp"
#include "strict_numbers.hpp"

namespace lockstep::tools {
namespace {

using replay::PlayOutcome;
using replay::Player;
using replay::ReplayFile;

ReplayFile read_or_throw(const std::string& path) {
  Result<ReplayFile> file = replay::read_replay_file(path);
  if (!file) throw CommandError{file.error().message};
  return std::move(file).value();
}

Player<World> open_or_throw(ReplayFile file, bool force, std::uint64_t max_state_mb) {
  Result<Player<World>> player = Player<World>::open(std::move(file), force, max_state_mb << 20);
  if (!player) throw CommandError{player.error().message};
  return std::move(player).value();
}

void note_truncation(const std::string& path, const ReplayFile& file) {
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

void print_desync(const replay::Desync& d) {
  std::printf("desync at tick %llu: expected %s got %s\n", static_cast<unsigned long long>(d.tick),
              hash_hex(d.expected).c_str(), hash_hex(d.actual).c_str());
}

std::string with_commas(std::uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// --- replay ----------------------------------------------------------------------------------

struct ReplayOptions {
  std::string path;
  std::uint64_t max_state_mb = replay::k_default_max_state_bytes >> 20;
  std::uint64_t from_tick = 0;
  std::uint64_t to_tick = 0;
  bool force = false;
  CLI::Option* from_option = nullptr;
  CLI::Option* to_option = nullptr;
};

void note_distrusted_keyframes(const PlayOutcome& outcome, std::uint64_t from) {
  if (outcome.keyframes_distrusted == 0) return;
  std::fprintf(stderr, "note: %u keyframe(s) at or before tick %llu do not match a recorded hash of their tick "
               "and were not used; played from tick %llu\n",
               outcome.keyframes_distrusted, static_cast<unsigned long long>(from),
               static_cast<unsigned long long>(outcome.restored_tick));
}

void replay_command(const ReplayOptions& options, int* exit_code) {
  ReplayFile file = read_or_throw(options.path);
  note_truncation(options.path, file);
  Player<World> player = open_or_throw(std::move(file), options.force, options.max_state_mb);
  const std::uint64_t from = options.from_option->count() > 0 ? options.from_tick : player.start_tick();
  const std::uint64_t to = options.to_option->count() > 0 ? options.to_tick : player.last_tick();
  if (from < player.start_tick() || to > player.last_tick() || from > to) {
    throw CommandError{"ticks " + std::to_string(from) + " to " + std::to_string(to) +
                       " are not within the replay's " + std::to_string(player.start_tick()) + " to " +
                       std::to_string(player.last_tick())};
  }
  if (from == to && options.from_option->count() > 0) {
    throw CommandError{"--from-tick and --to-tick are both " + std::to_string(from) +
                       ": an empty range, nothing to play"};
  }
  if (std::optional<replay::Desync> start = player.check_start()) {
    print_desync(*start);
    *exit_code = k_exit_failed;
    return;
  }
  Progress progress("replay", to);
  auto report = [&progress](std::uint64_t tick) { progress.update(tick & ~std::uint64_t{255}); };
  Result<PlayOutcome> outcome = player.seek(from, report);
  if (outcome) note_distrusted_keyframes(*outcome, from);
  if (outcome && !outcome->desync) outcome = player.play_to(to, report);
  progress.finish();
  if (!outcome) throw CommandError{outcome.error().message, k_exit_failed};
  if (outcome->desync) {
    print_desync(*outcome->desync);
    *exit_code = k_exit_failed;
    return;
  }
  const auto ticks = static_cast<unsigned long long>(to - from);
  const std::string final_hash = hash_hex(player.runner().hash());
  if (outcome->hashes_checked == 0) {
    std::printf("unverified: %llu ticks played, no recorded hash in range, final hash %s\n", ticks, final_hash.c_str());
    *exit_code = k_exit_unverified;
    return;
  }
  std::printf("ok %llu ticks verified, %llu hashes checked, final hash %s\n", ticks,
              static_cast<unsigned long long>(outcome->hashes_checked), final_hash.c_str());
  *exit_code = k_exit_ok;
}

// --- info ------------------------------------------------------------------------------------

struct InfoOptions {
  std::string path;
  bool fields = false;
};

/// A snapshot's bytes, read within the snapshot bound.
std::vector<std::byte> read_snapshot_bytes(const std::string& path) {
  Result<std::vector<std::byte>> bytes = replay::read_regular_file(path, replay::k_max_snapshot_bytes);
  if (!bytes) throw CommandError{bytes.error().message};
  return std::move(bytes).value();
}

/// Whether `path` is a regular file that starts like a snapshot. Opened the way every reader
/// opens a file (regular files only, never blocking), so a FIFO or a device is left to the replay
/// reader's own refusal.
bool is_snapshot(const std::string& path) {
  Result<replay::RegularFile> file = replay::RegularFile::open(path, replay::k_max_file_bytes);
  std::array<std::byte, 4> magic{};
  if (!file || file->size() < magic.size() || !file->read_at(0, magic).ok()) return false;
  return std::memcmp(magic.data(), "LSNP", 4) == 0;
}

/// A snapshot: as the built-in world (snapshots do not name their simulation), its tick, size,
/// state hash, and with `fields` every value by the names the field report uses.
void info_snapshot(const std::string& path, bool fields) {
  const std::vector<std::byte> bytes = read_snapshot_bytes(path);
  World world;
  std::uint64_t tick = 0;
  if (Status decoded = decode_snapshot<World>(bytes, world, tick); !decoded) {
    throw CommandError{"'" + path + "': " + decoded.error().message + " (as a snapshot of the built-in world)"};
  }
  const Runner<World> runner(world, tick);
  std::printf("snapshot    %s, %s bytes\n", path.c_str(), with_commas(bytes.size()).c_str());
  std::printf("simulation  %s (the built-in world: a snapshot does not name its simulation)\n",
              std::string(World::k_name).c_str());
  std::printf("tick        %llu\n", static_cast<unsigned long long>(tick));
  std::printf("hash        %s\n", hash_hex(runner.hash()).c_str());
  std::printf("players     %u, %u bodies\n", world.players(), world.body_count());
  if (!fields) return;
  for (const replay::Field& f : replay::list_fields(tick, world)) std::printf("%s %s\n", f.path.c_str(), f.value.c_str());
}

void info_replay(const std::string& path, int* exit_code);

/// A desync evidence folder: the desync tick from config.json, the replay up to it, and the
/// participant's own state at it.
void info_evidence(const std::string& folder, bool fields, int* exit_code) {
  const std::string snapshot = folder + "/state.snapshot";
  const std::string replay_path = folder + "/replay.lsr";
  if (!std::filesystem::exists(snapshot) || !std::filesystem::exists(replay_path)) {
    throw CommandError{"'" + folder + "' is not a desync evidence folder (it needs replay.lsr and state.snapshot)"};
  }
  std::ifstream config(folder + "/config.json");
  const std::string json((std::istreambuf_iterator<char>(config)), std::istreambuf_iterator<char>());
  std::smatch desync;
  std::printf("evidence    %s: desync at tick %s\n", folder.c_str(),
              std::regex_search(json, desync, std::regex("\"desync_tick\": ([0-9]+)")) ? desync[1].str().c_str() : "(unknown)");
  info_replay(replay_path, exit_code);
  info_snapshot(snapshot, fields);
}

void info_command(const InfoOptions& options, int* exit_code) {
  if (std::filesystem::is_directory(options.path)) return info_evidence(options.path, options.fields, exit_code);
  if (is_snapshot(options.path)) {
    info_snapshot(options.path, options.fields);
    *exit_code = k_exit_ok;
    return;
  }
  if (options.fields) throw CommandError{"--fields describes a snapshot or an evidence folder, not a replay"};
  info_replay(options.path, exit_code);
}

void info_replay(const std::string& path, int* exit_code) {
  ReplayFile file = read_or_throw(path);
  const replay::ReplayHeader& h = file.header;
  const replay::SizeBreakdown& s = file.sizes;
  std::printf("file        %s, %s bytes, %s\n", path.c_str(), with_commas(s.total()).c_str(),
              file.truncated ? ("truncated at byte " + with_commas(file.truncated_at_byte)).c_str()
                             : (file.end ? "complete" : "no end record"));
  std::printf("format      version %u, written by lockstep %s\n", replay::k_format_version,
              replay::printable(h.engine_version).c_str());
  std::printf("build       %s\n", replay::printable(h.build).c_str());
  std::printf("simulation  %s, compatibility id %s (%s)\n", replay::printable(h.simulation).c_str(),
              hash_hex(h.compatibility_id).c_str(),
              h.simulation != World::k_name ? "not the built-in world"
              : h.compatibility_id == World::compatibility_id() ? "matches this build"
                                                                : "differs from this build's: replays will not verify");
  std::printf("seed        %llu\n", static_cast<unsigned long long>(h.seed));
  std::printf("players     %u, %u-byte input (%s)\n", h.players, h.input_bytes,
              replay::printable(h.input_layout).c_str());
  if (h.simulation == World::k_name) {
    WorldConfig config;
    try {
      CanonicalInputArchive in(h.config);
      in(config);
      std::ostringstream json;
      {
        cereal::JSONOutputArchive out(json, cereal::JSONOutputArchive::Options::NoIndent());
        out(cereal::make_nvp("config", config));
      }
      std::printf("scene       %s, %u Hz, %u substeps, %s integrator\n", std::string(scene_name(config.scene)).c_str(),
                  config.tick_rate_hz, config.substeps, std::string(integrator_name(config.integrator)).c_str());
      std::string line = json.str();
      std::replace(line.begin(), line.end(), '\n', ' ');
      std::printf("config      %s\n", line.c_str());
    } catch (const cereal::Exception& e) {
      std::printf("config      (%llu bytes, malformed: %s)\n", static_cast<unsigned long long>(h.config.size()), e.what());
    }
  }
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
  if (file.end) {
    std::printf("end         tick %llu hash %s\n", static_cast<unsigned long long>(file.end->tick), hash_hex(file.end->hash).c_str());
  }
  std::printf("size        header %s, inputs %s, hashes %s, keyframes %s, end %s%s bytes\n",
              with_commas(s.header).c_str(), with_commas(s.inputs).c_str(), with_commas(s.hashes).c_str(),
              with_commas(s.keyframes).c_str(), with_commas(s.end).c_str(),
              file.truncated ? (", incomplete chunk " + with_commas(s.truncated)).c_str() : "");
  const double player_ticks = static_cast<double>(file.tick_count()) * h.players;
  if (player_ticks > 0) {
    std::printf("per player per tick  %.3f bytes of inputs, %.3f bytes in all\n",
                static_cast<double>(s.inputs) / player_ticks, static_cast<double>(s.total()) / player_ticks);
  }
  *exit_code = k_exit_ok;
}

// --- diff ------------------------------------------------------------------------------------

struct DiffOptions {
  std::vector<std::string> paths;
  bool force = false;
  std::size_t max_fields = 40;
  std::uint64_t max_state_mb = replay::k_default_max_state_bytes >> 20;
};

void print_fields(const replay::DiffResult& result, std::size_t max_fields) {
  if (result.report_tick != result.divergence_tick) {
    std::printf("fields that differ at tick %llu, the first recorded state after it:\n",
                static_cast<unsigned long long>(result.report_tick));
  } else {
    std::printf("fields that differ at tick %llu:\n", static_cast<unsigned long long>(result.report_tick));
  }
  const std::size_t shown = std::min(max_fields, result.fields.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const replay::FieldDifference& f = result.fields[i];
    const std::string what = World::describe_field(f.path);
    std::printf("  %s%s: %s vs %s\n", f.path.c_str(), what.empty() ? "" : (" (" + what + ")").c_str(),
                f.a.c_str(), f.b.c_str());
  }
  if (result.fields.size() > shown) std::printf("  … and %zu more fields differ\n", result.fields.size() - shown);
  if (result.fields.empty() && result.note.empty()) std::printf("  (none: the states differ only in what is not serialised)\n");
  if (!result.note.empty()) std::printf("  %s\n", result.note.c_str());
}

/// A desync evidence bundle's state: the snapshot a participant wrote at the desync tick.
struct BundleState {
  World world;
  std::uint64_t tick = 0;
  std::uint64_t bytes = 0;  ///< the snapshot's size
};

BundleState read_bundle_state(const std::string& folder) {
  const std::string path = folder + "/state.snapshot";
  if (!std::filesystem::exists(path)) {
    throw CommandError{"'" + folder + "' is not a desync evidence folder (no state.snapshot)"};
  }
  Result<std::vector<std::byte>> bytes = replay::read_regular_file(path, replay::k_max_snapshot_bytes);
  if (!bytes) throw CommandError{bytes.error().message};
  BundleState state;
  state.bytes = bytes->size();
  Status decoded = decode_snapshot<World>(bytes.value(), state.world, state.tick);
  if (!decoded) throw CommandError{"'" + path + "': " + decoded.error().message};
  return state;
}

void diff_command(const DiffOptions& options, int* exit_code) {
  namespace fs = std::filesystem;
  Result<replay::DiffResult> result = fail("no replays");
  if (options.paths.size() == 2 && fs::is_directory(options.paths[0]) && fs::is_directory(options.paths[1])) {
    // Two desync evidence bundles: their replays hold the same inputs, so the states each
    // participant actually had at the desync tick are what differ.
    const BundleState a = read_bundle_state(options.paths[0]);
    const BundleState b = read_bundle_state(options.paths[1]);
    replay::DiffResult bundle;
    replay::report_fields(bundle, a.tick, a.world, b.world, std::max(a.bytes, b.bytes), options.max_state_mb << 20);
    bundle.identical = bundle.fields.empty() && bundle.note.empty();
    bundle.through_tick = std::min(a.tick, b.tick);
    bundle.divergence_tick = bundle.report_tick = std::min(a.tick, b.tick);
    result = bundle;
  } else if (options.paths.size() == 2) {
    ReplayFile a = read_or_throw(options.paths[0]);
    ReplayFile b = read_or_throw(options.paths[1]);
    note_truncation(options.paths[0], a);
    note_truncation(options.paths[1], b);
    Player<World> pa = open_or_throw(std::move(a), options.force, options.max_state_mb);
    Player<World> pb = open_or_throw(std::move(b), options.force, options.max_state_mb);
    Progress progress("diff", std::min(pa.last_tick(), pb.last_tick()));
    result = replay::diff_replays(pa, pb, [&progress](std::uint64_t tick) { progress.update(tick); });
  } else {
    ReplayFile a = read_or_throw(options.paths[0]);
    note_truncation(options.paths[0], a);
    Player<World> pa = open_or_throw(std::move(a), options.force, options.max_state_mb);
    Progress progress("diff", pa.last_tick());
    result = replay::diff_against_recording(pa, [&progress](std::uint64_t tick) { progress.update(tick); });
  }
  if (!result) throw CommandError{result.error().message, k_exit_failed};
  if (result->identical) {
    std::printf("identical through tick %llu\n", static_cast<unsigned long long>(result->through_tick));
    *exit_code = k_exit_ok;
    return;
  }
  std::printf("first divergence at tick %llu\n", static_cast<unsigned long long>(result->divergence_tick));
  print_fields(*result, options.max_fields);
  *exit_code = k_exit_failed;
}

// --- regress ---------------------------------------------------------------------------------

/// Relative to where lockstep runs (a checkout's root), never a path of the machine that built it.
constexpr const char* k_default_golden_dir = "tests/golden";

struct RegressOptions {
  std::string dir = k_default_golden_dir;
  bool update = false;
};

void regress_command(const RegressOptions& options, int* exit_code) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(options.dir, error)) {
    if (options.dir == k_default_golden_dir) {
      throw CommandError{"no golden cases in ./tests/golden: run from a lockstep checkout, or name the folder "
                         "(lockstep regress DIR)"};
    }
    throw CommandError{"'" + options.dir + "' is not a directory"};
  }
  std::vector<fs::path> cases;
  for (const fs::directory_entry& entry : fs::directory_iterator(options.dir, error)) {
    if (entry.path().extension() == ".golden") cases.push_back(entry.path());
  }
  std::sort(cases.begin(), cases.end());
  if (cases.empty()) throw CommandError{"no .golden cases in '" + options.dir + "'"};

  int passed = 0;
  int failed = 0;
  int broken = 0;
  for (const fs::path& path : cases) {
    const std::string name = path.stem().string();
    Result<std::vector<std::byte>> bytes = replay::read_regular_file(path.string(), replay::k_max_golden_file_bytes);
    Result<replay::GoldenCase> golden =
        bytes ? replay::parse_golden(std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()), name)
              : Result<replay::GoldenCase>(bytes.error());
    if (!golden) {
      std::fprintf(stderr, "error: %s\n", golden.error().message.c_str());
      ++broken;
      continue;
    }
    Progress progress("regress " + name, golden->ticks);
    Result<replay::GoldenOutcome> outcome =
        replay::run_golden(golden.value(), !options.update, [&progress](std::uint64_t tick) { progress.update(tick); });
    progress.finish();
    if (!outcome) {
      std::fprintf(stderr, "error: %s\n", outcome.error().message.c_str());
      ++broken;
      continue;
    }
    if (options.update) {
      golden->hashes = outcome->computed;
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << replay::format_golden(golden.value());
      if (!out) throw CommandError{"cannot write '" + path.string() + "'"};
      std::printf("updated %s: %llu ticks, %zu hashes, final %s\n", name.c_str(),
                  static_cast<unsigned long long>(golden->ticks), golden->hashes.size(),
                  hash_hex(golden->hashes.back().hash).c_str());
      ++passed;
    } else if (outcome->pass) {
      std::printf("PASS %s: %llu ticks, %zu hashes agree\n", name.c_str(),
                  static_cast<unsigned long long>(golden->ticks), golden->hashes.size());
      ++passed;
    } else if (golden->hashes.empty()) {
      std::printf("FAIL %s: no hashes held (record them with --update)\n", name.c_str());
      ++failed;
    } else {
      std::printf("FAIL %s: first divergent tick %llu: expected %s got %s\n", name.c_str(),
                  static_cast<unsigned long long>(outcome->divergent_tick), hash_hex(outcome->expected).c_str(),
                  hash_hex(outcome->actual).c_str());
      ++failed;
    }
    std::fflush(stdout);
  }
  std::printf("%d %s, %d failed%s\n", passed, options.update ? "updated" : "passed", failed,
              broken > 0 ? (", " + std::to_string(broken) + " unreadable").c_str() : "");
  *exit_code = broken > 0 ? k_exit_usage : failed > 0 ? k_exit_failed : k_exit_ok;
}

void add_max_state_option(CLI::App* cmd, std::uint64_t& max_state_mb) {
  cmd->add_option("--max-state-mb", max_state_mb,
                  "Largest state (snapshot MB) to build from a file; also bounds seek caches and field "
                  "reports (default 256)")
      ->check(whole_number(1, 1u << 20));
}

}  // namespace

void add_replay_commands(CLI::App& app, int* exit_code) {
  auto replay_options = std::make_shared<ReplayOptions>();
  CLI::App* replay_cmd = app.add_subcommand("replay", "Re-simulate a replay and verify every recorded hash");
  replay_cmd->add_option("file", replay_options->path, "The replay file")->required();
  replay_options->from_option = replay_cmd->add_option(
      "--from-tick", replay_options->from_tick, "Start at this tick (restores the nearest keyframe before it)")
      ->check(whole_number());
  replay_options->to_option =
      replay_cmd->add_option("--to-tick", replay_options->to_tick, "Stop at this tick")->check(whole_number());
  add_max_state_option(replay_cmd, replay_options->max_state_mb);
  replay_cmd->add_flag("--force", replay_options->force,
                       "Play even if the replay's simulation compatibility id differs from this build's");
  replay_cmd->callback([replay_options, exit_code] { replay_command(*replay_options, exit_code); });

  auto info_options = std::make_shared<InfoOptions>();
  CLI::App* info_cmd = app.add_subcommand(
      "info", "Describe a replay (header, ticks, keyframes, sizes), a snapshot, or a desync evidence folder");
  info_cmd->add_option("path", info_options->path, "A replay file, a state snapshot, or an evidence folder")->required();
  info_cmd->add_flag("--fields", info_options->fields, "With a snapshot or evidence: every value of the state, by name");
  info_cmd->callback([info_options, exit_code] { info_command(*info_options, exit_code); });

  auto diff_options = std::make_shared<DiffOptions>();
  CLI::App* diff_cmd = app.add_subcommand(
      "diff", "Find the first tick where two replays (or a replay and its re-simulation) differ, field by field");
  diff_cmd->add_option("files", diff_options->paths,
                       "One replay (against its own recording), two replays, or two desync evidence folders")
      ->required()
      ->expected(1, 2);
  diff_cmd->add_flag("--force", diff_options->force, "Compare even across simulation compatibility ids");
  add_max_state_option(diff_cmd, diff_options->max_state_mb);
  diff_cmd->add_option("--max-fields", diff_options->max_fields, "Differing fields to list (default 40)")
      ->check(whole_number(0, 1'000'000));
  diff_cmd->callback([diff_options, exit_code] { diff_command(*diff_options, exit_code); });

  auto regress_options = std::make_shared<RegressOptions>();
  CLI::App* regress_cmd = app.add_subcommand(
      "regress", "Run the golden regression cases headless and compare every held hash");
  regress_cmd->add_option("dir", regress_options->dir, "Folder of .golden cases (default: tests/golden under the current directory)");
  regress_cmd->add_flag("--update", regress_options->update,
                        "Re-run every case and rewrite its hashes (and record bot inputs where asked)");
  regress_cmd->callback([regress_options, exit_code] { regress_command(*regress_options, exit_code); });
}

}  // namespace lockstep::tools
