#include "lockstep/replay/field_report.hpp"

namespace lockstep::replay {

std::vector<FieldDifference> compare_fields(const std::vector<Field>& a, const std::vector<Field>& b) {
  std::vector<FieldDifference> out;
  // Same shape (the usual case): compare in step, no lookups.
  bool same_paths = a.size() == b.size();
  for (std::size_t i = 0; same_paths && i < a.size(); ++i) same_paths = a[i].path == b[i].path;
  if (same_paths) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].value != b[i].value) out.push_back({a[i].path, a[i].value, b[i].value});
    }
    return out;
  }
  std::map<std::string, std::string> in_b;
  for (const Field& f : b) in_b.emplace(f.path, f.value);
  for (const Field& f : a) {
    auto it = in_b.find(f.path);
    if (it == in_b.end()) {
      out.push_back({f.path, f.value, "(absent)"});
    } else {
      if (it->second != f.value) out.push_back({f.path, f.value, it->second});
      in_b.erase(it);
    }
  }
  for (const Field& f : b) {
    if (in_b.count(f.path) > 0) out.push_back({f.path, "(absent)", f.value});
  }
  return out;
}

}  // namespace lockstep::replay
