#pragma once
// Following a live broadcast (`host --broadcast DIR`, served by any web server) for `lockstep
// spectate http://…/`: its manifest polled, its opening and segments fetched in order, each
// checked before it is used and fetched once more (past any cache) when it arrived damaged. What
// it fetches is untrusted and bounded: the manifest by k_max_manifest_bytes, a listed segment by
// the size the manifest gives, any other by k_max_segment_bytes. Needs no simulation type: the
// caller's checker (ReplayStream::check) says whether a segment is whole.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/cli/detail/http_get.hpp"
#include "lockstep/engine/result.hpp"
#include "lockstep/replay/broadcast_manifest.hpp"

namespace lockstep::cli::detail {

/// How long a broadcast may stand still (no new segment, or no answer) before a viewer gives up.
inline constexpr std::chrono::seconds k_broadcast_silence{15};
/// How often the manifest is fetched again while the next segment is not out yet.
inline constexpr std::chrono::milliseconds k_manifest_poll{500};
/// How long one fetch may take.
inline constexpr std::chrono::seconds k_fetch_timeout{10};

class BroadcastFollower {
 public:
  using Clock = std::chrono::steady_clock;
  /// Whether a fetched segment is whole (ReplayStream::check), or why not.
  using Checker = std::function<Status(std::span<const std::byte>)>;

  /// Fetches the manifest (waiting up to k_broadcast_silence for one to appear) and the opening.
  static Result<BroadcastFollower> open(const HttpUrl& url);

  [[nodiscard]] const replay::BroadcastManifest& manifest() const { return manifest_; }
  [[nodiscard]] const std::vector<std::byte>& opening() const { return opening_; }
  [[nodiscard]] const HttpUrl& url() const { return getter_.base(); }

  /// The next segment fetched is `number` (1 after the opening).
  void continue_from(std::uint64_t number) { next_ = number; }

  /// The next segment, fetched and checked with `check` (fetched again past any cache when it
  /// fails, and an error when it fails again); nothing when it is not out yet (the manifest is
  /// polled every k_manifest_poll meanwhile). An error too when the broadcast has stood still for
  /// k_broadcast_silence, or was restarted under another id.
  Result<std::optional<std::vector<std::byte>>> next(const Checker& check, Clock::time_point now);
  /// Fetches segment `number` and checks it as next() does (for the keyframe segment to start at).
  Result<std::vector<std::byte>> fetch_checked(std::uint64_t number, const Checker& check);

  /// Every segment of the broadcast has been fetched (its end is in the last).
  [[nodiscard]] bool finished() const { return manifest_.finished_before(next_); }
  /// The number of the next segment next() fetches.
  [[nodiscard]] std::uint64_t next_number() const { return next_; }
  [[nodiscard]] std::uint64_t segments_fetched() const { return fetched_; }
  [[nodiscard]] std::uint64_t segments_refetched() const { return refetched_; }
  [[nodiscard]] std::uint64_t bytes_received() const { return getter_.bytes_received(); }

 private:
  BroadcastFollower(HttpGetter getter, replay::BroadcastManifest manifest, std::vector<std::byte> opening, Clock::time_point now)
      : getter_(std::move(getter)), manifest_(std::move(manifest)), opening_(std::move(opening)), last_progress_(now),
        last_poll_(now) {}
  /// Fetches the manifest again: true when it came, false when it did not (tried again at the
  /// next poll); an error when it names another broadcast (a new id).
  Result<bool> refresh();

  HttpGetter getter_;
  replay::BroadcastManifest manifest_;
  std::vector<std::byte> opening_;
  std::uint64_t next_ = 1;
  std::uint64_t fetched_ = 0;
  std::uint64_t refetched_ = 0;
  Clock::time_point last_progress_;  ///< when a segment last arrived
  Clock::time_point last_poll_;      ///< when the manifest was last fetched
};

}  // namespace lockstep::cli::detail
