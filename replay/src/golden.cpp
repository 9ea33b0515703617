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

Result<GoldenCase> parse_golden(std::string_view text, const std::string& name) {
  GoldenCase golden;
  golden.name = name;
  std::vector<std::vector<ButtonInput>> runs_by_player;  // expanded per player
  bool have_scene = false;
  std::uint64_t line_number = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    const std::vector<std::string_view> w = words(line);
    if (w.empty() || w[0][0] == '#') {
      if (end == text.size()) break;
      continue;
    }
    auto bad = [&](const std::string& why) {
      return fail(name, " line ", line_number, ": ", why);
    };
    std::uint64_t number = 0;
    const std::string_view key = w[0];
    if (key == "scene") {
      if (w.size() != 2 || !parse_scene(w[1])) return bad("scene must be arena, ball or spring");
      const std::uint32_t players = golden.config.players;
      const bool players_set = have_scene;
      golden.config = default_world_config(*parse_scene(w[1]));
      if (players_set) golden.config.players = players;
      have_scene = true;
    } else if (!have_scene && key != "seed" && key != "ticks") {
      return bad("the scene must come before '" + std::string(key) + "'");
    } else if (key == "seed" || key == "ticks" || key == "players" || key == "bodies" || key == "substeps") {
      if (w.size() != 2 || !parse_u64(w[1], number)) return bad(std::string(key) + " wants one number");
      if (key == "seed") golden.seed = number;
      else if (key == "ticks") {
        if (number < 1 || number > k_max_golden_ticks) return bad("ticks must be 1 to 10,000,000");
        golden.ticks = number;
      } else if (number > k_max_bodies) {
        return bad(std::string(key) + " out of range");
      } else if (key == "players") golden.config.players = static_cast<std::uint32_t>(number);
      else if (key == "bodies") golden.config.arena.bodies = static_cast<std::uint32_t>(number);
      else golden.config.substeps = static_cast<std::uint32_t>(number);
    } else if (key == "integrator") {
      if (w.size() != 2 || !parse_integrator(w[1])) return bad("integrator must be explicit, semi-implicit, verlet or rk4");
      golden.config.integrator = *parse_integrator(w[1]);
    } else if (key == "inputs") {
      if (w.size() == 2 && w[1] == "bots") {
        golden.inputs_from_bots = true;
        continue;
      }
      if (w.size() < 2 || !parse_u64(w[1], number) || number >= k_max_world_players) return bad("inputs wants a player number");
      if (runs_by_player.size() <= number) runs_by_player.resize(static_cast<std::size_t>(number) + 1);
      std::vector<ButtonInput>& ticks = runs_by_player[static_cast<std::size_t>(number)];
      for (std::size_t i = 2; i < w.size(); ++i) {
        const std::size_t x = w[i].find('x');
        std::uint64_t length = 0;
        std::uint64_t buttons = 0;
        if (x == std::string_view::npos || !parse_u64(w[i].substr(0, x), length) ||
            !parse_u64(w[i].substr(x + 1), buttons, 16) || length < 1 ||
            length > k_max_golden_ticks - ticks.size() || (buttons & ~std::uint64_t{ButtonInput::k_defined}) != 0) {
          return bad("bad input run '" + std::string(w[i]) + "' (want <ticks>x<hex buttons>)");
        }
        ticks.insert(ticks.end(), static_cast<std::size_t>(length), ButtonInput{static_cast<std::uint16_t>(buttons)});
      }
    } else if (key == "hash") {
      std::uint64_t hash = 0;
      if (w.size() != 3 || !parse_u64(w[1], number) || w[2].size() != 16 || !parse_u64(w[2], hash, 16)) {
        return bad("hash wants a tick and 16 lowercase hex digits");
      }
      if (!golden.hashes.empty() && number <= golden.hashes.back().tick) return bad("hash ticks must ascend");
      golden.hashes.push_back({number, hash});
    } else {
      return bad("unknown key '" + std::string(key) + "'");
    }
    if (end == text.size()) break;
  }
  if (!have_scene) return fail(name, ": no scene");
  if (golden.ticks == 0) return fail(name, ": no tick count");
  Status valid = validate(golden.config);
  if (!valid) return fail(name, ": ", valid.error().message);
  if (!golden.inputs_from_bots) {
    if (runs_by_player.size() != golden.config.players) {
      return fail(name, ": inputs for ", runs_by_player.size(), " players, the scene has ", golden.config.players);
    }
    golden.inputs.resize(input_index(golden.ticks, golden.config.players, 0));
    for (std::size_t p = 0; p < runs_by_player.size(); ++p) {
      if (runs_by_player[p].size() != golden.ticks) {
        return fail(name, ": player ", p, "'s inputs cover ", runs_by_player[p].size(), " of ", golden.ticks, " ticks");
      }
      for (std::uint64_t t = 0; t < golden.ticks; ++t) {
        golden.inputs[input_index(t, golden.config.players, p)] = runs_by_player[p][static_cast<std::size_t>(t)];
      }
    }
  }
  for (const TickHash& h : golden.hashes) {
    if (h.tick > golden.ticks) return fail(name, ": a hash for tick ", h.tick, " beyond the last tick");
  }
  return golden;
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
