#include <cerrno>
#include <cstring>
#include <system_error>

#include "lockstep/cli/detail/export_command.hpp"

#include "lockstep/cli/numbers.hpp"
#include "lockstep/engine/tick_limit.hpp"

namespace lockstep::cli::detail {
namespace {

/// A field path without the "state." every path starts with.
std::string_view short_path(std::string_view path) {
  constexpr std::string_view k_root = "state.";
  return path.starts_with(k_root) ? path.substr(k_root.size()) : path;
}

/// `pos_x` names pos_x[0], pos_x[1] …; `params` names params.*; a whole path names itself.
bool names(std::string_view name, std::string_view path) {
  path = short_path(path);
  if (!path.starts_with(name)) return false;
  return path.size() == name.size() || path[name.size()] == '[' || path[name.size()] == '.';
}

/// A value as JSON: numbers as they are, anything else (nan, inf) as a string.
std::string json_value(const std::string& value) {
  const bool number = !value.empty() && value.find_first_not_of("0123456789+-.e") == std::string::npos;
  if (number || value == "true" || value == "false") return value;
  return "\"" + value + "\"";
}

}  // namespace

ExportSink::ExportSink(const std::string& output, const std::string& replay_path) : name_(output) {
  if (output.empty() || output == "-") {
    name_.clear();
    return;
  }
  std::error_code error;
  if (std::filesystem::equivalent(output, replay_path, error)) {
    throw CommandError{"--output names the replay being exported, '" + replay_path + "'"};
  }
  file_ = std::fopen(output.c_str(), "wb");
  if (file_ == nullptr) throw CommandError{"cannot write '" + output + "': " + std::strerror(errno)};
}

ExportSink::~ExportSink() {
  if (file_ != stdout) std::fclose(file_);
}

void ExportSink::finish() {
  if (std::fflush(file_) != 0 || std::ferror(file_) != 0) {
    throw CommandError{"failed writing the export to " + (name_.empty() ? std::string("stdout") : "'" + name_ + "'")};
  }
}

std::vector<const replay::Field*> ExportFormat::select(const std::vector<replay::Field>& fields) const {
  std::vector<const replay::Field*> kept;
  std::vector<bool> used(names_.size(), false);
  for (const replay::Field& field : fields) {
    if (field.path == "tick") continue;  // the row's own tick
    bool keep = names_.empty();
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (names(names_[i], field.path)) keep = used[i] = true;
    }
    if (keep) kept.push_back(&field);
  }
  // Every name must name something in the first row; later states may hold fewer values.
  for (std::size_t i = 0; i < names_.size() && !first_row_done_; ++i) {
    if (!used[i]) {
      throw CommandError{"--fields: the state has no value named '" + names_[i] +
                         "' (names are those of info --fields on a snapshot, without 'state.')"};
    }
  }
  return kept;
}

std::string ExportFormat::row(std::uint64_t tick, std::uint64_t hash, const std::vector<std::string>& inputs,
                              const std::vector<replay::Field>& fields) {
  const std::vector<const replay::Field*> kept = select(fields);
  first_row_done_ = true;
  std::string out;
  if (!csv_) {
    out = "{\"tick\":" + std::to_string(tick) + ",\"hash\":\"" + hash_hex(hash) + "\"";
    if (with_inputs_) {
      out += ",\"inputs\":";
      if (inputs.empty()) out += "null";
      for (std::size_t p = 0; p < inputs.size(); ++p) out += (p == 0 ? "[\"" : ",\"") + inputs[p] + "\"";
      if (!inputs.empty()) out += "]";
    }
    out += ",\"fields\":{";
    for (std::size_t i = 0; i < kept.size(); ++i) {
      out += (i == 0 ? "\"" : ",\"") + kept[i]->path + "\":" + json_value(kept[i]->value);
    }
    return out + "}}\n";
  }
  if (!header_written_) {
    header_written_ = true;
    out = "tick,hash";
    if (with_inputs_) {
      for (std::size_t p = 0; p < players_; ++p) out += ",input" + std::to_string(p);
    }
    for (const replay::Field* field : kept) {
      columns_.push_back(field->path);
      out += "," + field->path;
    }
    out += "\n";
  }
  bool same = kept.size() == columns_.size();
  for (std::size_t i = 0; same && i < kept.size(); ++i) same = kept[i]->path == columns_[i];
  if (!same) {
    throw CommandError{"the state's values at tick " + std::to_string(tick) +
                       " are not those of the first exported tick, so they do not fit CSV columns (--format jsonl "
                       "writes them)"};
  }
  out += std::to_string(tick) + "," + hash_hex(hash);
  if (with_inputs_) {
    for (std::size_t p = 0; p < players_; ++p) out += "," + (p < inputs.size() ? inputs[p] : std::string());
  }
  for (const replay::Field* field : kept) out += "," + field->value;
  return out + "\n";
}

CLI::App* add_export_options(CLI::App& app, ExportOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "export", "Re-simulate a replay and write every K-th tick's hash, inputs and state values (JSON lines or CSV)");
  cmd->add_option("file", options.path, "The replay file")->required();
  options.from_option =
      cmd->add_option("--from-tick", options.from_tick, "First tick to export (default: the replay's first)")
          ->check(whole_number());
  options.to_option =
      cmd->add_option("--to-tick", options.to_tick, "Last tick to export (default: the replay's last)")->check(whole_number());
  cmd->add_option("--every", options.every,
                  "Export every K-th tick from the first (default " + std::to_string(options.every) + ")")
      ->check(whole_number(1, k_tick_limit - 1));
  cmd->add_option("--format", options.format, "jsonl (default: one JSON object a line) or csv")
      ->check(CLI::IsMember({"jsonl", "csv"}));
  cmd->add_flag("--inputs", options.inputs, "Also each player's input that led to the tick (hex of its bytes)");
  cmd->add_option("--fields", options.fields,
                  "Only these values, by name: pos_x keeps every state.pos_x[i], pos_x[3] one, params all of "
                  "state.params (comma-separated; default all)")
      ->delimiter(',');
  cmd->add_option("--output,-o", options.output, "Write to FILE instead of stdout");
  cmd->add_flag("--force", options.force, "Export even if the replay's simulation compatibility id differs from this build's");
  add_max_state_option(cmd, options.max_state_mb);
  return cmd;
}

}  // namespace lockstep::cli::detail
