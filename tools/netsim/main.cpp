// lockstep_netsim: whole networked sessions on virtual time, generated from a seed, each checked
// against the invariants in scenario.hpp. Prints one line per failing scenario with the command
// that runs it alone, and last `N scenarios, F failed, X simulated session-seconds in Y s`.
// Exit 0 only when nothing failed; 2 for bad arguments.

#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "lockstep/engine/bot.hpp"
#include "lockstep/engine/result.hpp"
#include "lockstep/engine/world.hpp"
#include "lockstep/net/wire/wire.hpp"
#include "scenario.hpp"

namespace {

/// Where the scenarios' desync evidence goes: a folder the user named (kept), or a temporary one
/// removed at the end, so that a run leaves nothing in the folder it runs in. A failing scenario
/// is reproduced from its seed, not from its evidence.
class EvidenceDir {
 public:
  static lockstep::Result<EvidenceDir> make(const std::string& named) {
    namespace fs = std::filesystem;
    std::error_code error;
    if (!named.empty()) {
      fs::create_directories(named, error);
      if (error) return lockstep::fail("cannot create the evidence folder '", named, "': ", error.message());
      return EvidenceDir(named, false);
    }
    std::string pattern = (fs::temp_directory_path(error) / "lockstep-netsim-XXXXXX").string();
    if (error || mkdtemp(pattern.data()) == nullptr) return lockstep::fail("cannot create a temporary evidence folder");
    return EvidenceDir(pattern, true);
  }
  EvidenceDir(EvidenceDir&& other) noexcept : path_(std::move(other.path_)), owned_(std::exchange(other.owned_, false)) {}
  EvidenceDir(const EvidenceDir&) = delete;
  EvidenceDir& operator=(const EvidenceDir&) = delete;
  EvidenceDir& operator=(EvidenceDir&&) = delete;
  ~EvidenceDir() {
    std::error_code ignored;
    if (owned_) std::filesystem::remove_all(path_, ignored);
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  EvidenceDir(std::string path, bool owned) : path_(std::move(path)), owned_(owned) {}
  std::string path_;
  bool owned_;
};

int run_many(std::uint64_t count, std::uint64_t seed, bool progress, const std::string& evidence_dir) {
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t failed = 0;
  double simulated = 0.0;
  std::uint64_t stalls = 0;
  std::uint64_t player_ticks = 0;
  std::uint64_t host_lost = 0;
  std::uint64_t migrated = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t one = lockstep::netsim::scenario_seed(seed, i);
    const lockstep::netsim::Scenario scenario = lockstep::netsim::generate(one);
    const lockstep::netsim::ScenarioReport report = lockstep::netsim::run(scenario, evidence_dir);
    simulated += report.simulated_seconds;
    stalls += report.stall_ticks;
    player_ticks += report.player_ticks;
    using lockstep::netsim::Trouble;
    const Trouble t = scenario.trouble;
    // … before the session's last tick was due, with a player besides the host to take over.
    const bool lost = (t == Trouble::kill || t == Trouble::leave ||
                       ((t == Trouble::partition || t == Trouble::outage || t == Trouble::freeze) &&
                        scenario.trouble_ms > lockstep::netsim::k_timeout_ms / 2)) &&
                      scenario.trouble_at_ms < scenario.ticks * 1000 / scenario.tick_rate_hz &&
                      scenario.players - (scenario.relay ? 0 : 1) >= 1;
    host_lost += scenario.victim == 0 && lost ? 1 : 0;
    migrated += report.migrated ? 1 : 0;
    if (!report.ok) {
      ++failed;
      std::printf("FAILED scenario %llu (%s): %s; run it alone: lockstep_netsim --scenario %llu\n",
                  static_cast<unsigned long long>(one), scenario.describe().c_str(), report.failure.c_str(),
                  static_cast<unsigned long long>(one));
      std::fflush(stdout);
    }
    if (progress && (i + 1) % 100 == 0) {
      std::fprintf(stderr, "\r%llu / %llu scenarios", static_cast<unsigned long long>(i + 1),
                   static_cast<unsigned long long>(count));
    }
  }
  if (progress) std::fprintf(stderr, "\r\033[K");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("stall ticks per 10,000 player ticks: %.1f\n",
              player_ticks == 0 ? 0.0 : 10'000.0 * static_cast<double>(stalls) / static_cast<double>(player_ticks));
  std::printf("the host lost for longer than the detection time in %llu scenarios; a player took over in %llu\n",
              static_cast<unsigned long long>(host_lost), static_cast<unsigned long long>(migrated));
  std::printf("%llu scenarios, %llu failed, %.0f simulated session-seconds in %.1f s\n",
              static_cast<unsigned long long>(count), static_cast<unsigned long long>(failed), simulated, seconds);
  return failed == 0 ? 0 : 1;
}

/// Stall ticks per 10,000 player ticks and the host's last delay, over `sessions` sessions.
struct DelayFigure {
  double stalls_per_10k = 0;
  std::uint32_t min_delay = 0;
  std::uint32_t max_delay = 0;
  std::uint64_t failed = 0;
};

DelayFigure delay_figure(std::uint64_t sessions, std::uint32_t round_trip_ms, std::optional<std::uint32_t> delay,
                         const std::string& evidence_dir) {
  DelayFigure f;
  f.min_delay = lockstep::net::k_max_input_delay;
  std::uint64_t stalls = 0;
  std::uint64_t ticks = 0;
  for (std::uint64_t i = 0; i < sessions; ++i) {
    const lockstep::netsim::ScenarioReport r = lockstep::netsim::run(lockstep::netsim::round_trip(i + 1, round_trip_ms, delay, 1200), evidence_dir);
    f.failed += r.ok ? 0 : 1;
    stalls += r.stall_ticks;
    ticks += r.player_ticks;
    f.min_delay = std::min(f.min_delay, r.final_delay);
    f.max_delay = std::max(f.max_delay, r.final_delay);
  }
  f.stalls_per_10k = ticks == 0 ? 0.0 : 10'000.0 * static_cast<double>(stalls) / static_cast<double>(ticks);
  return f;
}

/// The adaptive delay against every fixed one, at round trips of 20, 60 and 150 ms with 20 ms of
/// jitter: the best fixed delay is the smallest with under one stall tick per 10,000.
void adaptive_delay_figures(std::uint64_t sessions, const std::string& evidence_dir) {
  for (const std::uint32_t round_trip_ms : {20u, 60u, 150u}) {
    std::string fixed;
    std::optional<std::uint32_t> best;
    for (std::uint32_t d = 0; d <= 16 && !best; ++d) {
      const DelayFigure f = delay_figure(sessions, round_trip_ms, d, evidence_dir);
      char part[64];
      std::snprintf(part, sizeof part, "%sD=%u %.0f", fixed.empty() ? "" : ", ", d, f.stalls_per_10k);
      fixed += part;
      if (f.stalls_per_10k < 1.0) best = d;
    }
    const DelayFigure a = delay_figure(sessions, round_trip_ms, std::nullopt, evidence_dir);
    std::printf("round trip %u±10 ms, 4 players, 1200 ticks at 60 Hz, %llu sessions: adaptive chose delay %u–%u, "
                "stall ticks per 10,000 %.1f (%llu failed); best fixed delay %s; fixed: %s\n",
                round_trip_ms, static_cast<unsigned long long>(sessions), a.min_delay, a.max_delay, a.stalls_per_10k,
                static_cast<unsigned long long>(a.failed), best ? std::to_string(*best).c_str() : "none ≤ 16",
                fixed.c_str());
  }
}

/// A spectator joining at tick 10,000 of the 1,000-body arena (2 players, 20±5 ms each way), at 0
/// and 20% loss: the state's size, and the time from its hello to holding the state and to having
/// caught up with the session.
void late_join_figures(const std::string& evidence_dir) {
  for (const double loss : {0.0, 0.20}) {
    // The players start about 0.6 s in; tick 10,000 is 166.7 s after.
    const lockstep::netsim::ScenarioReport r =
        lockstep::netsim::run(lockstep::netsim::late_spectator(1, 10'600, 167'300, loss), evidence_dir);
    std::printf("late spectator at tick 10,000 of the 1,000-body arena, loss %.0f%%, 20±5 ms: %s, state %llu bytes, "
                "hello to state %.0f ms, to caught up %.0f ms\n",
                loss * 100, r.ok ? "ok" : r.failure.c_str(), static_cast<unsigned long long>(r.late_state_bytes),
                r.late_state_ms, r.late_caught_up_ms);
    const lockstep::netsim::ScenarioReport p =
        lockstep::netsim::run(lockstep::netsim::late_player(1, 10'600, 167'300, loss), evidence_dir);
    std::printf("late player at tick 10,000 of the 1,000-body arena, loss %.0f%%, 20±5 ms: %s, state %llu bytes, "
                "hello to playing %.0f ms\n",
                loss * 100, p.ok ? "ok" : p.failure.c_str(), static_cast<unsigned long long>(p.late_player_state_bytes),
                p.late_player_ms);
  }
}

/// A player of the 1,000-body arena nudged at tick 600 of 1,200 and resynced, at 0 and 20% loss:
/// the state's size and the time from hearing of the desync to holding the host's state.
void resync_figures(const std::string& evidence_dir) {
  for (const double loss : {0.0, 0.20}) {
    const lockstep::netsim::ScenarioReport r = lockstep::netsim::run(lockstep::netsim::resync(1, 1200, 600, loss), evidence_dir);
    std::printf("resync at tick 600 of the 1,000-body arena, loss %.0f%%, 20±5 ms: %s, state %llu bytes, "
                "desync heard to state held %.0f ms\n",
                loss * 100, r.ok ? "ok" : r.failure.c_str(), static_cast<unsigned long long>(r.resync_bytes), r.resync_ms);
  }
}

/// The host of 4 players of the 1,000-body arena killed at a time drawn from 2 to 8 s into 1,200
/// ticks, `runs` times: the time from its loss until a survivor stepped the first tick its
/// successor decided (the detection time, half the 3 s timeout, then a handshake and the handoff).
int migration_figures(std::uint64_t runs, const std::string& evidence_dir) {
  std::vector<double> stalls;
  std::uint64_t failed = 0;
  for (std::uint64_t i = 0; i < runs; ++i) {
    const auto at_ms = static_cast<std::uint32_t>(2000 + (lockstep::netsim::scenario_seed(7, i) % 6000));
    const lockstep::netsim::ScenarioReport r = lockstep::netsim::run(lockstep::netsim::host_lost(i + 1, 1200, at_ms, 0.0), evidence_dir);
    if (!r.ok || !r.migrated) {
      ++failed;
      std::printf("run %llu: %s\n", static_cast<unsigned long long>(i + 1), r.ok ? "no migration" : r.failure.c_str());
      continue;
    }
    stalls.push_back(r.migration_stall_ms);
  }
  std::sort(stalls.begin(), stalls.end());
  std::printf("host killed in %llu sessions of 4 players (the 1,000-body arena, 20±5 ms, timeout 3 s: detection 1.5 s), "
              "%llu failed: loss to the successor's first tick stepped, median %.0f ms, worst %.0f ms\n",
              static_cast<unsigned long long>(runs), static_cast<unsigned long long>(failed),
              stalls.empty() ? 0.0 : stalls[stalls.size() / 2], stalls.empty() ? 0.0 : stalls.back());
  return failed == 0 ? 0 : 1;
}

/// The median wall time of a step of the 1,000-body arena on `threads` threads, in microseconds
/// (301 bot-played ticks after 60 to settle: what a frame's steps cost here).
double arena_step_us(std::uint32_t threads) {
  lockstep::WorldConfig config = lockstep::default_world_config(lockstep::Scene::arena);
  config.arena.bodies = 1000;
  config.threads = threads;
  lockstep::Result<lockstep::World> world = lockstep::World::create(config, 3);
  if (!world) return 0;
  std::vector<lockstep::Bot> bots;
  for (std::uint32_t p = 0; p < config.players; ++p) bots.emplace_back(3, p);
  std::vector<lockstep::ButtonInput> inputs(config.players);
  std::vector<double> us;
  for (int t = 0; t < 361; ++t) {
    for (std::uint32_t p = 0; p < config.players; ++p) inputs[p] = bots[p].next();
    const auto start = std::chrono::steady_clock::now();
    if (!world->step(inputs)) return 0;
    if (t >= 60) us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(us.begin(), us.begin() + static_cast<long>(us.size() / 2), us.end());
  return us[us.size() / 2];
}

/// Prediction against lockstep (issue 23's figures): 4 players of the 1,000-body arena through
/// round trips of 20, 80 and 150 ms with 20 ms of jitter, `sessions` sessions of 1,200 ticks each
/// with the adaptive delay, in lockstep and with --rollback 8 and 12: the input latency (the worst
/// player's p50/p99), rollbacks a second per player, the ticks a rollback re-simulates (mean, max),
/// the deepest prediction; and what share of a 60 Hz frame a frame's steps take on 1 and 2 threads.
int prediction_figures(std::uint64_t sessions, const std::string& evidence_dir) {
  const double one_thread_us = arena_step_us(1);
  const double two_threads_us = arena_step_us(2);
  std::printf("a step of the 1,000-body arena: %.0f µs on 1 thread, %.0f µs on 2 (medians of 301)\n", one_thread_us,
              two_threads_us);
  int failed = 0;
  for (const std::uint32_t round_trip_ms : {20u, 80u, 150u}) {
    for (const std::uint32_t window : {0u, 8u, 12u}) {
      lockstep::netsim::ScenarioReport total;
      std::uint32_t min_delay = lockstep::net::k_max_input_delay;
      std::uint32_t max_delay = 0;
      for (std::uint64_t i = 0; i < sessions; ++i) {
        lockstep::netsim::Scenario s = lockstep::netsim::round_trip(i + 1, round_trip_ms, std::nullopt, 1200, 20, window);
        s.bodies = 1000;
        const lockstep::netsim::ScenarioReport r = lockstep::netsim::run(s, evidence_dir);
        failed += r.ok ? 0 : 1;
        total.latency_p50_ticks = std::max(total.latency_p50_ticks, r.latency_p50_ticks);
        total.latency_p99_ticks = std::max(total.latency_p99_ticks, r.latency_p99_ticks);
        total.rollbacks += r.rollbacks;
        total.resimulated_ticks += r.resimulated_ticks;
        total.resimulated_max = std::max(total.resimulated_max, r.resimulated_max);
        total.prediction_max = std::max(total.prediction_max, r.prediction_max);
        total.stall_ticks += r.stall_ticks;
        total.player_ticks += r.player_ticks;
        min_delay = std::min(min_delay, r.final_delay);
        max_delay = std::max(max_delay, r.final_delay);
      }
      const double player_seconds = static_cast<double>(total.player_ticks) / 60.0;
      const double per_rollback = total.rollbacks == 0 ? 0.0 : static_cast<double>(total.resimulated_ticks) /
                                                                   static_cast<double>(total.rollbacks);
      // A frame steps the confirmed tick and the present's (one each a tick), and a rollback's
      // re-simulated ticks: the mean a tick, and the most in one frame.
      const double mean_steps = (window == 0 ? 1.0 : 2.0) + static_cast<double>(total.resimulated_ticks) /
                                                             static_cast<double>(std::max<std::uint64_t>(1, total.player_ticks));
      const double most_steps = (window == 0 ? 1.0 : 2.0) + static_cast<double>(total.resimulated_max);
      const auto share = [](double steps, double us) { return 100.0 * steps * us / (1e6 / 60.0); };
      std::printf("round trip %u ms ± 10 each way, %s: delay %u–%u, latency p50/p99 %llu/%llu ticks, stall ticks per "
                  "10,000 %.1f, rollbacks %.1f/s per player, re-simulated %.1f ticks a rollback (most %llu), deepest "
                  "prediction %llu; steps a frame %.1f (most %.0f): %.0f%% (most %.0f%%) of a 60 Hz frame on 1 thread, "
                  "%.0f%% (%.0f%%) on 2\n",
                  round_trip_ms, window == 0 ? "lockstep" : ("rollback " + std::to_string(window)).c_str(), min_delay,
                  max_delay, static_cast<unsigned long long>(total.latency_p50_ticks),
                  static_cast<unsigned long long>(total.latency_p99_ticks),
                  10'000.0 * static_cast<double>(total.stall_ticks) / static_cast<double>(std::max<std::uint64_t>(1, total.player_ticks)),
                  static_cast<double>(total.rollbacks) / player_seconds, per_rollback,
                  static_cast<unsigned long long>(total.resimulated_max), static_cast<unsigned long long>(total.prediction_max),
                  mean_steps, most_steps, share(mean_steps, one_thread_us), share(most_steps, one_thread_us),
                  share(mean_steps, two_threads_us), share(most_steps, two_threads_us));
    }
  }
  return failed == 0 ? 0 : 1;
}

/// docs/BENCHMARKS.md's figures, from one run: the steady 4-player session at 0, 5 and 20% loss,
/// and the generated scenarios' throughput.
int figures(std::uint64_t sessions, const std::string& evidence_dir) {
  for (const double loss : {0.0, 0.05, 0.20}) {
    lockstep::netsim::ScenarioReport total;
    std::uint64_t failed = 0;
    for (std::uint64_t i = 0; i < sessions; ++i) {
      const lockstep::netsim::ScenarioReport r = lockstep::netsim::run(lockstep::netsim::steady(i + 1, loss), evidence_dir);
      failed += r.ok ? 0 : 1;
      total.stall_ticks += r.stall_ticks;
      total.player_ticks += r.player_ticks;
      total.peer_bytes_sent += r.peer_bytes_sent;
      total.peer_bytes_received += r.peer_bytes_received;
      total.peer_datagrams_sent += r.peer_datagrams_sent;
      total.peer_ticks += r.peer_ticks;
      total.peer_seconds += r.peer_seconds;
    }
    const auto per_tick = [&](std::uint64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(total.peer_ticks); };
    std::printf("loss %2.0f%%: %llu sessions (%llu failed) of 4 players, input delay 5, 1200 ticks at 60 Hz, 20±5 ms: "
                "stall ticks per 10,000 %.1f; per peer per tick %.1f bytes sent, %.1f received; %.1f datagrams/s sent per peer\n",
                loss * 100, static_cast<unsigned long long>(sessions), static_cast<unsigned long long>(failed),
                10'000.0 * static_cast<double>(total.stall_ticks) / static_cast<double>(total.player_ticks),
                per_tick(total.peer_bytes_sent), per_tick(total.peer_bytes_received),
                static_cast<double>(total.peer_datagrams_sent) / total.peer_seconds);
  }
  adaptive_delay_figures(sessions, evidence_dir);
  late_join_figures(evidence_dir);
  resync_figures(evidence_dir);
  return run_many(sessions * 25, 1, false, evidence_dir);
}

int run_one(std::uint64_t seed, const std::string& evidence_dir) {
  const lockstep::netsim::Scenario scenario = lockstep::netsim::generate(seed);
  std::printf("scenario %llu: %s\n", static_cast<unsigned long long>(seed), scenario.describe().c_str());
  std::vector<std::string> trace;
  const lockstep::netsim::ScenarioReport report = lockstep::netsim::run(scenario, evidence_dir, &trace);
  for (const std::string& line : trace) std::printf("  %s\n", line.c_str());
  std::printf("%s after %.1f simulated seconds%s%s\n", report.ok ? "ok" : "FAILED", report.simulated_seconds,
              report.ok ? "" : ": ", report.failure.c_str());
  return report.ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs whole networked lockstep sessions on virtual time, with generated faults and trouble, "
               "and checks that every participant agrees and ends as documented"};
  std::uint64_t scenarios = 100;
  std::uint64_t seed = 1;
  std::optional<std::uint64_t> one;
  app.add_option("--scenarios", scenarios, "How many scenarios to run (default 100)")->check(CLI::Range(1ull, 10'000'000ull));
  app.add_option("--seed", seed, "Seed of the run: the same seed runs the same scenarios (default 1)");
  app.add_option("--scenario", one, "Run one scenario alone, by its own seed, and print what happened");
  std::string evidence_dir;
  app.add_option("--evidence-dir", evidence_dir,
                 "Keep the desync evidence that scenarios write (those that desync on purpose too) in this folder; "
                 "by default it goes to a temporary folder removed at the end");
  std::optional<std::uint64_t> prediction_sessions;
  app.add_option("--prediction-figures", prediction_sessions,
                 "Print prediction's figures: N sessions of 4 players of the 1,000-body arena at each of 20, 80 and "
                 "150 ms round trips, in lockstep and with --rollback 8 and 12")
      ->check(CLI::Range(1ull, 1000ull));
  std::optional<std::uint64_t> migration_runs;
  app.add_option("--migration-figures", migration_runs,
                 "Print host migration's figure: N sessions of 4 players of the 1,000-body arena whose host is "
                 "killed, and the time from its loss to the first tick its successor decided (median, worst)")
      ->check(CLI::Range(1ull, 1000ull));
  std::optional<std::uint64_t> figure_sessions;
  app.add_option("--figures", figure_sessions,
                 "Print docs/BENCHMARKS.md's figures: N steady 4-player sessions at 0, 5 and 20% loss, "
                 "then 25·N scenarios");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  lockstep::Result<EvidenceDir> evidence = EvidenceDir::make(evidence_dir);
  if (!evidence) {
    std::fprintf(stderr, "error: %s\n", evidence.error().message.c_str());
    return 2;
  }
  const std::string& dir = evidence->path();
  if (one) return run_one(*one, dir);
  if (figure_sessions) return figures(*figure_sessions, dir);
  if (prediction_sessions) return prediction_figures(*prediction_sessions, dir);
  if (migration_runs) return migration_figures(*migration_runs, dir);
  return run_many(scenarios, seed, isatty(2) != 0, dir);
}
