// What a scenario run must show when every participant has ended: the invariants of
// scenario.hpp (safety, outcomes, prediction's window) and the figures a report gathers.

#include "scenario_run.hpp"

#include <algorithm>

namespace lockstep::netsim::detail {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::finished: return "finished";
    case Outcome::desync: return "desync";
    case Outcome::refused: return "refused";
    case Outcome::network_failed: return "network failed";
  }
  return "?";
}

bool all_players_lost(const Scenario& s) {
  const bool lasting = s.trouble == Trouble::kill || s.trouble == Trouble::leave ||
                       (s.trouble != Trouble::none && s.trouble_ms >= k_long_trouble_ms);
  return lasting && (s.victim == 0 || (s.players == 1 && s.victim == 1));
}

std::set<Outcome> allowed_outcomes(const Scenario& s, std::uint32_t who) {
  const std::set<Outcome> finished = {Outcome::finished};
  const std::set<Outcome> finished_or_failed = {Outcome::finished, Outcome::network_failed};
  const bool long_trouble = s.trouble_ms >= k_long_trouble_ms;
  if (s.trouble == Trouble::desync && !s.resync) {
    // Everyone stops at the desync; a joiner that missed every relay saying so hears the host end,
    // and one that had every tick before it heard finishes.
    if (who == 0) return {Outcome::desync};
    return {Outcome::desync, Outcome::network_failed, Outcome::finished};
  }
  // A relay host left with no player ends early, and its spectators hear that it ended.
  if (s.relay && who != 0 && who != s.victim && all_players_lost(s)) return finished_or_failed;
  switch (s.trouble) {
    case Trouble::none:
    case Trouble::rejoin:  // the killed process is not checked; its successor plays on
    case Trouble::desync: return finished;
    case Trouble::kill:
    case Trouble::leave:
      if (who == s.victim) return finished;  // a killed participant is not checked
      return s.victim == 0 ? finished_or_failed : finished;
    case Trouble::partition:
    case Trouble::outage:
    case Trouble::freeze:
      if (!long_trouble) return finished;
      if (s.victim == 0) return who == 0 ? finished : finished_or_failed;
      return who == s.victim ? finished_or_failed : finished;
  }
  return finished;
}

bool Run::excused(std::uint32_t i, const net::SessionResult& r) const {
  const Sessions::Participant& p = group_[i];
  // A joiner that arrives while the session runs (a spectator, a late player, a rejoin's successor)
  // may find it over: no host, or told so. Documented, not a fault.
  const bool successor = s_.trouble == Trouble::rejoin && i + 1 == group_.size();
  const bool missed_it = (i > s_.peers() || s_.late_player(i) || successor) && !p.session->welcomed() &&
                         ((r.outcome == Outcome::network_failed && group_[0].ended_at &&
                           *group_[0].ended_at < p.starts_at + milliseconds(k_timeout_ms)) ||
                          (r.outcome == Outcome::refused && r.message == "refused by the host: the session is over") ||
                          // … or while the host sends its state to as many late joiners as it serves.
                          (r.outcome == Outcome::refused && r.message.find("busy sending") != std::string::npos) ||
                          // … or arrives so near the end that the host, having stepped its last
                          // tick, stops waiting for the state to cross before it is across.
                          (r.outcome == Outcome::network_failed && r.message.rfind("the host ended the session", 0) == 0));
  // Through heavy loss a joiner's every hello (or welcome) can be lost until its handshake times
  // out; a host that then waits in vain for a player gives up after its wait timeout, and its
  // joiners hear it end. Both are documented outcomes, not faults.
  // (Challenged but never welcomed, the joiner cannot tell a lost welcome from a host that would
  // not let it in: it says the second.)
  const bool unanswered = !p.session->welcomed() && r.outcome == Outcome::network_failed &&
                          (r.message.rfind("no answer from the host", 0) == 0 ||
                           r.message.find("did not let this joiner in") != std::string::npos);
  // The host that was succeeded (killed, frozen or cut off past the detection time) ends when it
  // finds its participants gone on without it.
  if (successor_ && i == 0 && r.outcome == Outcome::network_failed) return true;
  const net::SessionResult& host_result = *group_[0].session->result();
  const bool host_gave_up = host_result.outcome == Outcome::network_failed &&
                            host_result.message.rfind("gave up waiting for players", 0) == 0 &&
                            r.outcome == Outcome::network_failed;
  return missed_it || unanswered || host_gave_up;
}

void Run::check(ScenarioReport& report) const {
  const Failed failed = [&report](std::string why) {
    if (!report.ok) return;
    report.ok = false;
    report.failure = std::move(why);
  };
  if (most_in_flight_ >= 4096) failed("unbounded: " + std::to_string(most_in_flight_) + " datagrams in flight");
  check_agreement(failed);
  for (std::uint32_t i = 0; i < group_.size(); ++i) {
    if (group_[i].killed() || !group_[i].started) continue;
    check_outcome(i, failed);
    add_figures(i, report);
  }
}

void Run::check_agreement(const Failed& failed) const {
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint32_t>> reference;
  const net::TickLog& host_ticks = group_[0].session->protocol().ticks();
  // After a migration the successor assembled every tick past the handoff.
  const net::TickLog& successor_ticks = group_[successor_.value_or(0)].session->protocol().ticks();
  for (std::uint32_t i = 0; i < group_.size(); ++i) {
    const Sessions::Participant& p = group_[i];
    for (const auto& [t, hash] : p.hashes) {
      // The lost host's ticks past the handoff are its own: nobody else stepped them.
      if (successor_ && i == 0 && t > handoff_tick_) break;
      const net::TickLog& assembled = successor_ && t > handoff_tick_ ? successor_ticks : host_ticks;
      // A nudged player that was not resynced has a state of its own from the nudge on.
      if (s_.trouble == Trouble::desync && i == s_.victim && t >= s_.perturb_tick &&
          (!s_.resync || p.session->result()->outcome != Outcome::finished)) {
        break;
      }
      const auto [it, inserted] = reference.emplace(t, std::make_pair(hash, i));
      if (!inserted && it->second.first != hash) {
        failed("participant " + std::to_string(i) + " disagrees with participant " + std::to_string(it->second.second) +
               " on the hash of tick " + std::to_string(t));
      }
      // (Ticks before a participant's kept window are forgotten: their inputs cannot be checked.)
      const net::TickLog& mine = p.session->protocol().ticks();
      if (t >= mine.first_tick() && !mine.known(t)) {
        failed("participant " + std::to_string(i) + " stepped tick " + std::to_string(t) + " without its inputs");
      } else if (mine.known(t) && assembled.known(t) &&
                 !std::equal(mine.inputs_of(t).begin(), mine.inputs_of(t).end(), assembled.inputs_of(t).begin())) {
        failed("participant " + std::to_string(i) + " stepped tick " + std::to_string(t) + " with inputs the host did not assemble");
      }
    }
  }
}

void Run::check_outcome(std::uint32_t i, const Failed& failed) const {
  const Sessions::Participant& p = group_[i];
  const net::SessionResult& r = *p.session->result();
  if (allowed_outcomes(s_, i).count(r.outcome) == 0 && !excused(i, r)) {
    failed("participant " + std::to_string(i) + " ended " + outcome_name(r.outcome) +
           (r.message.empty() ? "" : " (" + r.message + ")") + " at tick " + std::to_string(r.tick));
  }
  // A relay host whose every player is gone ends there: it has nothing left to relay.
  const bool may_end_early = players_[i].left || (i == 0 && s_.relay && all_players_lost(s_));
  const bool should_reach_end = r.outcome == Outcome::finished && !may_end_early;
  if (should_reach_end && r.tick != s_.ticks) {
    failed("participant " + std::to_string(i) + " finished at tick " + std::to_string(r.tick) + ", not " +
           std::to_string(s_.ticks));
  }
  const net::NetStats stats = p.session->stats();
  // Prediction: never past the window; none at all in lockstep, for spectators, a relay host, or
  // a player that never held a state to step.
  const std::uint32_t window = stats.paced && p.session->welcomed() ? s_.prediction_window : 0;
  if (stats.prediction_window != window || stats.prediction_max > window || (window == 0 && stats.rollbacks != 0)) {
    failed("participant " + std::to_string(i) + " predicted " + std::to_string(stats.prediction_max) +
           " ticks ahead with " + std::to_string(stats.rollbacks) + " rollbacks under a window of " +
           std::to_string(stats.prediction_window) + ", not " + std::to_string(window));
  }
}

void Run::add_figures(std::uint32_t i, ScenarioReport& report) const {
  const Sessions::Participant& p = group_[i];
  const net::SessionResult& r = *p.session->result();
  const net::NetStats stats = p.session->stats();
  if (stats.playing_ms && r.outcome == Outcome::finished) {
    report.late_player_ms = std::max(report.late_player_ms, *stats.playing_ms);
    report.late_player_state_bytes = std::max(report.late_player_state_bytes, stats.state_bytes);
  }
  if (stats.resync_ms) {
    report.resync_ms = std::max(report.resync_ms, *stats.resync_ms);
    report.resync_bytes = std::max(report.resync_bytes, stats.resync_bytes);
  }
  if (i > s_.peers() && stats.state_ms && stats.caught_up_ms) {
    report.late_state_bytes = std::max(report.late_state_bytes, stats.state_bytes);
    report.late_state_ms = std::max(report.late_state_ms, *stats.state_ms);
    report.late_caught_up_ms = std::max(report.late_caught_up_ms, *stats.caught_up_ms);
  }
  if (i == 0) {
    report.final_delay = stats.input_delay;
    report.delay_changes = static_cast<std::uint32_t>(stats.delay_changes.size());
  }
  if (!stats.paced || r.outcome != Outcome::finished) return;
  report.latency_p50_ticks = std::max(report.latency_p50_ticks, stats.input_latency_p50_ticks.value_or(0));
  report.latency_p99_ticks = std::max(report.latency_p99_ticks, stats.input_latency_p99_ticks.value_or(0));
  report.rollbacks += stats.rollbacks;
  report.resimulated_ticks += stats.resimulated_ticks;
  report.resimulated_max = std::max(report.resimulated_max, stats.resimulated_max);
  report.prediction_max = std::max(report.prediction_max, stats.prediction_max);
  report.stall_ticks += stats.stall_ticks;
  report.player_ticks += r.tick;
  if (i > 0 && p.ended_at) {
    report.peer_bytes_sent += stats.bytes_sent;
    report.peer_bytes_received += stats.bytes_received;
    report.peer_datagrams_sent += stats.datagrams_sent;
    report.peer_ticks += r.tick;
    report.peer_seconds += static_cast<double>((*p.ended_at - p.starts_at).count()) / 1e6;
  }
}

}  // namespace lockstep::netsim::detail
