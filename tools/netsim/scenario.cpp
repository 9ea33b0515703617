#include "scenario.hpp"

#include <algorithm>

#include "lockstep/engine/rng.hpp"
#include "scenario_run.hpp"

namespace lockstep::netsim {
namespace {

using detail::k_long_trouble_ms;
using detail::k_short_trouble_ms;

const char* trouble_name(Trouble t) {
  switch (t) {
    case Trouble::none: return "none";
    case Trouble::partition: return "partition";
    case Trouble::outage: return "outage";
    case Trouble::freeze: return "freeze";
    case Trouble::kill: return "kill";
    case Trouble::leave: return "leave";
    case Trouble::rejoin: return "rejoin";
    case Trouble::desync: return "desync";
  }
  return "?";
}

net::NetSimConfig random_faults(Rng& rng) {
  net::NetSimConfig f;
  const std::uint32_t band = rng.below(10);
  if (band >= 4) f.loss = rng.next_unit() * (band <= 6 ? 0.05 : band <= 8 ? 0.20 : 0.50);
  if (rng.below(4) == 0) f.duplicate = rng.next_unit() * 0.2;
  if (rng.below(4) == 0) f.reorder = rng.next_unit() * 0.2;
  f.delay_ms = rng.below(3) == 0 ? rng.below(301) : rng.below(40);
  if (rng.below(3) == 0) f.jitter_ms = rng.below(51);
  f.seed = rng.next_u64();
  return f;
}

}  // namespace

std::string Scenario::describe() const {
  std::string out = std::to_string(players) + " players" + (relay ? " (relay host)" : "") + ", " +
                    std::to_string(spectators) + " spectators, delay " + std::to_string(input_delay) +
                    (adaptive_delay ? " (adaptive)" : "") +
                    (prediction_window != 0 ? ", rollback " + std::to_string(prediction_window) : std::string()) + ", " +
                    std::to_string(ticks) + " ticks at " + std::to_string(tick_rate_hz) + " Hz, trouble " + trouble_name(trouble);
  if (trouble != Trouble::none) {
    out += " of participant " + std::to_string(victim) + " at " + std::to_string(trouble_at_ms) + " ms";
    if (trouble == Trouble::partition || trouble == Trouble::outage || trouble == Trouble::freeze) {
      out += " for " + std::to_string(trouble_ms) + " ms";
    }
    if (trouble == Trouble::rejoin) out += ", back " + std::to_string(trouble_ms) + " ms later";
    if (trouble == Trouble::desync) out += " (tick " + std::to_string(perturb_tick) + (resync ? ", resync)" : ", stop)");
  }
  if (start_with != 0) out += ", starts with " + std::to_string(start_with);
  if (join_within_ms != 500) {  // piece by piece, as below
    out += ", joining within ";
    out += std::to_string(join_within_ms);
    out += " ms";
  }
  if (input_tolerance == 0) out += ", input tolerance off";
  if (slow_player) {  // appended piece by piece: g++ 12 for i686 reads a chain of + as overlapping
    out += ", slow player ";
    out += std::to_string(*slow_player);
    out += " (+";
    out += std::to_string(faults[*slow_player].in_delay_ms);
    out += " ms each way)";
  }
  double worst_loss = 0;
  std::uint32_t worst_delay = 0;
  for (const net::NetSimConfig& f : faults) {
    worst_loss = std::max(worst_loss, f.loss);
    worst_delay = std::max(worst_delay, f.delay_ms + f.jitter_ms);
  }
  return out + ", worst loss " + std::to_string(static_cast<int>(worst_loss * 100)) + "%, worst delay " +
         std::to_string(worst_delay) + " ms";
}

std::uint64_t Scenario::expected_tick_us() const {
  // The worst round trip between the host and anyone, with reordering's extra hold and two frames.
  std::uint32_t host_out = 0;
  std::uint32_t peer_out = 0;
  std::uint32_t frame = 0;
  for (std::size_t i = 0; i < faults.size(); ++i) {
    const std::uint32_t out = faults[i].delay_ms + faults[i].in_delay_ms + 3 * faults[i].jitter_ms + 5;
    (i == 0 ? host_out : peer_out) = std::max(i == 0 ? host_out : peer_out, out);
    frame = std::max(frame, frame_us[i]);
  }
  const std::uint64_t period_us = 1'000'000 / tick_rate_hz;
  const std::uint64_t round_trip_us = (host_out + peer_out) * 1000ull + 2ull * frame + 2 * period_us;
  return std::max(period_us, round_trip_us / std::max<std::uint32_t>(1, input_delay));
}

std::uint64_t scenario_seed(std::uint64_t seed, std::uint64_t index) {
  // splitmix64 of the pair: scenarios of one run are independent, and each has its own seed.
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Scenario generate(std::uint64_t seed) {
  Rng rng(seed);
  Scenario s;
  s.seed = seed;
  s.players = 1 + rng.below(8);
  s.relay = rng.below(5) == 0;
  s.spectators = rng.below(5);
  s.input_delay = rng.below(9);
  constexpr std::array<std::uint32_t, 5> rates = {20, 30, 60, 60, 60};
  s.tick_rate_hz = rates[rng.below(5)];
  s.ticks = s.tick_rate_hz + rng.below(4 * s.tick_rate_hz + 1);  // 1 to 5 seconds
  for (std::uint32_t i = 0; i < s.participants(); ++i) {
    s.faults.push_back(random_faults(rng));
    s.frame_us.push_back(2'000 + rng.below(18'001));
  }
  // A session runs at most D ticks per round trip: keep each to about ten seconds.
  const std::uint64_t most = std::max<std::uint64_t>(30, 10'000'000 / s.expected_tick_us());
  s.ticks = std::min(s.ticks, most);
  constexpr std::array<Trouble, 10> troubles = {Trouble::none,  Trouble::none,      Trouble::none,  Trouble::none,
                                                Trouble::partition, Trouble::outage, Trouble::freeze, Trouble::kill,
                                                Trouble::leave, Trouble::freeze};
  s.trouble = troubles[rng.below(10)];
  s.victim = rng.below(s.participants());
  s.trouble_at_ms = rng.below(static_cast<std::uint32_t>(s.ticks * s.expected_tick_us() / 1000));
  s.trouble_ms = rng.below(2) == 0 ? 100 + rng.below(k_short_trouble_ms - 100) : k_long_trouble_ms + rng.below(2000);
  s.adaptive_delay = rng.below(3) == 0;
  // A quarter of the sessions start before every slot is filled: the others join under way.
  if (s.players > 1 && rng.below(4) == 0) s.start_with = 1 + rng.below(s.players - 1);
  s.resync = rng.below(2) == 0;
  // Rejoins and desyncs need an early player peer (not the host, not a late joiner) to befall;
  // a rejoin on a relay host of one player would end the session (no player left) first.
  const std::uint32_t early_peers = s.start_with == 0 ? s.peers() : s.start_with - (s.relay ? 0 : 1);
  if (rng.below(6) == 0 && early_peers > 0 && !(s.relay && s.players == 1)) {
    s.trouble = rng.below(2) == 0 ? Trouble::rejoin : Trouble::desync;
    s.victim = 1 + rng.below(early_peers);
    s.trouble_ms = rng.below(2) == 0 ? 100 + rng.below(1000) : k_timeout_ms + rng.below(2000);
    s.perturb_tick = s.input_delay + 2 + rng.below(static_cast<std::uint32_t>(std::max<std::uint64_t>(1, s.ticks - s.input_delay - 2)));
    if (s.trouble == Trouble::rejoin) {  // the successor runs where its predecessor ran
      s.frame_us.push_back(s.frame_us[s.victim]);
      s.faults.push_back(s.faults[s.victim]);
    }
  }
  // Drawn last, so that every draw before keeps the value it had before prediction existed.
  constexpr std::array<std::uint32_t, 4> windows = {0, 2, 8, 12};
  s.prediction_window = windows[rng.below(4)];
  // And after it the input tolerance (off in a quarter), and in a sixth of the sessions without
  // trouble one player peer far behind the rest: 150 to 400 ms more each way.
  s.input_tolerance = rng.below(4) == 0 ? 0 : net::k_default_input_tolerance;
  if (rng.below(6) == 0 && s.trouble == Trouble::none && s.peers() > 0 && !s.late_player(1)) {
    const std::uint32_t slow = 1;  // early peers come first
    const std::uint32_t extra = 150 + rng.below(251);
    s.faults[slow].delay_ms += extra;
    s.faults[slow].in_delay_ms = extra;
    s.slow_player = slow;
    s.ticks = std::min(s.ticks, std::max<std::uint64_t>(30, 10'000'000 / s.expected_tick_us()));
  }
  // Last of all, in one session of 40 without trouble, a crowd: 9 to k_max_session_players players,
  // every one of them with faults and a frame of its own, a few seconds long.
  if (rng.below(40) == 0 && s.trouble == Trouble::none && !s.slow_player) {
    s.players = 9 + rng.below(net::k_max_session_players - 8);
    s.start_with = 0;
    s.faults.clear();
    s.frame_us.clear();
    for (std::uint32_t i = 0; i < s.participants(); ++i) {
      s.faults.push_back(random_faults(rng));
      s.frame_us.push_back(2'000 + rng.below(18'001));
    }
    s.ticks = std::min<std::uint64_t>(s.ticks, 3 * s.tick_rate_hz);
    s.join_within_ms = 20 * s.participants();  // 50 a second
  }
  return s;
}

bool Scenario::late_player(std::uint32_t i) const {
  return start_with != 0 && i >= 1 && i <= peers() && i > start_with - (relay ? 0 : 1);
}

namespace {

/// The same faults on everyone of a fixed scenario, and frames of 4 to 16 ms, from its seed.
void add_faults(Scenario& s, double loss, std::uint32_t delay_ms, std::uint32_t jitter_ms) {
  Rng rng(s.seed);
  for (std::uint32_t i = 0; i < s.participants(); ++i) {
    net::NetSimConfig f;
    f.loss = loss;
    f.delay_ms = delay_ms;
    f.jitter_ms = jitter_ms;
    f.seed = rng.next_u64();
    s.faults.push_back(f);
    s.frame_us.push_back(4'000 + rng.below(12'001));
  }
}

}  // namespace

Scenario steady(std::uint64_t seed, double loss) {
  Scenario s;
  s.seed = seed;
  s.players = 4;
  s.input_delay = 5;  // 83 ms: more than the round trip with both ends' frames, so no stall without loss
  s.tick_rate_hz = 60;
  s.ticks = 1200;
  add_faults(s, loss, 20, 5);
  return s;
}

namespace {

/// The shape of the figures' 1,000-body sessions: 60 Hz, input delay 4, 20 ± 5 ms each way.
Scenario arena_session(std::uint64_t seed, std::uint32_t players, std::uint32_t spectators, std::uint64_t ticks,
                       double loss) {
  Scenario s;
  s.seed = seed;
  s.players = players;
  s.spectators = spectators;
  s.input_delay = 4;
  s.tick_rate_hz = 60;
  s.ticks = ticks;
  s.bodies = 1000;
  add_faults(s, loss, 20, 5);
  return s;
}

}  // namespace

Scenario late_spectator(std::uint64_t seed, std::uint64_t ticks, std::uint32_t join_ms, double loss) {
  Scenario s = arena_session(seed, 2, 1, ticks, loss);
  s.spectators_join_ms = join_ms;
  return s;
}

Scenario late_player(std::uint64_t seed, std::uint64_t ticks, std::uint32_t join_ms, double loss) {
  Scenario s = arena_session(seed, 3, 0, ticks, loss);
  s.start_with = 2;
  s.late_players_join_ms = join_ms;
  return s;
}

Scenario resync(std::uint64_t seed, std::uint64_t ticks, std::uint64_t tick, double loss) {
  Scenario s = arena_session(seed, 3, 0, ticks, loss);
  s.resync = true;
  s.trouble = Trouble::desync;
  s.victim = 2;
  s.perturb_tick = tick;
  return s;
}

Scenario host_lost(std::uint64_t seed, std::uint64_t ticks, std::uint32_t at_ms, double loss) {
  Scenario s = arena_session(seed, 4, 0, ticks, loss);
  s.trouble = Trouble::kill;
  s.victim = 0;
  s.trouble_at_ms = at_ms;
  return s;
}

Scenario round_trip(std::uint64_t seed, std::uint32_t round_trip_ms, std::optional<std::uint32_t> delay,
                    std::uint64_t ticks, std::uint32_t jitter_ms, std::uint32_t prediction_window) {
  Scenario s;
  s.seed = seed;
  s.players = 4;
  s.input_delay = delay.value_or(2);
  s.adaptive_delay = !delay;
  s.tick_rate_hz = 60;
  s.ticks = ticks;
  s.prediction_window = prediction_window;
  // Jitter adds 0 to jitter_ms each way: a mean round trip of round_trip_ms.
  add_faults(s, 0.0, (round_trip_ms - jitter_ms) / 2, jitter_ms);
  return s;
}

ScenarioReport run(const Scenario& scenario, const std::string& evidence_dir, std::vector<std::string>* trace) {
  detail::Run run(scenario, evidence_dir, trace);
  return run.go();
}

}  // namespace lockstep::netsim
