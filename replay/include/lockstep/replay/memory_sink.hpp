#pragma once
/// A ReplaySink that keeps the replay in memory: a replay to send or to put in a bundle rather
/// than in a file of its own.

#include <cstddef>
#include <span>
#include <vector>

#include "lockstep/replay/replay_sink.hpp"

namespace lockstep::replay {

class MemorySink final : public ReplaySink {
 public:
  /// The replay's bytes are appended to `out`, which outlives the sink.
  explicit MemorySink(std::vector<std::byte>& out) : out_(&out) {}
  Status write(std::span<const std::byte> bytes, const WrittenChunks&) override {
    out_->insert(out_->end(), bytes.begin(), bytes.end());
    return {};
  }
  Status close() override { return {}; }

 private:
  std::vector<std::byte>* out_;
};

}  // namespace lockstep::replay
