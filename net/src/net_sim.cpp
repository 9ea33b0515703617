#include "lockstep/net/net_sim.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

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
    auto millis = [&](std::uint32_t& out) -> Status {
      if (number > 10'000.0) return fail("--netsim: ", key, " is in ms, at most 10000, not ", value);
      out = static_cast<std::uint32_t>(number);
      return {};
    };
    Status status;
    if (key == "loss") status = fraction(config.loss);
    else if (key == "dup") status = fraction(config.duplicate);
    else if (key == "reorder") status = fraction(config.reorder);
    else if (key == "delay") status = millis(config.delay_ms);
    else if (key == "jitter") status = millis(config.jitter_ms);
    else if (key == "seed") config.seed = std::strtoull(value.c_str(), nullptr, 10);
    else return fail("--netsim: unknown key '", key, "' (loss, dup, reorder, delay, jitter, seed)");
    if (!status) return status.error();
  }
  return config;
}

std::string describe(const NetSimConfig& c) {
  if (!c.active()) return "off";
  char text[160];
  std::snprintf(text, sizeof text, "loss %.0f%%, dup %.0f%%, reorder %.0f%%, delay %u±%u ms, seed %llu",
                c.loss * 100, c.duplicate * 100, c.reorder * 100, c.delay_ms, c.jitter_ms,
                static_cast<unsigned long long>(c.seed));
  return text;
}

}  // namespace lockstep::net
