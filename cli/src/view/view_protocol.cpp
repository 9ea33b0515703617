#include "lockstep/cli/view/view_protocol.hpp"

#include <algorithm>
#include <cstdio>

#include "lockstep/engine/byte_io.hpp"
#include "lockstep/engine/std_compat.hpp"

namespace lockstep::cli::view {
namespace {

constexpr std::uint8_t k_frames_message = 1;
constexpr std::uint16_t k_no_player = 0xFFFF;
/// Bytes of a shape, and of a world's part of a frame besides its inputs and shapes.
constexpr std::size_t k_shape_bytes = 1 + 1 + 2 + 4 * 4;
constexpr std::size_t k_world_bytes = 8 + 1 + 4 * 4 + 4;

void f32(ByteWriter& out, double value) { out.u32(lockstep::bit_cast<std::uint32_t>(static_cast<float>(value))); }
float f32(ByteReader& in) { return lockstep::bit_cast<float>(in.u32()); }

}  // namespace

Result<Request> decode_request(std::span<const std::byte> message) {
  if (message.empty()) return fail("an empty message");
  if (message.size() > k_max_request_bytes) return fail("a message of ", message.size(), " bytes (at most ", k_max_request_bytes, ")");
  ByteReader in(message);
  const std::uint8_t kind = in.u8();
  if (kind == static_cast<std::uint8_t>(RequestKind::frames)) {
    FramesRequest request;
    request.from_tick = in.u64();
    request.count = in.u16();
    if (!in.at_end()) return fail("a frames request is 11 bytes, not ", message.size());
    if (request.count == 0 || request.count > k_max_frames_per_request) {
      return fail("a frames request for ", request.count, " frames (1 to ", k_max_frames_per_request, ")");
    }
    return Request{request};
  }
  if (kind == static_cast<std::uint8_t>(RequestKind::keys)) {
    KeysRequest request;
    request.keys = in.u8();
    if (!in.at_end()) return fail("a keys message is 2 bytes, not ", message.size());
    if ((request.keys & ~k_all_keys) != 0) return fail("keys with undefined bits ", unsigned{request.keys});
    return Request{request};
  }
  return fail("unknown message kind ", unsigned{kind});
}

std::vector<std::byte> encode_request(const Request& request) {
  std::vector<std::byte> bytes;
  ByteWriter out(bytes);
  if (const auto* frames = std::get_if<FramesRequest>(&request)) {
    out.u8(static_cast<std::uint8_t>(RequestKind::frames));
    out.u64(frames->from_tick);
    out.u16(frames->count);
  } else {
    out.u8(static_cast<std::uint8_t>(RequestKind::keys));
    out.u8(std::get<KeysRequest>(request).keys);
  }
  return bytes;
}

void FrameBatchWriter::begin(std::uint8_t worlds, std::uint16_t players, std::uint16_t input_bytes) {
  out_.clear();
  frames_ = 0;
  players_ = players;
  input_bytes_ = input_bytes;
  ByteWriter out(out_);
  out.u8(k_frames_message);
  out.u8(worlds);
  out.u16(players);
  out.u16(input_bytes);
  out.u32(0);  // frames: written by bytes()
}

void FrameBatchWriter::begin_frame(std::uint64_t tick) {
  ByteWriter(out_).u64(tick);
  ++frames_;
}

void FrameBatchWriter::add_world(std::uint64_t hash, std::uint8_t flags, std::span<const std::byte> inputs,
                                 const DrawList& draw, std::span<const std::uint8_t> differs) {
  ByteWriter out(out_);
  out.u64(hash);
  out.u8(flags);
  const std::size_t input_size = std::size_t{players_} * input_bytes_;
  for (std::size_t i = 0; i < input_size; ++i) out.u8(i < inputs.size() ? std::to_integer<std::uint8_t>(inputs[i]) : 0);
  f32(out, draw.min_x);
  f32(out, draw.min_y);
  f32(out, draw.max_x);
  f32(out, draw.max_y);
  const auto shapes = static_cast<std::uint32_t>(std::min<std::size_t>(draw.shapes.size(), k_max_shapes));
  out.u32(shapes);
  out_.reserve(out_.size() + shapes * k_shape_bytes);
  for (std::uint32_t i = 0; i < shapes; ++i) {
    const Shape& s = draw.shapes[i];
    out.u8(static_cast<std::uint8_t>(s.kind));
    out.u8(i < differs.size() && differs[i] != 0 ? static_cast<std::uint8_t>(ShapeFlags::differs) : 0);
    out.u16(s.player < k_no_player ? static_cast<std::uint16_t>(s.player) : k_no_player);
    const bool round = s.kind == ShapeKind::body || s.kind == ShapeKind::fixed_body || s.kind == ShapeKind::player;
    f32(out, s.x0);
    f32(out, s.y0);
    f32(out, round ? s.radius : s.x1);
    f32(out, round ? 0.0 : s.y1);
  }
}

void FrameBatchWriter::add_absent_world() {
  static const DrawList k_nothing;
  add_world(0, static_cast<std::uint8_t>(WorldFlags::absent), {}, k_nothing);
}

const std::vector<std::byte>& FrameBatchWriter::bytes() {
  for (int i = 0; i < 4; ++i) out_[6 + static_cast<std::size_t>(i)] = static_cast<std::byte>((frames_ >> (8 * i)) & 0xFFu);
  return out_;
}

Result<FrameBatch> decode_frame_batch(std::span<const std::byte> message) {
  ByteReader in(message);
  if (in.u8() != k_frames_message || !in.ok()) return fail("not a frame batch");
  const std::uint8_t worlds = in.u8();
  FrameBatch batch;
  batch.players = in.u16();
  batch.input_bytes = in.u16();
  const std::uint32_t frames = in.u32();
  if (!in.ok() || worlds < 1 || worlds > k_max_view_worlds) return fail("a frame batch header is malformed");
  const std::size_t input_size = std::size_t{batch.players} * batch.input_bytes;
  const std::size_t least_frame = 8 + worlds * (k_world_bytes + input_size);
  if (frames > in.remaining() / least_frame) return fail("a frame batch claims ", frames, " frames in ", in.remaining(), " bytes");
  batch.frames.resize(frames);
  for (DecodedFrame& frame : batch.frames) {
    frame.tick = in.u64();
    frame.worlds.resize(worlds);
    for (DecodedWorld& world : frame.worlds) {
      world.hash = in.u64();
      world.flags = in.u8();
      const std::span<const std::byte> inputs = in.bytes(input_size);
      world.inputs.assign(inputs.begin(), inputs.end());
      world.min_x = f32(in), world.min_y = f32(in), world.max_x = f32(in), world.max_y = f32(in);
      const std::uint32_t shapes = in.u32();
      if (!in.ok() || shapes > k_max_shapes || shapes > in.remaining() / k_shape_bytes) {
        return fail("a frame of tick ", frame.tick, " claims more shapes than its bytes hold");
      }
      world.shapes.resize(shapes);
      for (DecodedShape& shape : world.shapes) {
        const std::uint8_t kind = in.u8();
        if (kind == 0 || kind > k_last_shape_kind) return fail("a shape of unknown kind ", unsigned{kind});
        shape.kind = static_cast<ShapeKind>(kind);
        shape.flags = in.u8();
        shape.player = in.u16();
        shape.a = f32(in), shape.b = f32(in), shape.c = f32(in), shape.d = f32(in);
      }
    }
  }
  if (!in.at_end()) return fail("a frame batch is truncated or has trailing bytes");
  return batch;
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      out += '?';  // a text message must be valid UTF-8, which a file name need not be
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace lockstep::cli::view
