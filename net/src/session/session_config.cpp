#include "lockstep/net/session/session_config.hpp"

#include "lockstep/engine/tick_limit.hpp"

namespace lockstep::net {

Status check_host_settings(const HostSettings& host, std::uint32_t players, std::uint32_t input_bytes) {
  if (players < 1 || players > k_max_session_players) return fail("sessions have 1 to ", k_max_session_players, " players");
  if (input_bytes < 1 || input_bytes > k_max_input_bytes) return fail("a player's input is 1 to ", k_max_input_bytes, " bytes");
  if (players * input_bytes > k_max_tick_input_bytes) {
    return fail(players, " players of ", input_bytes, "-byte inputs are ", players * input_bytes, " bytes a tick; a session carries at most ",
                k_max_tick_input_bytes);
  }
  if (host.input_delay > k_max_input_delay) return fail("the input delay is 0 to ", k_max_input_delay, " ticks");
  if (host.prediction_window > k_max_prediction_window) {
    return fail("the prediction window (--rollback) is 0 to ", k_max_prediction_window, " ticks");
  }
  if (host.tick_rate_hz < 1 || host.tick_rate_hz > k_max_tick_rate_hz) {
    return fail("the tick rate is 1 to ", k_max_tick_rate_hz, " Hz");
  }
  if (host.end_tick < 1 || host.end_tick >= k_tick_limit) return fail("the session needs 1 to ", k_tick_limit - 1, " ticks");
  if (!crypto_ready()) return fail("libsodium cannot start here (no source of randomness): nothing can be sealed");
  if (host.credentials.token_key && !host.credentials.unix_seconds) {
    return fail("a host that admits connect tokens needs the time of day (HostCredentials::unix_seconds)");
  }
  if (host.start_with > players) return fail("a session of ", players, " players cannot start with ", host.start_with);
  return {};
}

}  // namespace lockstep::net
