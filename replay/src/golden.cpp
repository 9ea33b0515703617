#include "lockstep/replay/golden.hpp"

#include <cstdio>
#include <sstream>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/world.hpp"

namespace lockstep::replay {
namespace {

/// Where (tick, player) sits in a case's tick-major inputs. Ticks (at most k_max_golden_ticks) and
/// players are bounded when parsed, so the index fits a 32-bit size_t too.
std::size_t input_index(std::uint64_t tick, std::uint32_t players, std::uint64_t player) {
  return static_cast<std::size_t>(tick * players + player);
}

bool parse_u64(std::string_view text, std::uint64_t& out, int base = 10) {
  if (text.empty() || text.size() > 20) return false;
  std::uint64_t value = 0;
  for (char c : text) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (digit < 0 || digit >= base) return false;
    const std::uint64_t next = value * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(digit);
    if (next / static_cast<std::uint64_t>(base) != value) return false;  // overflow
    value = next;
  }
  out = value;
  return true;
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

}  // namespace

namespace {

/// A golden file, line by line: each key's line checked as it comes, the whole case at the end.
class GoldenParser {
 public:
  explicit GoldenParser(const std::string& name) : name_(name) { golden_.name = name; }

  /// One line that is not blank or a comment, split into words.
  Status line(const std::vector<std::string_view>& w, std::uint64_t line_number) {
    line_number_ = line_number;
    const std::string_view key = w[0];
    if (key == "scene") return scene(w);
    if (!have_scene_ && key != "seed" && key != "ticks") return bad("the scene must come before '" + std::string(key) + "'");
    if (key == "seed" || key == "ticks" || key == "players" || key == "bodies" || key == "substeps" || key == "threads") {
      return number(w);
    }
    if (key == "integrator") {
      if (w.size() != 2 || !parse_integrator(w[1])) return bad("integrator must be explicit, semi-implicit, verlet or rk4");
      golden_.config.integrator = *parse_integrator(w[1]);
      return {};
    }
    if (key == "inputs") return inputs(w);
    if (key == "hash") return hash(w);
    return bad("unknown key '" + std::string(key) + "'");
  }

  /// The whole case, checked: a scene, a tick count, a valid configuration, every player's
  /// inputs for every tick (unless bots play), and hashes within the ticks.
  Result<GoldenCase> finish() {
    if (!have_scene_) return fail(name_, ": no scene");
    if (golden_.ticks == 0) return fail(name_, ": no tick count");
    Status valid = validate(golden_.config);
    if (!valid) return fail(name_, ": ", valid.error().message);
    if (!golden_.inputs_from_bots) {
      if (Status laid = lay_out_inputs(); !laid) return laid.error();
    }
    for (const TickHash& h : golden_.hashes) {
      if (h.tick > golden_.ticks) return fail(name_, ": a hash for tick ", h.tick, " beyond the last tick");
    }
    return std::move(golden_);
  }

 private:
  [[nodiscard]] Error bad(const std::string& why) const { return fail(name_, " line ", line_number_, ": ", why); }

  Status scene(const std::vector<std::string_view>& w) {
    if (w.size() != 2 || !parse_scene(w[1])) return bad("scene must be arena, ball or spring");
    // A player count given before the scene survives it.
    const std::uint32_t players = golden_.config.players;
    const bool players_set = have_scene_;
    golden_.config = default_world_config(*parse_scene(w[1]));
    if (players_set) golden_.config.players = players;
    have_scene_ = true;
    return {};
  }

  Status number(const std::vector<std::string_view>& w) {
    const std::string_view key = w[0];
    std::uint64_t n = 0;
    if (w.size() != 2 || !parse_u64(w[1], n)) return bad(std::string(key) + " wants one number");
    if (key == "seed") {
      golden_.seed = n;
    } else if (key == "ticks") {
      if (n < 1 || n > k_max_golden_ticks) return bad("ticks must be 1 to 10,000,000");
      golden_.ticks = n;
    } else if (key == "threads") {
      // How fast the world steps, never what it computes: a case on 2 threads holds the hashes of 1.
      if (n < 1 || n > 16) return bad("threads must be 1 to 16");
      golden_.config.threads = static_cast<std::uint32_t>(n);
    } else if (n > k_max_bodies) {
      return bad(std::string(key) + " out of range");
    } else if (key == "players") {
      golden_.config.players = static_cast<std::uint32_t>(n);
    } else if (key == "bodies") {
      golden_.config.arena.bodies = static_cast<std::uint32_t>(n);
    } else {
      golden_.config.substeps = static_cast<std::uint32_t>(n);
    }
    return {};
  }

  Status inputs(const std::vector<std::string_view>& w) {
    if (w.size() == 2 && w[1] == "bots") {
      golden_.inputs_from_bots = true;
      return {};
    }
    std::uint64_t player = 0;
    if (w.size() < 2 || !parse_u64(w[1], player) || player >= k_max_world_players) return bad("inputs wants a player number");
    if (runs_by_player_.size() <= player) runs_by_player_.resize(static_cast<std::size_t>(player) + 1);
    std::vector<ButtonInput>& ticks = runs_by_player_[static_cast<std::size_t>(player)];
    for (std::size_t i = 2; i < w.size(); ++i) {
      const std::size_t x = w[i].find('x');
      std::uint64_t length = 0;
      std::uint64_t buttons = 0;
      if (x == std::string_view::npos || !parse_u64(w[i].substr(0, x), length) ||
          !parse_u64(w[i].substr(x + 1), buttons, 16) || length < 1 || length > k_max_golden_ticks - ticks.size() ||
          (buttons & ~std::uint64_t{ButtonInput::k_defined}) != 0) {
        return bad("bad input run '" + std::string(w[i]) + "' (want <ticks>x<hex buttons>)");
      }
      ticks.insert(ticks.end(), static_cast<std::size_t>(length), ButtonInput{static_cast<std::uint16_t>(buttons)});
    }
    return {};
  }

  Status hash(const std::vector<std::string_view>& w) {
    std::uint64_t tick = 0;
    std::uint64_t value = 0;
    if (w.size() != 3 || !parse_u64(w[1], tick) || w[2].size() != 16 || !parse_u64(w[2], value, 16)) {
      return bad("hash wants a tick and 16 lowercase hex digits");
    }
    if (!golden_.hashes.empty() && tick <= golden_.hashes.back().tick) return bad("hash ticks must ascend");
    golden_.hashes.push_back({tick, value});
    return {};
  }

  /// Every player's runs, expanded, into the case's tick-major inputs.
  Status lay_out_inputs() {
    const std::uint32_t players = golden_.config.players;
    if (runs_by_player_.size() != players) {
      return fail(name_, ": inputs for ", runs_by_player_.size(), " players, the scene has ", players);
    }
    golden_.inputs.resize(input_index(golden_.ticks, players, 0));
    for (std::size_t p = 0; p < runs_by_player_.size(); ++p) {
      if (runs_by_player_[p].size() != golden_.ticks) {
        return fail(name_, ": player ", p, "'s inputs cover ", runs_by_player_[p].size(), " of ", golden_.ticks, " ticks");
      }
      for (std::uint64_t t = 0; t < golden_.ticks; ++t) {
        golden_.inputs[input_index(t, players, p)] = runs_by_player_[p][static_cast<std::size_t>(t)];
      }
    }
    return {};
  }

  const std::string& name_;
  GoldenCase golden_;
  std::vector<std::vector<ButtonInput>> runs_by_player_;  ///< expanded, per player
  bool have_scene_ = false;
  std::uint64_t line_number_ = 0;
};

}  // namespace

Result<GoldenCase> parse_golden(std::string_view text, const std::string& name) {
  GoldenParser parser(name);
  std::uint64_t line_number = 0;
  for (std::size_t pos = 0; pos <= text.size();) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::vector<std::string_view> w = words(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_number;
    if (!w.empty() && w[0][0] != '#') {
      if (Status ok = parser.line(w, line_number); !ok) return ok.error();
    }
    if (end == text.size()) break;
  }
  return parser.finish();
}

std::string format_golden(const GoldenCase& golden) {
  std::ostringstream out;
  char hex[24];
  out << "# lockstep golden case '" << golden.name << "': recorded once from a reviewed run and then held.\n"
      << "# Only `lockstep regress --update` rewrites it; a failing case means the simulation changed.\n";
  out << "scene " << scene_name(golden.config.scene) << '\n';
  out << "players " << golden.config.players << '\n';
  if (golden.config.scene == Scene::arena) out << "bodies " << golden.config.arena.bodies << '\n';
  out << "substeps " << golden.config.substeps << '\n';
  if (golden.config.threads != 1) out << "threads " << golden.config.threads << '\n';
  out << "integrator " << integrator_name(golden.config.integrator) << '\n';
  out << "seed " << golden.seed << '\n' << "ticks " << golden.ticks << '\n';
  const std::uint32_t players = golden.config.players;
  for (std::uint32_t p = 0; p < players; ++p) {
    std::uint64_t t = 0;
    int on_line = 0;
    while (t < golden.ticks) {
      const ButtonInput value = golden.inputs[input_index(t, players, p)];
      std::uint64_t length = 1;
      while (t + length < golden.ticks && golden.inputs[input_index(t + length, players, p)] == value) ++length;
      if (on_line == 0) out << "inputs " << p;
      std::snprintf(hex, sizeof hex, "%04x", value.buttons);
      out << ' ' << length << 'x' << hex;
      if (++on_line == 16) {
        out << '\n';
        on_line = 0;
      }
      t += length;
    }
    if (on_line != 0) out << '\n';
  }
  for (const TickHash& h : golden.hashes) {
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h.hash));
    out << "hash " << h.tick << ' ' << hex << '\n';
  }
  return out.str();
}

Result<GoldenOutcome> run_golden(GoldenCase& golden, bool stop_at_divergence,
                                 const std::function<void(std::uint64_t tick)>& progress) {
  const std::uint32_t players = golden.config.players;
  if (golden.inputs_from_bots) {
    std::vector<Bot> bots;
    for (std::uint32_t p = 0; p < players; ++p) bots.emplace_back(golden.seed, p);
    golden.inputs.resize(input_index(golden.ticks, players, 0));
    for (std::uint64_t t = 0; t < golden.ticks; ++t) {
      for (std::uint32_t p = 0; p < players; ++p) golden.inputs[input_index(t, players, p)] = bots[p].next();
    }
    golden.inputs_from_bots = false;
  }
  Result<Runner<World>> runner = Runner<World>::create(golden.config, golden.seed);
  if (!runner) return fail(golden.name, ": ", runner.error().message);
  GoldenOutcome outcome;
  std::size_t next_hash = 0;
  for (std::uint64_t t = 1; t <= golden.ticks; ++t) {
    if (progress && (t & 255u) == 0) progress(t);
    Result<std::uint64_t> hash =
        runner->step(std::span<const ButtonInput>(golden.inputs.data() + (t - 1) * players, players));
    if (!hash) return fail(golden.name, ": ", hash.error().message);
    if (t % k_golden_hash_every == 0 || t == golden.ticks) outcome.computed.push_back({t, hash.value()});
    while (next_hash < golden.hashes.size() && golden.hashes[next_hash].tick < t) ++next_hash;
    if (next_hash < golden.hashes.size() && golden.hashes[next_hash].tick == t &&
        golden.hashes[next_hash].hash != hash.value() && outcome.pass) {
      outcome.pass = false;
      outcome.divergent_tick = t;
      outcome.expected = golden.hashes[next_hash].hash;
      outcome.actual = hash.value();
      if (stop_at_divergence) return outcome;
    }
  }
  if (golden.hashes.empty()) outcome.pass = false;  // nothing held: never a silent pass
  return outcome;
}

}  // namespace lockstep::replay
