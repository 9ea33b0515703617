#include "lockstep/cli/shard.hpp"

#include <charconv>

#include <xxhash.h>

namespace lockstep::cli {

namespace {

/// Decimal digits only, no sign, no leading zero (but "0"), no overflow.
std::optional<std::uint64_t> whole(std::string_view text) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

Result<Shard> make_shard(std::uint64_t index, std::uint64_t count, const std::string& what) {
  if (count < 1 || count > k_max_shards) return fail(what, ": the shard count must be 1 to ", k_max_shards, ", not ", count);
  if (index >= count) return fail(what, ": shard ", index, " of ", count, " (shards are 0 to ", count - 1, ")");
  return Shard{index, count};
}

/// The variable's value as a whole number, or an error naming it.
Result<std::uint64_t> number_in(const Environment& env, const std::string& name) {
  const std::optional<std::string> value = env(name);
  if (!value) return fail(name, " is not set");
  const std::optional<std::uint64_t> n = whole(*value);
  if (!n) return fail(name, "='", *value, "' is not a whole number");
  return *n;
}

/// A scheduler's index and count variables: the index as given, the count, and a description.
Result<std::optional<ShardChoice>> indexed(const Environment& env, const std::string& index_name,
                                           const std::string& count_name) {
  if (!env(index_name)) return std::optional<ShardChoice>{};
  Result<std::uint64_t> index = number_in(env, index_name);
  if (!index) return index.error();
  Result<std::uint64_t> count = number_in(env, count_name);
  if (!count) return fail(count.error().message, " (", index_name, " is)");
  Result<Shard> shard = make_shard(*index, *count, index_name);
  if (!shard) return shard.error();
  return std::optional<ShardChoice>{ShardChoice{*shard, index_name + "=" + std::to_string(*index) + " of " + count_name +
                                                            "=" + std::to_string(*count), {}}};
}

Result<std::optional<ShardChoice>> from_slurm(const Environment& env) {
  if (!env("SLURM_ARRAY_TASK_ID")) return std::optional<ShardChoice>{};
  Result<std::uint64_t> id = number_in(env, "SLURM_ARRAY_TASK_ID");
  if (!id) return id.error();
  Result<std::uint64_t> count = number_in(env, "SLURM_ARRAY_TASK_COUNT");
  if (!count) return fail(count.error().message, " (SLURM_ARRAY_TASK_ID is)");
  std::uint64_t min = 0;
  std::uint64_t step = 1;
  if (env("SLURM_ARRAY_TASK_MIN")) {
    Result<std::uint64_t> m = number_in(env, "SLURM_ARRAY_TASK_MIN");
    if (!m) return m.error();
    min = *m;
  }
  if (env("SLURM_ARRAY_TASK_STEP")) {
    Result<std::uint64_t> s = number_in(env, "SLURM_ARRAY_TASK_STEP");
    if (!s || *s == 0) return fail("SLURM_ARRAY_TASK_STEP='", *env("SLURM_ARRAY_TASK_STEP"), "' is not a step");
    step = *s;
  }
  if (*id < min || (*id - min) % step != 0) {
    return fail("SLURM_ARRAY_TASK_ID=", *id, " is not in the array from SLURM_ARRAY_TASK_MIN=", min, " by ", step);
  }
  Result<Shard> shard = make_shard((*id - min) / step, *count, "SLURM_ARRAY_TASK_ID");
  if (!shard) return shard.error();
  return std::optional<ShardChoice>{ShardChoice{*shard, "SLURM_ARRAY_TASK_ID=" + std::to_string(*id) + " of SLURM_ARRAY_TASK_COUNT=" +
                                                            std::to_string(*count) + " from " + std::to_string(min), {}}};
}

}  // namespace

Result<Shard> parse_shard(std::string_view text) {
  const std::size_t slash = text.find('/');
  const std::optional<std::uint64_t> index = slash == std::string_view::npos ? std::nullopt : whole(text.substr(0, slash));
  const std::optional<std::uint64_t> count = slash == std::string_view::npos ? std::nullopt : whole(text.substr(slash + 1));
  if (!index || !count) return fail("'", text, "' is not a shard I/N (I from 0 to N - 1)");
  return make_shard(*index, *count, "'" + std::string(text) + "'");
}

Result<std::optional<ShardChoice>> shard_from_environment(const Environment& env) {
  if (const std::optional<std::string> text = env("LOCKSTEP_SHARD")) {
    Result<Shard> shard = parse_shard(*text);
    if (!shard) return fail("LOCKSTEP_SHARD: ", shard.error().message);
    return std::optional<ShardChoice>{ShardChoice{*shard, "LOCKSTEP_SHARD=" + *text, {}}};
  }
  if (env("JOB_COMPLETION_INDEX")) return indexed(env, "JOB_COMPLETION_INDEX", "LOCKSTEP_SHARDS");
  if (env("SLURM_ARRAY_TASK_ID")) return from_slurm(env);
  if (env("GTEST_SHARD_INDEX")) {
    Result<std::optional<ShardChoice>> choice = indexed(env, "GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS");
    if (choice && *choice) (*choice)->status_file = env("GTEST_SHARD_STATUS_FILE").value_or("");
    return choice;
  }
  if (env("CI_NODE_INDEX")) {
    // GitLab counts its parallel jobs from 1.
    Result<std::uint64_t> node = number_in(env, "CI_NODE_INDEX");
    if (!node) return node.error();
    if (*node == 0) return fail("CI_NODE_INDEX=0: GitLab's nodes count from 1");
    Result<std::uint64_t> total = number_in(env, "CI_NODE_TOTAL");
    if (!total) return fail(total.error().message, " (CI_NODE_INDEX is)");
    Result<Shard> shard = make_shard(*node - 1, *total, "CI_NODE_INDEX");
    if (!shard) return shard.error();
    return std::optional<ShardChoice>{
        ShardChoice{*shard, "CI_NODE_INDEX=" + std::to_string(*node) + " of CI_NODE_TOTAL=" + std::to_string(*total), {}}};
  }
  return std::optional<ShardChoice>{};
}

bool in_shard(std::string_view name, const Shard& shard) {
  return XXH3_64bits(name.data(), name.size()) % shard.count == shard.index;
}

}  // namespace lockstep::cli
