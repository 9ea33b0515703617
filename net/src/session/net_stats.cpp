#include "lockstep/net/session/net_stats.hpp"

#include <cstdio>
#include <string>

#include "lockstep/net/protocol/lockstep_protocol.hpp"

namespace lockstep::net {

namespace {

std::string optional_ms(const std::optional<double>& ms, int decimals = 1) {
  if (!ms) return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, *ms);
  return text;
}

std::string optional_ticks(const std::optional<std::uint64_t>& ticks) {
  return ticks ? std::to_string(*ticks) : "null";
}

/// [{"tick": T, "delay": D}, …] without the brackets.
std::string delay_changes_json(const std::vector<DelayChange>& changes) {
  std::string out;
  for (const DelayChange& c : changes) {
    out += std::string(out.empty() ? "" : ", ") + "{\"tick\": " + std::to_string(c.tick) +
           ", \"delay\": " + std::to_string(c.delay) + "}";
  }
  return out;
}

/// [{"slot": S, "inputs": N, "late_inputs": L}, …] without the brackets (late_inputs a host's).
std::string decided_json(const std::vector<DecidedInputs>& decided) {
  std::string out;
  for (const DecidedInputs& d : decided) {
    out += std::string(out.empty() ? "" : ", ") + "{\"slot\": " + std::to_string(d.slot) +
           ", \"inputs\": " + std::to_string(d.inputs) +
           (d.late_inputs ? ", \"late_inputs\": " + std::to_string(*d.late_inputs) : std::string()) + "}";
  }
  return out;
}

}  // namespace

std::string stats_json(const NetStats& s) {
  std::string dropped;
  for (std::size_t i = 1; i < k_drop_reasons; ++i) {
    if (s.dropped.counts[i] == 0) continue;
    dropped += (dropped.empty() ? "\"" : ", \"") + std::string(drop_reason_name(static_cast<DropReason>(i))) +
               "\": " + std::to_string(s.dropped.counts[i]);
  }
  const std::string changes = delay_changes_json(s.delay_changes);
  const std::string decided = decided_json(s.decided);
  char rtt[32] = "null";
  if (s.rtt_ms) std::snprintf(rtt, sizeof rtt, "%.3f", *s.rtt_ms);
  return "{\"ticks\": " + std::to_string(s.ticks) + ", \"stall_ticks\": " + std::to_string(s.stall_ticks) +
         ", \"behind_ticks\": " + std::to_string(s.behind_ticks) +
         ", \"datagrams_sent\": " + std::to_string(s.datagrams_sent) +
         ", \"datagrams_received\": " + std::to_string(s.datagrams_received) +
         ", \"bytes_sent\": " + std::to_string(s.bytes_sent) + ", \"bytes_received\": " + std::to_string(s.bytes_received) +
         ", \"rtt_ms\": " + rtt + ", \"input_delay\": " + std::to_string(s.input_delay) +
         ", \"input_delay_changes\": [" + changes + "], \"welcomed_ms\": " + optional_ms(s.welcomed_ms, 3) +
         ", \"state_bytes\": " + std::to_string(s.state_bytes) +
         ", \"state_ms\": " + optional_ms(s.state_ms) + ", \"caught_up_ms\": " + optional_ms(s.caught_up_ms) + ", \"playing_ms\": " + optional_ms(s.playing_ms) +
         ", \"desyncs\": " + std::to_string(s.desyncs) + ", \"resync_bytes\": " + std::to_string(s.resync_bytes) +
         ", \"resync_ms\": " + optional_ms(s.resync_ms) +
         ", \"prediction_window\": " + std::to_string(s.prediction_window) +
         ", \"prediction_max\": " + std::to_string(s.prediction_max) + ", \"rollbacks\": " + std::to_string(s.rollbacks) +
         ", \"resimulated_ticks\": " + std::to_string(s.resimulated_ticks) +
         ", \"resimulated_max\": " + std::to_string(s.resimulated_max) +
         ", \"input_latency_p50_ticks\": " + optional_ticks(s.input_latency_p50_ticks) +
         ", \"input_latency_p99_ticks\": " + optional_ticks(s.input_latency_p99_ticks) +
         ", \"path_challenges\": " + std::to_string(s.path_challenges) +
         ", \"path_challenges_withheld\": " + std::to_string(s.path_challenges_withheld) +
         ", \"inputs_decided\": [" + decided + "]" +
         ", \"dropped\": {" + dropped +
         "}}\n";
}

std::string stats_line(const NetStats& s, const NetStats* since, double seconds) {
  std::string dropped;
  for (std::size_t i = 1; i < k_drop_reasons; ++i) {
    if (s.dropped.counts[i] == 0) continue;
    dropped += (dropped.empty() ? "" : ", ") + std::string(drop_reason_name(static_cast<DropReason>(i))) + " " +
               std::to_string(s.dropped.counts[i]);
  }
  const bool rates = since != nullptr && seconds > 0.0;
  auto amount = [&](std::uint64_t now, std::uint64_t before) {
    return rates ? static_cast<double>(now - before) / seconds : static_cast<double>(now);
  };
  char details[400] = "";
  if (s.input_latency_p50_ticks && s.input_latency_p99_ticks) {
    std::snprintf(details, sizeof details, ", latency %llu/%llu ticks",
                  static_cast<unsigned long long>(*s.input_latency_p50_ticks),
                  static_cast<unsigned long long>(*s.input_latency_p99_ticks));
  }
  if (s.prediction_window != 0) {
    const std::size_t used = std::char_traits<char>::length(details);
    std::snprintf(details + used, sizeof details - used, ", prediction %llu/%u, rollbacks %.0f%s",
                  static_cast<unsigned long long>(s.prediction_max), s.prediction_window,
                  amount(s.rollbacks, rates ? since->rollbacks : 0), rates ? "/s" : "");
  }
  const bool host = !s.decided.empty() && s.decided.front().late_inputs.has_value();
  for (const DecidedInputs& d : s.decided) {
    if (d.inputs == 0) continue;
    const std::size_t used = std::char_traits<char>::length(details);
    const double share = s.ticks == 0 ? 0.0 : 100.0 * static_cast<double>(d.inputs) / static_cast<double>(s.ticks);
    if (host) {
      std::snprintf(details + used, sizeof details - used, ", decided %llu for player %u (%.1f%%)",
                    static_cast<unsigned long long>(d.inputs), static_cast<unsigned>(d.slot), share);
    } else {
      std::snprintf(details + used, sizeof details - used, ", decided %llu (%.1f%%)",
                    static_cast<unsigned long long>(d.inputs), share);
    }
  }
  char line[800];
  std::snprintf(line, sizeof line, "tick %llu, rtt %.1f ms, input delay %u, %s %llu%s, sent %.0f dgrams%s %.1f KB%s, "
                "received %.0f dgrams%s %.1f KB%s, dropped %s",
                static_cast<unsigned long long>(s.ticks), s.rtt_ms.value_or(0.0), s.input_delay,
                s.paced ? "stalls" : "behind", static_cast<unsigned long long>(s.paced ? s.stall_ticks : s.behind_ticks),
                details,
                amount(s.datagrams_sent, rates ? since->datagrams_sent : 0), rates ? "/s" : "",
                amount(s.bytes_sent, rates ? since->bytes_sent : 0) / 1024.0, rates ? "/s" : "",
                amount(s.datagrams_received, rates ? since->datagrams_received : 0), rates ? "/s" : "",
                amount(s.bytes_received, rates ? since->bytes_received : 0) / 1024.0, rates ? "/s" : "",
                dropped.empty() ? "none" : dropped.c_str());
  return line;
}

void add_protocol_stats(NetStats& s, const LockstepProtocol& protocol, std::uint64_t tick) {
  s.rtt_ms = protocol.rtt_ms();
  s.input_delay = protocol.input_delay_after(tick);
  s.delay_changes = protocol.delay_changes();
  const PathChallengeCounts challenges = protocol.path_challenges();
  s.path_challenges = challenges.sent;
  s.path_challenges_withheld = challenges.withheld;
  s.decided = protocol.decided_inputs();
  s.dropped = protocol.drops();
}

}  // namespace lockstep::net
