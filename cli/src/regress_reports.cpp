#include "lockstep/cli/detail/regress_reports.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <rapidjson/document.h>

#include "lockstep/engine/hash_hex.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/replay/phase_divergence.hpp"
#include "lockstep/replay/regular_file.hpp"

namespace lockstep::cli::detail {
namespace {

/// A --jsonl file's size and one line's, at most (a line holds at most k_case_fields_max fields).
constexpr std::uint64_t k_max_jsonl_bytes = std::uint64_t{1} << 30;
constexpr std::size_t k_max_line_bytes = std::size_t{1} << 20;

/// Appends `text` as valid UTF-8 with every byte that does not begin or continue a well-formed
/// sequence replaced by U+FFFD: paths and messages are bytes, and JSON and XML are Unicode.
template <class Emit>
void each_code_point(std::string_view text, Emit emit) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool whole = length != 0 && i + length <= text.size();
    std::uint32_t code = length == 1 ? c : length == 2 ? c & 0x1Fu : length == 3 ? c & 0x0Fu : c & 0x07u;
    for (std::size_t k = 1; whole && k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      whole = (next >> 6) == 0x2;
      code = (code << 6) | (next & 0x3Fu);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8 either.
    static constexpr std::uint32_t k_least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (whole && (code < k_least[length] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF)) whole = false;
    if (!whole) {
      emit(0xFFFD, std::string_view("\xEF\xBF\xBD"));
      ++i;
      continue;
    }
    emit(code, text.substr(i, length));
    i += length;
  }
}


std::string json_string(std::string_view text) {
  std::string out = "\"";
  each_code_point(text, [&out](std::uint32_t code, std::string_view bytes) {
    if (code == '"' || code == '\\') {
      out += '\\';
      out += static_cast<char>(code);
    } else if (code < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(code));
      out += escaped;
    } else {
      out += bytes;
    }
  });
  return out + "\"";
}

std::string xml_text(std::string_view text) {
  std::string out;
  each_code_point(text, [&out](std::uint32_t code, std::string_view bytes) {
    switch (code) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t': out += "&#9;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      default:
        // XML 1.0 has no way to write the other control characters, nor U+FFFE and U+FFFF.
        if (code < 0x20 || code == 0xFFFE || code == 0xFFFF) {
          out += "\xEF\xBF\xBD";
        } else {
          out += bytes;
        }
    }
  });
  return out;
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", std::isfinite(seconds) && seconds > 0 ? seconds : 0.0);
  return text;
}

const char* verdict_name(const CaseReport& report) {
  switch (report.result) {
    case RegressResult::passed: return !report.rebaselined.empty() ? "rebaselined" : report.updated ? "updated" : "passed";
    case RegressResult::failed: return "failed";
    case RegressResult::unreadable: break;
  }
  return "unreadable";
}

/// Whether `text` is UTF-8 as each_code_point reads it (no byte replaced).
bool is_utf8(std::string_view text) { return utf8_text(text) == text; }

using Json = rapidjson::Value;

/// Reads the members of one JSON object, each by name and type, keeping the first error.
class Members {
 public:
  Members(const Json& object, std::string_view what) : object_(object), what_(what) {}

  std::string text(const char* name) {
    const Json* v = find(name);
    if (v == nullptr) return {};
    if (!v->IsString()) return wrong(name, "a string"), std::string();
    std::string value(v->GetString(), v->GetStringLength());
    // An escape may name a lone surrogate (\udc00), which is no character: what the writer
    // never writes is refused, not carried on.
    if (!is_utf8(value)) return wrong(name, "UTF-8"), std::string();
    return value;
  }
  std::uint64_t whole(const char* name, std::uint64_t max = UINT64_MAX) {
    const Json* v = find(name);
    if (v == nullptr) return 0;
    if (!v->IsUint64() || v->GetUint64() > max) return wrong(name, "a whole number in range"), 0;
    return v->GetUint64();
  }
  double number(const char* name) {
    const Json* v = find(name);
    if (v == nullptr) return 0;
    if (!v->IsNumber() || !std::isfinite(v->GetDouble()) || v->GetDouble() < 0) return wrong(name, "a number"), 0.0;
    return v->GetDouble();
  }
  std::uint64_t hash(const char* name) {
    const std::string hex = text(name);
    if (!error_.empty()) return 0;
    std::uint64_t value = 0;
    if (hex.size() != 16 || !std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; })) {
      return wrong(name, "16 hex digits"), 0;
    }
    for (const char c : hex) value = value << 4 | static_cast<std::uint64_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10);
    return value;
  }
  const Json* optional_object(const char* name) {
    if (!object_.HasMember(name)) return nullptr;
    const Json& v = object_[name];
    if (!v.IsObject()) return wrong(name, "an object"), nullptr;
    return &v;
  }
  const Json* array(const char* name) {
    const Json* v = find(name);
    if (v == nullptr) return nullptr;
    if (!v->IsArray()) return wrong(name, "an array"), nullptr;
    return v;
  }
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  const Json* find(const char* name) {
    if (!error_.empty()) return nullptr;
    if (!object_.HasMember(name)) {
      error_ = std::string(what_) + " has no \"" + name + "\"";
      return nullptr;
    }
    return &object_[name];
  }
  void wrong(const char* name, const char* want) {
    if (error_.empty()) error_ = std::string(what_) + "'s \"" + name + "\" is not " + want;
  }

  const Json& object_;
  std::string_view what_;
  std::string error_;
};

Result<rapidjson::Document> parse_object(std::string_view line) {
  if (line.size() > k_max_line_bytes) return fail("a line of ", line.size(), " bytes, over the ", k_max_line_bytes, " a report writes");
  rapidjson::Document document;
  // Iterative: a line nested a million deep must not run the parser off its stack.
  document.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(line.data(), line.size());
  if (document.HasParseError()) return fail("not JSON (at byte ", document.GetErrorOffset(), ")");
  if (!document.IsObject()) return fail("not a JSON object");
  return document;
}

Result<std::string_view> record_type(const rapidjson::Document& document) {
  if (!document.HasMember("type") || !document["type"].IsString()) return fail("a JSON object with no \"type\"");
  return std::string_view(document["type"].GetString(), document["type"].GetStringLength());
}

/// The lines of one --jsonl file, parsed.
struct ShardFile {
  std::string path;
  RunRecord run;
  std::vector<CaseRecord> records;
};

Result<ShardFile> read_shard_file(const std::string& path) {
  Result<std::vector<std::byte>> bytes = replay::read_regular_file(path, k_max_jsonl_bytes);
  if (!bytes) return bytes.error();
  const std::string_view text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  ShardFile file;
  file.path = path;
  bool have_run = false;
  std::size_t number = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++number;
    if (line.empty()) continue;
    const auto where = [&] { return "'" + path + "' line " + std::to_string(number) + ": "; };
    if (!have_run) {
      Result<RunRecord> run = parse_run_json(line);
      if (!run) return fail(where(), run.error().message, " (a regress --jsonl file begins with its run line)");
      file.run = *run;
      have_run = true;
      continue;
    }
    Result<CaseRecord> record = parse_case_json(line);
    if (!record) return fail(where(), record.error().message);
    if (file.records.size() == file.run.shard_cases) {
      return fail(where(), "a case past the ", file.run.shard_cases, " its run line counts");
    }
    file.records.push_back(std::move(record).value());
  }
  if (!have_run) return fail("'", path, "' is empty: no run line (is it a regress --jsonl file?)");
  return file;
}

}  // namespace

std::string utf8_text(std::string_view text) {
  std::string out;
  each_code_point(text, [&out](std::uint32_t, std::string_view bytes) { out += bytes; });
  return out;
}

std::uint64_t case_list_digest(const std::vector<std::string>& paths) {
  std::string list;
  for (const std::string& p : paths) list += utf8_text(p) + "\n";
  return xxh3_64(std::as_bytes(std::span<const char>(list)));
}

std::string case_line(const CaseRecord& record) {
  const CaseReport& r = record.report;
  if (r.result == RegressResult::unreadable) return "error: " + r.message;
  const char* word = r.result == RegressResult::failed ? "FAIL"
                     : !r.rebaselined.empty()           ? "rebaselined"
                     : r.updated                        ? "updated"
                                                        : "PASS";
  return std::string(word) + " " + record.name + ": " + r.message;
}

std::string run_json(const RunRecord& run) {
  return "{\"type\":\"run\",\"format\":" + std::to_string(k_jsonl_format) + ",\"shard\":" + std::to_string(run.shard.index) +
         ",\"shards\":" + std::to_string(run.shard.count) + ",\"cases\":" + std::to_string(run.cases) +
         ",\"shard_cases\":" + std::to_string(run.shard_cases) + ",\"case_list\":\"" + hash_hex(run.case_list) + "\"}";
}

std::string case_json(const CaseRecord& record) {
  const CaseReport& r = record.report;
  std::string line = "{\"type\":\"case\",\"name\":" + json_string(record.name) + ",\"path\":" + json_string(record.path) +
                     ",\"kind\":" + json_string(r.kind) + ",\"simulation\":" + json_string(r.simulation) +
                     ",\"verdict\":\"" + verdict_name(r) + "\",\"ticks\":" + std::to_string(r.ticks) +
                     ",\"hashes_checked\":" + std::to_string(r.hashes_checked) + ",\"seconds\":" + seconds_text(record.seconds) +
                     ",\"peak_rss_kb\":" + std::to_string(std::max(0L, record.peak_rss_kb)) +
                     ",\"message\":" + json_string(r.message);
  if (!r.rebaselined.empty()) {
    line += ",\"rebaselined\":" + json_string(r.rebaselined);
    if (r.changed) line += ",\"changed_from_tick\":" + std::to_string(r.changed_from_tick);
  }
  if (r.diverged) {
    const CaseDivergence& d = r.divergence;
    line += ",\"divergence\":{\"tick\":" + std::to_string(d.tick) + ",\"expected\":\"" + hash_hex(d.expected) +
            "\",\"actual\":\"" + hash_hex(d.actual) + "\",\"fields_tick\":" + std::to_string(d.fields_tick) + ",\"fields\":[";
    for (std::size_t i = 0; i < d.fields.size() && i < k_case_fields_max; ++i) {
      const CaseField& f = d.fields[i];
      line += std::string(i > 0 ? "," : "") + "{\"path\":" + json_string(f.path) + ",\"expected\":" + json_string(f.expected) +
              ",\"actual\":" + json_string(f.actual) + "}";
    }
    line += "],\"fields_differing\":" + std::to_string(d.fields_differing) + ",\"fields_note\":" + json_string(d.fields_note);
    if (d.phase_known) {
      line += ",\"phase\":{\"tick\":" + std::to_string(d.phase_tick) + ",\"from_tick\":" + std::to_string(d.phase_from_tick) +
              ",\"substep\":" + std::to_string(d.substep + 1ull) + ",\"name\":" + json_string(d.phase) + "}";
    }
    line += "}";
  }
  return line + "}";
}

Result<RunRecord> parse_run_json(std::string_view line) {
  Result<rapidjson::Document> document = parse_object(line);
  if (!document) return document.error();
  Result<std::string_view> type = record_type(*document);
  if (!type) return type.error();
  if (*type != "run") return fail("a \"", std::string(*type), "\" line where the run line belongs");
  Members m(*document, "the run line");
  RunRecord run;
  const std::uint64_t format = m.whole("format");
  run.shard.index = m.whole("shard", k_max_shards - 1);
  run.shard.count = m.whole("shards", k_max_shards);
  run.cases = m.whole("cases");
  run.shard_cases = m.whole("shard_cases");
  run.case_list = m.hash("case_list");
  if (!m.error().empty()) return fail(m.error());
  if (format != k_jsonl_format) return fail("format ", format, ", not this program's ", k_jsonl_format);
  if (run.shard.count == 0 || run.shard.index >= run.shard.count) {
    return fail("shard ", run.shard.index, "/", run.shard.count, " is no shard");
  }
  if (run.shard_cases > run.cases) return fail("a shard of ", run.shard_cases, " cases in a run of ", run.cases);
  return run;
}

Result<CaseRecord> parse_case_json(std::string_view line) {
  Result<rapidjson::Document> document = parse_object(line);
  if (!document) return document.error();
  Result<std::string_view> type = record_type(*document);
  if (!type) return type.error();
  if (*type != "case") return fail("a \"", std::string(*type), "\" line where a case belongs");
  Members m(*document, "the case");
  CaseRecord record;
  CaseReport& r = record.report;
  record.name = m.text("name");
  record.path = m.text("path");
  r.kind = m.text("kind");
  r.simulation = m.text("simulation");
  const std::string verdict = m.text("verdict");
  r.ticks = m.whole("ticks");
  r.hashes_checked = m.whole("hashes_checked");
  record.seconds = m.number("seconds");
  record.peak_rss_kb = static_cast<long>(m.whole("peak_rss_kb", std::uint64_t{1} << 50));
  r.message = m.text("message");
  if (const Json* d = m.optional_object("divergence")) {
    Members dm(*d, "the divergence");
    r.diverged = true;
    r.divergence.tick = dm.whole("tick");
    r.divergence.expected = dm.hash("expected");
    r.divergence.actual = dm.hash("actual");
    r.divergence.fields_tick = dm.whole("fields_tick");
    r.divergence.fields_differing = dm.whole("fields_differing");
    r.divergence.fields_note = dm.text("fields_note");
    if (const Json* fields = dm.array("fields")) {
      if (fields->Size() > k_case_fields_max) return fail("the divergence lists ", fields->Size(), " fields, over ", k_case_fields_max);
      for (const Json& f : fields->GetArray()) {
        if (!f.IsObject()) return fail("a field of the divergence is not an object");
        Members fm(f, "a field");
        CaseField field{fm.text("path"), fm.text("expected"), fm.text("actual")};
        if (!fm.error().empty()) return fail(fm.error());
        r.divergence.fields.push_back(std::move(field));
      }
    }
    if (const Json* phase = dm.optional_object("phase")) {
      Members pm(*phase, "the phase");
      r.divergence.phase_known = true;
      r.divergence.phase_tick = pm.whole("tick");
      r.divergence.phase_from_tick = pm.whole("from_tick");
      const std::uint64_t substep = pm.whole("substep", std::uint64_t{1} << 16);
      r.divergence.phase = pm.text("name");
      if (!pm.error().empty()) return fail(pm.error());
      if (substep == 0) return fail("the phase's substep is 0 (substeps count from 1)");
      if (r.divergence.phase.empty()) return fail("the phase has no name");
      if (r.divergence.phase_from_tick > r.divergence.phase_tick || r.divergence.phase_tick > r.divergence.tick) {
        return fail("the phase's ticks (", r.divergence.phase_from_tick, " to ", r.divergence.phase_tick,
                    ") are not at or before the divergence's ", r.divergence.tick);
      }
      r.divergence.substep = static_cast<std::uint32_t>(substep - 1);
    }
    if (!dm.error().empty()) return fail(dm.error());
  }
  if (!m.error().empty()) return fail(m.error());
  if (record.name.empty() || record.path.empty()) return fail("a case with no name or path");
  if (verdict == "rebaselined") {
    r.result = RegressResult::passed;
    r.rebaselined = m.text("rebaselined");
    r.changed = document->HasMember("changed_from_tick");
    if (r.changed) r.changed_from_tick = m.whole("changed_from_tick");
    if (!m.error().empty()) return fail(m.error());
    if (r.rebaselined.empty()) return fail("a rebaselined case that names no copy");
    if (document->HasMember("divergence")) return fail("a rebaselined case with a divergence");
  } else if (document->HasMember("rebaselined") || document->HasMember("changed_from_tick")) {
    return fail("a ", verdict, " case that names a rebaselined copy");
  } else if (verdict == "passed" || verdict == "updated") {
    r.result = RegressResult::passed;
    r.updated = verdict == "updated";
  } else if (verdict == "failed") {
    r.result = RegressResult::failed;
  } else if (verdict == "unreadable") {
    r.result = RegressResult::unreadable;
  } else {
    return fail("the verdict '", verdict, "' is none of passed, updated, rebaselined, failed and unreadable");
  }
  return record;
}

std::string junit_xml(const std::vector<CaseRecord>& records, const RunRecord& run, double seconds) {
  std::size_t failures = 0;
  std::size_t errors = 0;
  for (const CaseRecord& r : records) {
    failures += r.report.result == RegressResult::failed ? 1 : 0;
    errors += r.report.result == RegressResult::unreadable ? 1 : 0;
  }
  const std::string counts = "tests=\"" + std::to_string(records.size()) + "\" failures=\"" + std::to_string(failures) +
                             "\" errors=\"" + std::to_string(errors) + "\" skipped=\"0\" time=\"" + seconds_text(seconds) + "\"";
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"lockstep regress\" " + counts + ">\n";
  xml += "  <testsuite name=\"lockstep regress\" " + counts + ">\n";
  xml += "    <properties>\n      <property name=\"shard\" value=\"" + std::to_string(run.shard.index) + "/" +
         std::to_string(run.shard.count) + "\"/>\n      <property name=\"case_list\" value=\"" + hash_hex(run.case_list) +
         "\"/>\n    </properties>\n";
  for (const CaseRecord& r : records) {
    const CaseReport& report = r.report;
    xml += "    <testcase name=\"" + xml_text(r.name) + "\" classname=\"regress." + xml_text(report.kind.empty() ? "case" : report.kind) +
           "\" file=\"" + xml_text(r.path) + "\" time=\"" + seconds_text(r.seconds) + "\"";
    if (report.result == RegressResult::passed) {
      xml += "/>\n";
      continue;
    }
    const bool failed = report.result == RegressResult::failed;
    std::string body;
    if (report.diverged) {
      const CaseDivergence& d = report.divergence;
      body = "first divergent tick " + std::to_string(d.tick) + ": expected " + hash_hex(d.expected) + " got " + hash_hex(d.actual) + "\n";
      if (d.phase_known) {
        replay::PhaseDivergence phase;
        phase.tick = d.phase_tick;
        phase.from_tick = d.phase_from_tick;
        phase.substep = d.substep;
        phase.phase = d.phase;
        body += "the runs first part at " + replay::describe(phase) + "\n";
      }
      if (!d.fields.empty()) {
        body += std::to_string(d.fields_differing) + " fields differ at tick " + std::to_string(d.fields_tick) + ":\n";
      }
      for (const CaseField& f : d.fields) body += "  " + f.path + ": expected " + f.expected + " got " + f.actual + "\n";
      if (!d.fields_note.empty()) body += d.fields_note + "\n";
    }
    xml += ">\n      <" + std::string(failed ? "failure" : "error") + " message=\"" + xml_text(report.message) + "\" type=\"" +
           (failed ? (report.diverged ? "divergence" : "failure") : "unreadable") + "\">" + xml_text(body) + "</" +
           (failed ? "failure" : "error") + ">\n    </testcase>\n";
  }
  return xml + "  </testsuite>\n</testsuites>\n";
}

Status write_report_file(const std::string& path, std::string_view text) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(partial, ignored);
      return fail("cannot write '", path, "'");
    }
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    return fail("cannot write '", path, "': ", std::strerror(error));
  }
  return {};
}

Result<MergedRun> merge_runs(const std::vector<std::string>& paths) {
  std::vector<ShardFile> files;
  for (const std::string& path : paths) {
    Result<ShardFile> file = read_shard_file(path);
    if (!file) return file.error();
    files.push_back(std::move(file).value());
  }
  if (files.empty()) return fail("no files to merge");
  const ShardFile& first = files.front();
  std::map<std::uint64_t, const ShardFile*> by_shard;
  for (const ShardFile& f : files) {
    if (f.run.case_list != first.run.case_list || f.run.cases != first.run.cases || f.run.shard.count != first.run.shard.count) {
      return fail("'", f.path, "' is not of the run '", first.path, "' is of (", f.run.shard.count, " shards of ", f.run.cases,
                  " cases, list ", hash_hex(f.run.case_list), ", not ", first.run.shard.count, " of ", first.run.cases, ", list ",
                  hash_hex(first.run.case_list), ")");
    }
    const auto [at, added] = by_shard.emplace(f.run.shard.index, &f);
    if (!added) {
      return fail("shard ", f.run.shard.index, "/", f.run.shard.count, " is in both '", at->second->path, "' and '", f.path, "'");
    }
    if (f.records.size() != f.run.shard_cases) {
      return fail("'", f.path, "' holds ", f.records.size(), " of shard ", f.run.shard.index, "/", f.run.shard.count, "'s ",
                  f.run.shard_cases, " cases: its run did not finish");
    }
  }
  std::string missing;
  std::size_t missing_count = 0;
  for (std::uint64_t i = 0; i < first.run.shard.count; ++i) {
    if (by_shard.count(i) != 0) continue;
    if (++missing_count <= 8) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  }
  if (missing_count > 0) {
    return fail("missing ", missing_count == 1 ? "shard " : "shards ", missing, missing_count > 8 ? ", …" : "", " of ",
                first.run.shard.count, " (", files.size(), " of the run's shards given)");
  }
  MergedRun merged;
  merged.run = first.run;
  merged.run.shard = Shard{0, 1};
  merged.run.shard_cases = first.run.cases;
  for (ShardFile& f : files) {
    for (CaseRecord& r : f.records) merged.records.push_back(std::move(r));
  }
  std::sort(merged.records.begin(), merged.records.end(), [](const CaseRecord& a, const CaseRecord& b) { return a.path < b.path; });
  std::vector<std::string> merged_paths;
  for (std::size_t i = 0; i < merged.records.size(); ++i) {
    if (i > 0 && merged.records[i].path == merged.records[i - 1].path) {
      return fail("the case '", merged.records[i].path, "' is in two shards");
    }
    merged_paths.push_back(merged.records[i].path);
  }
  if (merged.records.size() != first.run.cases || case_list_digest(merged_paths) != first.run.case_list) {
    return fail("the shards' ", merged.records.size(), " cases are not the run's list of ", first.run.cases);
  }
  return merged;
}

}  // namespace lockstep::cli::detail
