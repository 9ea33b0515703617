#include "lockstep/cli/detail/broadcast_follower.hpp"

#include <thread>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/detail/broadcast_spectate.hpp"

namespace lockstep::cli::detail {

namespace {

Result<replay::BroadcastManifest> fetch_manifest(HttpGetter& getter) {
  Result<std::vector<std::byte>> bytes = getter.get(std::string(replay::k_broadcast_manifest_name),
                                                    replay::k_max_manifest_bytes, k_fetch_timeout);
  if (!bytes) return bytes.error();
  Result<replay::BroadcastManifest> manifest = replay::parse_manifest(bytes.value());
  if (!manifest) return fail(getter.base().text(), replay::k_broadcast_manifest_name, ": ", manifest.error().message);
  return manifest;
}

}  // namespace

Result<BroadcastFollower> BroadcastFollower::open(const HttpUrl& url) {
  HttpGetter getter(url);
  const Clock::time_point began = Clock::now();
  // A host that has just started may not have written its manifest yet.
  Result<replay::BroadcastManifest> manifest = fetch_manifest(getter);
  while (!manifest && Clock::now() - began < k_broadcast_silence) {
    std::this_thread::sleep_for(k_manifest_poll);
    manifest = fetch_manifest(getter);
  }
  if (!manifest) return manifest.error();
  Result<std::vector<std::byte>> opening = getter.get(manifest->segment_name(0), manifest->opening_bytes, k_fetch_timeout);
  if (!opening) return opening.error();
  if (opening->size() != manifest->opening_bytes) {
    return fail(url.text(), manifest->segment_name(0), " is ", opening->size(), " bytes, not the ",
                manifest->opening_bytes, " the manifest gives");
  }
  return BroadcastFollower(std::move(getter), std::move(manifest).value(), std::move(opening).value(), Clock::now());
}

Result<bool> BroadcastFollower::refresh() {
  Result<replay::BroadcastManifest> manifest = fetch_manifest(getter_);
  if (!manifest) return false;
  if (manifest->id != manifest_.id) {
    return fail("the broadcast at ", url().text(), " was restarted (its id is now ", manifest->id, ", not ", manifest_.id,
                "): spectate it again");
  }
  manifest_ = std::move(manifest).value();
  return true;
}

Result<std::vector<std::byte>> BroadcastFollower::fetch_checked(std::uint64_t number, const Checker& check) {
  const replay::BroadcastSegment* entry = manifest_.listed(number);
  const std::uint64_t bound = entry != nullptr ? entry->bytes : replay::k_max_segment_bytes;
  const std::string name = manifest_.segment_name(number);
  std::string problem;
  // The second time past any cache: a query string a static server ignores and a cache keys on.
  for (const std::string_view query : {std::string_view(), std::string_view("refetch=1")}) {
    if (!query.empty()) ++refetched_;
    Result<std::vector<std::byte>> bytes = getter_.get(name, bound, k_fetch_timeout, query);
    if (!bytes) {
      problem = bytes.error().message;
      continue;
    }
    Status whole = entry != nullptr && bytes->size() != entry->bytes
                       ? fail("it is ", bytes->size(), " bytes, not the ", entry->bytes, " the manifest gives")
                       : check(bytes.value());
    if (whole) {
      ++fetched_;
      return bytes;
    }
    problem = whole.error().message;
  }
  return fail("segment ", number, " (", url().text(), name, ") failed twice: ", problem);
}

Result<std::optional<std::vector<std::byte>>> BroadcastFollower::next(const Checker& check, Clock::time_point now) {
  const bool out = !manifest_.segments.empty() && next_ <= manifest_.segments.back().number;
  if (!out) {
    if (finished()) return std::optional<std::vector<std::byte>>{};
    if (now - last_progress_ > k_broadcast_silence) {
      return fail("the broadcast at ", url().text(), " has stood still at tick ", manifest_.live_tick(), " for ",
                  k_broadcast_silence.count(), " s (its host stopped, or its files are not reaching this server)");
    }
    if (now - last_poll_ < k_manifest_poll) return std::optional<std::vector<std::byte>>{};
    last_poll_ = now;
    // A manifest that fails to arrive is tried again at the next poll, until the silence ends it.
    if (Result<bool> refreshed = refresh(); !refreshed) return refreshed.error();
    return std::optional<std::vector<std::byte>>{};
  }
  Result<std::vector<std::byte>> segment = fetch_checked(next_, check);
  if (!segment) return segment.error();
  ++next_;
  last_progress_ = now;
  return std::optional<std::vector<std::byte>>(std::move(segment).value());
}

BroadcastStart broadcast_start(BroadcastFollower& follower, bool from_start, std::uint64_t behind_ticks) {
  const std::uint64_t live = follower.manifest().live_tick();
  const std::optional<replay::BroadcastSegment> keyframe =
      from_start ? std::nullopt : follower.manifest().keyframe_at_or_before(live > behind_ticks ? live - behind_ticks : 0);
  const std::span<const std::byte> opening = follower.opening();
  if (!keyframe) {
    Result<replay::ReplayStream> stream = replay::ReplayStream::open(opening);
    if (!stream) throw CommandError{"the broadcast's opening: " + stream.error().message, k_exit_network};
    return {std::move(stream).value(), false};
  }
  Result<std::vector<std::byte>> segment = follower.fetch_checked(keyframe->number, [&](std::span<const std::byte> bytes) {
    Result<replay::ReplayStream> at = replay::ReplayStream::open_at_keyframe(opening, bytes);
    return at ? Status{} : Status(at.error());
  });
  if (!segment) throw CommandError{segment.error().message, k_exit_network};
  Result<replay::ReplayStream> stream = replay::ReplayStream::open_at_keyframe(opening, segment.value());
  if (!stream) throw CommandError{stream.error().message, k_exit_network};
  follower.continue_from(keyframe->number + 1);
  return {std::move(stream).value(), true};
}

}  // namespace lockstep::cli::detail
