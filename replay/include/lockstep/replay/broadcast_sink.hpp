#pragma once
/// A live broadcast: a recording written as it is made into a directory that any static web
/// server (or a cache or CDN in front of one) serves to any number of viewers. Each piece the
/// writer hands over becomes an immutable segment file, written aside and renamed into place so
/// that no server ever serves half of one; then the manifest is replaced the same way. Segment
/// 0 is the opening (preamble, header, start snapshot); the segments in number order, after it,
/// are the recording itself (replay/FORMAT.md, "Broadcast").

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "lockstep/engine/result.hpp"
#include "lockstep/replay/broadcast_manifest.hpp"
#include "lockstep/replay/replay_sink.hpp"

namespace lockstep::replay {

class BroadcastSink final : public ReplaySink {
 public:
  /// Broadcasts into `dir`, made when missing. A new broadcast there has a new id, so its segment
  /// names never meet an earlier one's (which may sit in caches); the manifest is replaced.
  static Result<std::unique_ptr<BroadcastSink>> create(const std::string& dir, std::uint32_t tick_rate_hz);

  Status write(std::span<const std::byte> bytes, const WrittenChunks& what) override;
  Status close() override { return {}; }
  [[nodiscard]] std::uint64_t max_piece_bytes() const override { return k_max_segment_bytes; }

  [[nodiscard]] const BroadcastManifest& manifest() const { return manifest_; }
  [[nodiscard]] const std::string& dir() const { return dir_; }

 private:
  BroadcastSink(std::string dir, BroadcastManifest manifest) : dir_(std::move(dir)), manifest_(std::move(manifest)) {}
  /// Writes `bytes` to `name` in the directory, aside first and then renamed into place.
  Status publish(const std::string& name, std::span<const std::byte> bytes) const;

  std::string dir_;
  BroadcastManifest manifest_;
  std::uint64_t next_number_ = 0;  ///< 0 until the opening is written
};

}  // namespace lockstep::replay
