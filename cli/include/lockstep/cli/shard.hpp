#pragma once
/// Which share of the regression cases one machine runs: `regress --shard I/N`, or the shard the
/// scheduler that launched the program names in its environment (Kubernetes Indexed Jobs, Slurm
/// job arrays, GoogleTest-style sharding, GitLab parallel jobs). A case's shard comes from its
/// name alone, so adding a case moves no other.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "lockstep/engine/result.hpp"

namespace lockstep::cli {

/// Shards a run may be cut into at most.
inline constexpr std::uint64_t k_max_shards = 1'000'000;

struct Shard {
  std::uint64_t index = 0;  ///< from 0
  std::uint64_t count = 1;
  friend bool operator==(const Shard&, const Shard&) = default;
};

/// "I/N": decimal digits, 0 <= I < N <= k_max_shards.
Result<Shard> parse_shard(std::string_view text);

/// A shard, and what named it ("--shard", or the variables it came from), for the line
/// `regress` prints on stderr.
struct ShardChoice {
  Shard shard;
  std::string source;
  /// GoogleTest's GTEST_SHARD_STATUS_FILE when set: touched to say sharding is understood.
  std::string status_file;
};

/// One environment variable's value, or nothing when unset (std::getenv in a program).
using Environment = std::function<std::optional<std::string>(const std::string& name)>;

/// The shard the environment names, the first of: LOCKSTEP_SHARD=I/N; JOB_COMPLETION_INDEX (a
/// Kubernetes Indexed Job) with the count in LOCKSTEP_SHARDS; SLURM_ARRAY_TASK_ID with
/// SLURM_ARRAY_TASK_COUNT, less SLURM_ARRAY_TASK_MIN and over SLURM_ARRAY_TASK_STEP when set;
/// GTEST_SHARD_INDEX with GTEST_TOTAL_SHARDS; CI_NODE_INDEX (from 1) with CI_NODE_TOTAL (GitLab).
/// Nothing when none is set; an error naming the variable when one is set but its shard is not
/// whole (a bad number, a missing count, an index out of range).
Result<std::optional<ShardChoice>> shard_from_environment(const Environment& environment);

/// Whether the case named `name` (its path relative to the folder searched, with '/') is in
/// `shard`: XXH3-64 of the name, modulo the count.
[[nodiscard]] bool in_shard(std::string_view name, const Shard& shard);

}  // namespace lockstep::cli
