#pragma once
/// How a keyframe's snapshot is stored: whole (the file's first keyframe, and any whose size
/// differs from it), or as its difference from the file's first keyframe — the two XORed, the
/// bytes regrouped by their place in each 8-byte word (so the sign and exponent bytes of doubles
/// that barely moved, which XOR to zero, lie together), and runs of zero bytes coded by their
/// length. A state that moves little costs little; a state that moves everywhere costs about
/// half its size. Decoding is bounded: the output is exactly the declared size, which is the
/// first keyframe's, a snapshot the file holds whole.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/engine/result.hpp"

namespace lockstep::replay {

enum class KeyframeEncoding : std::uint8_t {
  whole = 0,      ///< the snapshot's bytes
  from_first = 1, ///< the difference from the file's first keyframe, zero runs coded
};

/// Appends the difference of `snapshot` from `first` (the same size) to `out`.
void encode_keyframe_delta(std::span<const std::byte> snapshot, std::span<const std::byte> first,
                           std::vector<std::byte>& out);

/// Rebuilds a snapshot from `first` and the code encode_keyframe_delta made; fails, naming the
/// fault, on a code that does not produce exactly first.size() bytes from all of its own.
Result<std::vector<std::byte>> decode_keyframe_delta(std::span<const std::byte> code, std::span<const std::byte> first);

}  // namespace lockstep::replay
