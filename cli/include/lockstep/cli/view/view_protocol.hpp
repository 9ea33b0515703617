#pragma once
/// The viewer's WebSocket protocol (`lockstep view`, `play`, `--view`): what a page asks for and
/// the frames it is sent, as explicit little-endian binary messages. The page's own decoder is in
/// cli/src/view/page/viewer.js; this one is the server's, and any other client's.
///
/// Page → server, one binary message each, at most k_max_request_bytes:
///   frames   u8 1, u64 from_tick, u16 count (1 … k_max_frames_per_request)
///   keys     u8 2, u8 keys (KeyBits: the keys the player holds now)
/// Server → page: a JSON text message first (the session's description), then binary frame
/// batches (encode below) and further JSON text messages (status, errors).
///
/// A frame batch:
///   u8 1, u8 worlds (1 to k_max_view_worlds), u16 players, u16 input_bytes, u32 frames, then per frame:
///     u64 tick, then per world:
///       u64 hash, u8 WorldFlags, players × input_bytes inputs,
///       f32 min_x, min_y, max_x, max_y, u32 shapes, then per shape:
///         u8 ShapeKind, u8 ShapeFlags, u16 player (0xFFFF: none), f32 a, b, c, d
///   (a circle is x, y, radius, 0; a segment or rectangle x0, y0, x1, y1). Floats are for drawing
///   only: nothing deterministic is ever computed from them.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "lockstep/cli/draw_list.hpp"
#include "lockstep/engine/result.hpp"

namespace lockstep::cli::view {

/// Bounds on what a page may send and what one answer may hold.
inline constexpr std::size_t k_max_request_bytes = 64;
inline constexpr std::uint32_t k_max_frames_per_request = 240;
/// A batch stops growing past this many bytes (but always holds at least one frame).
inline constexpr std::size_t k_max_batch_bytes = 8u << 20;
/// Shapes drawn per world and frame; a state with more is drawn in part (the first ones).
inline constexpr std::uint32_t k_max_shapes = 1u << 20;
/// A replay, two compared, or an evidence bundle's host group and up to 15 others.
inline constexpr std::uint8_t k_max_view_worlds = 16;

enum class RequestKind : std::uint8_t { frames = 1, keys = 2 };

/// The frames of ticks from_tick, from_tick + 1, … (count of them, fewer at the end).
struct FramesRequest {
  std::uint64_t from_tick = 0;
  std::uint16_t count = 1;
  friend bool operator==(const FramesRequest&, const FramesRequest&) = default;
};

/// Keys a player holds, sampled by the server once per tick.
enum class KeyBits : std::uint8_t { up = 1, left = 2, right = 4, down = 8, action = 16 };
inline constexpr std::uint8_t k_all_keys = 31;

struct KeysRequest {
  std::uint8_t keys = 0;  ///< KeyBits or-ed together
  friend bool operator==(const KeysRequest&, const KeysRequest&) = default;
};

using Request = std::variant<FramesRequest, KeysRequest>;

/// Decodes one message from a page: the whole message, nothing after it, every field in range.
[[nodiscard]] Result<Request> decode_request(std::span<const std::byte> message);
[[nodiscard]] std::vector<std::byte> encode_request(const Request& request);

/// Per world, in each frame.
enum class WorldFlags : std::uint8_t {
  hash_recorded = 1,   ///< the file holds this tick's hash
  hash_mismatch = 2,   ///< and re-simulation did not reproduce it
  absent = 4,          ///< this world has no state at this tick (nothing else follows but zeros)
  not_drawable = 8,    ///< the simulation has no draw hook
  y_up = 16,           ///< +y points up the screen (DrawList::y_down false)
};

/// Per shape.
enum class ShapeFlags : std::uint8_t {
  differs = 1,  ///< differs from the other world (from the first divergence on)
};

/// Writes one frame batch (the layout above) into a buffer it reuses.
class FrameBatchWriter {
 public:
  void begin(std::uint8_t worlds, std::uint16_t players, std::uint16_t input_bytes);
  void begin_frame(std::uint64_t tick);
  /// One world's part of the frame; `differs` (empty, or non-zero per shape that differs: from
  /// the first world, or for the first from any other) marks shapes.
  void add_world(std::uint64_t hash, std::uint8_t flags, std::span<const std::byte> inputs, const DrawList& draw,
                 std::span<const std::uint8_t> differs = {});
  void add_absent_world();
  /// The finished batch.
  [[nodiscard]] const std::vector<std::byte>& bytes();
  [[nodiscard]] std::uint32_t frames() const { return frames_; }
  [[nodiscard]] std::size_t size() const { return out_.size(); }

 private:
  std::vector<std::byte> out_;
  std::uint32_t frames_ = 0;
  std::uint16_t players_ = 0;
  std::uint16_t input_bytes_ = 0;
};

/// A decoded frame batch (for clients and tests; the page has its own decoder).
struct DecodedShape {
  ShapeKind kind = ShapeKind::body;
  std::uint8_t flags = 0;
  std::uint16_t player = 0xFFFF;
  float a = 0, b = 0, c = 0, d = 0;
};
struct DecodedWorld {
  std::uint64_t hash = 0;
  std::uint8_t flags = 0;
  std::vector<std::byte> inputs;
  float min_x = 0, min_y = 0, max_x = 0, max_y = 0;
  std::vector<DecodedShape> shapes;
};
struct DecodedFrame {
  std::uint64_t tick = 0;
  std::vector<DecodedWorld> worlds;
};
struct FrameBatch {
  std::uint16_t players = 0;
  std::uint16_t input_bytes = 0;
  std::vector<DecodedFrame> frames;
};

/// Decodes a batch from untrusted bytes: every count is checked against the bytes left before
/// anything is allocated for it.
[[nodiscard]] Result<FrameBatch> decode_frame_batch(std::span<const std::byte> message);

/// `text` as a JSON string literal, quotes included: control characters escaped, bytes above
/// 0x7F as '?' (a WebSocket text message must be UTF-8; a file name need not be).
[[nodiscard]] std::string json_string(std::string_view text);

}  // namespace lockstep::cli::view
