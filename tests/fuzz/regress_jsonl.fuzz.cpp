// libFuzzer target for the lines `regress merge` reads back from --jsonl files: a line that parses
// as a case or a run writes back to a line that parses to the same values (the writer escapes
// whatever bytes a parsed string holds).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lockstep/cli/detail/regress_reports.hpp"

namespace {

void check(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  namespace detail = lockstep::cli::detail;
  if (auto record = detail::parse_case_json(line); record.ok()) {
    auto again = detail::parse_case_json(detail::case_json(record.value()));
    check(again.ok());
    check(again->name == record->name && again->path == record->path && again->report.message == record->report.message);
    check(again->report.result == record->report.result && again->report.ticks == record->report.ticks);
    check(again->report.divergence.fields.size() == record->report.divergence.fields.size());
    check(detail::junit_xml({record.value()}, detail::RunRecord{}, 0).size() > 0);
  }
  if (auto run = detail::parse_run_json(line); run.ok()) {
    auto again = detail::parse_run_json(detail::run_json(run.value()));
    check(again.ok() && again->case_list == run->case_list && again->shard == run->shard && again->cases == run->cases);
  }
  return 0;
}
