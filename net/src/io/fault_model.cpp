#include "lockstep/net/io/fault_model.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "decimal.hpp"

namespace lockstep::net {

Result<NetSimConfig> parse_netsim(std::string_view text) {
  NetSimConfig config;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(at, comma - at);
    at = comma + 1;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) return fail("--netsim: '", std::string(item), "' is not key=value");
    const std::string key(item.substr(0, eq));
    const std::string value(item.substr(eq + 1));
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || !(number >= 0.0)) {
      return fail("--netsim: ", key, " wants a number, not '", value, "'");
    }
    auto fraction = [&](double& out) -> Status {
      if (number > 1.0) return fail("--netsim: ", key, " is a fraction from 0 to 1, not ", value);
      out = number;
      return {};
    };
    auto millis = [&](std::uint32_t& out, double most) -> Status {
      if (number > most) return fail("--netsim: ", key, " is in ms, at most ", static_cast<long>(most), ", not ", value);
      out = static_cast<std::uint32_t>(number);
      return {};
    };
    Status status;
    if (key == "loss") status = fraction(config.loss);
    else if (key == "dup") status = fraction(config.duplicate);
    else if (key == "reorder") status = fraction(config.reorder);
    else if (key == "delay") status = millis(config.delay_ms, 10'000.0);
    else if (key == "jitter") status = millis(config.jitter_ms, 10'000.0);
    else if (key == "in_delay") status = millis(config.in_delay_ms, 10'000.0);
    else if (key == "outage") status = millis(config.outage_ms, 10'000.0);
    else if (key == "outage_at") status = millis(config.outage_at_ms, 3'600'000.0);
    else if (key == "seed") {
      const std::optional<std::uint64_t> seed = detail::parse_decimal(value, UINT64_MAX);
      if (!seed) return fail("--netsim: seed wants a whole number, not '", value, "'");
      config.seed = *seed;
    } else {
      return fail("--netsim: unknown key '", key, "' (loss, dup, reorder, delay, jitter, in_delay, outage, outage_at, seed)");
    }
    if (!status) return status.error();
  }
  return config;
}

std::string describe(const NetSimConfig& c) {
  if (!c.active()) return "off";
  char text[200];
  std::snprintf(text, sizeof text, "loss %.0f%%, dup %.0f%%, reorder %.0f%%, delay %u±%u ms", c.loss * 100,
                c.duplicate * 100, c.reorder * 100, c.delay_ms, c.jitter_ms);
  std::string out = text;
  if (c.in_delay_ms > 0) out += ", received " + std::to_string(c.in_delay_ms) + " ms later";
  if (c.outage_ms > 0) out += ", outage " + std::to_string(c.outage_ms) + " ms at " + std::to_string(c.outage_at_ms) + " ms";
  return out + ", seed " + std::to_string(c.seed);
}

FaultModel::FaultModel(const NetSimConfig& config) : config_(config), rng_(config.seed) {}

bool FaultModel::send(Instant now, const Endpoint& to, std::span<const std::byte> bytes) {
  using std::chrono::milliseconds;
  const Instant outage_start = milliseconds(config_.outage_at_ms);
  if (config_.outage_ms > 0 && now >= outage_start && now < outage_start + milliseconds(config_.outage_ms)) return false;
  if (config_.loss > 0 && rng_.next_unit() < config_.loss) return false;
  const int copies = config_.duplicate > 0 && rng_.next_unit() < config_.duplicate ? 2 : 1;
  for (int copy = 0; copy < copies; ++copy) {
    double delay_ms = config_.delay_ms + (config_.jitter_ms > 0 ? config_.jitter_ms * rng_.next_unit() : 0.0);
    if (config_.reorder > 0 && rng_.next_unit() < config_.reorder) delay_ms += 5.0 + 2.0 * config_.jitter_ms;  // overtaken
    const Instant due = now + std::chrono::microseconds(static_cast<std::int64_t>(delay_ms * 1000.0));
    held_.push(Held{due, order_++, to, {bytes.begin(), bytes.end()}});
  }
  return true;
}

}  // namespace lockstep::net
