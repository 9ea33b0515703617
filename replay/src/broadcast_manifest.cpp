#include "lockstep/replay/broadcast_manifest.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>

#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/engine/tick_limit.hpp"

namespace lockstep::replay {

std::string BroadcastManifest::segment_name(std::uint64_t number) const {
  return id + "-" + std::to_string(number) + ".lss";
}

std::uint64_t BroadcastManifest::live_tick() const {
  return segments.empty() ? start_tick : segments.back().last_tick;
}

const BroadcastSegment* BroadcastManifest::listed(std::uint64_t number) const {
  if (segments.empty()) return nullptr;
  const std::uint64_t first = segments.front().number;
  if (number < first || number - first >= segments.size()) return nullptr;
  return &segments[static_cast<std::size_t>(number - first)];
}

std::optional<BroadcastSegment> BroadcastManifest::keyframe_at_or_before(std::uint64_t tick) const {
  std::optional<BroadcastSegment> best;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const BroadcastSegment& s = segments[i];
    // A keyframe alone, without the ticks (and the hash) before it, is no place to start.
    const bool alone = i > 0 && s.first_tick == s.last_tick && segments[i - 1].last_tick == s.first_tick;
    if (!s.keyframe || alone) continue;
    if (!best || s.last_tick <= tick) best = s;
  }
  return best;
}

std::string encode_manifest(const BroadcastManifest& m) {
  std::string out = "{\"format\":\"lockstep broadcast\",\"version\":";
  out += std::to_string(k_broadcast_version);
  out += ",\"id\":\"";
  out += m.id;
  out += "\",\"tick_rate_hz\":";
  out += std::to_string(m.tick_rate_hz);
  out += ",\"start_tick\":";
  out += std::to_string(m.start_tick);
  out += ",\"opening_bytes\":";
  out += std::to_string(m.opening_bytes);
  out += ",\"segments\":[";
  for (std::size_t i = 0; i < m.segments.size(); ++i) {
    const BroadcastSegment& s = m.segments[i];
    if (i > 0) out += ',';
    out += "\n{\"n\":";
    out += std::to_string(s.number);
    out += ",\"first\":";
    out += std::to_string(s.first_tick);
    out += ",\"last\":";
    out += std::to_string(s.last_tick);
    out += ",\"keyframe\":";
    out += s.keyframe ? "true" : "false";
    out += ",\"bytes\":";
    out += std::to_string(s.bytes);
    out += '}';
  }
  out += "]";
  if (m.end) {
    out += ",\n\"end\":{\"tick\":";
    out += std::to_string(m.end->tick);
    out += ",\"hash\":\"";
    out += hash_hex(m.end->hash);
    out += "\"}";
  }
  out += "}\n";
  return out;
}

namespace {

/// The member `name` of `object`, or null.
const rapidjson::Value* member(const rapidjson::Value& object, const char* name) {
  return object.HasMember(name) ? &object[name] : nullptr;
}

/// A member that must be an unsigned integer within `max`.
Result<std::uint64_t> whole(const rapidjson::Value& object, const char* name, std::uint64_t max) {
  const rapidjson::Value* value = member(object, name);
  if (value == nullptr || !value->IsUint64() || value->GetUint64() > max) {
    return fail("the broadcast's manifest has no valid \"", name, "\" (a whole number up to ", max, ")");
  }
  return value->GetUint64();
}

/// A member that must be a string; its text, or nothing.
std::optional<std::string_view> string_member(const rapidjson::Value& object, const char* name) {
  const rapidjson::Value* value = member(object, name);
  if (value == nullptr || !value->IsString()) return std::nullopt;
  return std::string_view(value->GetString(), value->GetStringLength());
}

bool is_hex16(std::string_view text) {
  return text.size() == 16 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

/// One entry of "segments", checked against the manifest so far (its start tick, the entry before).
Result<BroadcastSegment> parse_segment(const rapidjson::Value& entry, const BroadcastManifest& m) {
  if (!entry.IsObject()) return fail("the broadcast's manifest has a segment that is not an object");
  BroadcastSegment s;
  Result<std::uint64_t> n = whole(entry, "n", k_max_segment_number);
  Result<std::uint64_t> first = whole(entry, "first", k_tick_limit - 1);
  Result<std::uint64_t> last = whole(entry, "last", k_tick_limit - 1);
  Result<std::uint64_t> size = whole(entry, "bytes", k_max_segment_bytes);
  for (const Result<std::uint64_t>* field : {&n, &first, &last, &size}) {
    if (!*field) return field->error();
  }
  const rapidjson::Value* keyframe = member(entry, "keyframe");
  if (keyframe == nullptr || !keyframe->IsBool()) {
    return fail("the broadcast's manifest has a segment without \"keyframe\" (true or false)");
  }
  s.number = n.value();
  s.first_tick = first.value();
  s.last_tick = last.value();
  s.bytes = size.value();
  s.keyframe = keyframe->GetBool();
  if (s.number == 0 || s.first_tick > s.last_tick || s.last_tick < m.start_tick || s.bytes == 0) {
    return fail("the broadcast's manifest lists an impossible segment ", s.number);
  }
  if (!m.segments.empty()) {
    const BroadcastSegment& previous = m.segments.back();
    // A keyframe or the end record alone (no ticks of its own) repeats its tick; ticks follow on.
    const bool follows = s.first_tick == previous.last_tick + 1 ||
                         (s.first_tick == s.last_tick && s.first_tick == previous.last_tick);
    if (s.number != previous.number + 1 || !follows) {
      return fail("the broadcast's manifest lists segment ", s.number, " (ticks ", s.first_tick, "..", s.last_tick,
                  ") after segment ", previous.number, " (ticks ", previous.first_tick, "..", previous.last_tick, ")");
    }
  }
  return s;
}

}  // namespace

Result<BroadcastManifest> parse_manifest(std::span<const std::byte> bytes) {
  if (bytes.size() > k_max_manifest_bytes) {
    return fail("the broadcast's manifest is ", bytes.size(), " bytes, over the ", k_max_manifest_bytes, "-byte bound");
  }
  const std::string json(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  rapidjson::Document doc;
  // Iterative: nesting in an untrusted document never deepens the stack.
  doc.Parse<rapidjson::kParseIterativeFlag>(json.c_str(), json.size());
  if (doc.HasParseError()) {
    return fail("the broadcast's manifest is not JSON (", rapidjson::GetParseError_En(doc.GetParseError()),
                " at byte ", doc.GetErrorOffset(), ")");
  }
  if (!doc.IsObject()) return fail("the broadcast's manifest is not a JSON object");
  if (string_member(doc, "format") != std::optional<std::string_view>("lockstep broadcast")) {
    return fail("not a lockstep broadcast's manifest");
  }
  Result<std::uint64_t> version = whole(doc, "version", 0xFFFFFFFFu);
  if (!version) return version.error();
  if (version.value() != k_broadcast_version) {
    return fail("broadcast version ", version.value(), " is not this build's version ", k_broadcast_version);
  }
  BroadcastManifest m;
  const std::optional<std::string_view> id = string_member(doc, "id");
  if (!id || !is_hex16(*id)) return fail("the broadcast's manifest has no valid \"id\" (16 hex digits)");
  m.id = std::string(*id);
  Result<std::uint64_t> rate = whole(doc, "tick_rate_hz", k_max_tick_rate_hz);
  if (!rate) return rate.error();
  if (rate.value() == 0) return fail("the broadcast's manifest has a tick rate of 0");
  m.tick_rate_hz = static_cast<std::uint32_t>(rate.value());
  Result<std::uint64_t> start = whole(doc, "start_tick", k_tick_limit - 1);
  if (!start) return start.error();
  m.start_tick = start.value();
  Result<std::uint64_t> opening = whole(doc, "opening_bytes", k_max_segment_bytes);
  if (!opening) return opening.error();
  m.opening_bytes = opening.value();
  const rapidjson::Value* segments = member(doc, "segments");
  if (segments == nullptr || !segments->IsArray()) return fail("the broadcast's manifest has no \"segments\" list");
  if (segments->Size() > k_broadcast_window) {
    return fail("the broadcast's manifest lists ", segments->Size(), " segments, over ", k_broadcast_window);
  }
  for (const rapidjson::Value& entry : segments->GetArray()) {
    Result<BroadcastSegment> s = parse_segment(entry, m);
    if (!s) return s.error();
    m.segments.push_back(s.value());
  }
  if (const rapidjson::Value* end = member(doc, "end")) {
    if (!end->IsObject()) return fail("the broadcast's manifest has an \"end\" that is not an object");
    Result<std::uint64_t> tick = whole(*end, "tick", k_tick_limit - 1);
    if (!tick) return tick.error();
    const std::optional<std::string_view> hash = string_member(*end, "hash");
    if (!hash || !is_hex16(*hash)) {
      return fail("the broadcast's manifest has an end without a valid \"hash\" (16 hex digits)");
    }
    if (tick.value() != m.live_tick()) {
      return fail("the broadcast's manifest ends at tick ", tick.value(), " but its segments end at tick ", m.live_tick());
    }
    m.end = TickHash{tick.value(), std::stoull(std::string(*hash), nullptr, 16)};
  }
  return m;
}

}  // namespace lockstep::replay
