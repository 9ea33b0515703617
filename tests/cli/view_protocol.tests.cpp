// The viewer's WebSocket messages: requests decode only when whole and in range, and frame
// batches round-trip and refuse counts their bytes cannot hold.

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "lockstep/cli/view/view_protocol.hpp"
#include "lockstep/engine/byte_io.hpp"

using namespace lockstep;
using namespace lockstep::cli;

namespace {

std::vector<std::byte> bytes_of(std::initializer_list<unsigned> values) {
  std::vector<std::byte> out;
  for (unsigned v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

DrawList two_shapes() {
  DrawList draw;
  draw.min_x = -10, draw.min_y = 0, draw.max_x = 1280, draw.max_y = 720;
  draw.circle(ShapeKind::player, "body", 3, 100.5, 200.25, 12, 1);
  draw.segment(ShapeKind::rope, "rope link", 1, 1, 2, 3, 4);
  return draw;
}

}  // namespace

TEST_CASE("view requests round-trip", "[cli][view]") {
  const view::Request frames = view::FramesRequest{123456789012ull, 240};
  const view::Request keys = view::KeysRequest{static_cast<std::uint8_t>(view::KeyBits::up) | 16u};
  for (const view::Request& request : {frames, keys}) {
    Result<view::Request> decoded = view::decode_request(view::encode_request(request));
    REQUIRE(decoded.ok());
    CHECK(decoded.value() == request);
  }
  CHECK(view::encode_request(frames).size() == 11);
}

TEST_CASE("view requests that are empty, truncated, padded, out of range or of unknown kind are refused",
          "[cli][view][hostile]") {
  std::vector<std::byte> good = view::encode_request(view::FramesRequest{5, 10});
  SECTION("empty") { CHECK_FALSE(view::decode_request({}).ok()); }
  SECTION("truncated") {
    for (std::size_t n = 1; n < good.size(); ++n) CHECK_FALSE(view::decode_request(std::span(good).first(n)).ok());
  }
  SECTION("a byte too many") {
    good.push_back(std::byte{0});
    CHECK_FALSE(view::decode_request(good).ok());
  }
  SECTION("zero frames, and more than a batch may hold") {
    for (const std::uint16_t count : {std::uint16_t{0}, std::uint16_t{view::k_max_frames_per_request + 1}, std::uint16_t{0xFFFF}}) {
      CHECK_FALSE(view::decode_request(view::encode_request(view::FramesRequest{5, count})).ok());
    }
    CHECK(view::decode_request(view::encode_request(view::FramesRequest{5, view::k_max_frames_per_request})).ok());
  }
  SECTION("keys with undefined bits") {
    CHECK_FALSE(view::decode_request(bytes_of({2, 0x20})).ok());
    CHECK_FALSE(view::decode_request(bytes_of({2, 0xFF})).ok());
    CHECK(view::decode_request(bytes_of({2, view::k_all_keys})).ok());
  }
  SECTION("unknown kinds") {
    for (unsigned kind : {0u, 3u, 255u}) CHECK_FALSE(view::decode_request(bytes_of({kind, 0})).ok());
  }
  SECTION("longer than any request") {
    std::vector<std::byte> big(view::k_max_request_bytes + 1, std::byte{1});
    Result<view::Request> decoded = view::decode_request(big);
    REQUIRE_FALSE(decoded.ok());
    CHECK_THAT(decoded.error().message, Catch::Contains("at most 64"));
  }
}

TEST_CASE("a frame batch round-trips ticks, hashes, inputs, shapes and their marks", "[cli][view]") {
  view::FrameBatchWriter writer;
  writer.begin(2, 2, 2);
  const DrawList draw = two_shapes();
  const std::vector<std::byte> inputs = bytes_of({1, 0, 8, 0});
  const std::vector<std::uint8_t> differs = {0, 1};
  writer.begin_frame(600);
  writer.add_world(0x0123456789ABCDEFull, static_cast<std::uint8_t>(view::WorldFlags::hash_recorded), inputs, draw, differs);
  writer.add_absent_world();
  writer.begin_frame(601);
  writer.add_world(7, 0, inputs, draw);
  writer.add_world(8, 0, inputs, draw);
  Result<view::FrameBatch> batch = view::decode_frame_batch(writer.bytes());
  REQUIRE(batch.ok());
  REQUIRE(batch->frames.size() == 2);
  CHECK(batch->players == 2);
  const view::DecodedFrame& first = batch->frames[0];
  CHECK(first.tick == 600);
  CHECK(first.worlds[0].hash == 0x0123456789ABCDEFull);
  CHECK(first.worlds[0].flags == static_cast<std::uint8_t>(view::WorldFlags::hash_recorded));
  CHECK(first.worlds[0].inputs == inputs);
  CHECK(first.worlds[0].min_x == -10.0f);
  CHECK(first.worlds[0].max_y == 720.0f);
  REQUIRE(first.worlds[0].shapes.size() == 2);
  const view::DecodedShape& circle = first.worlds[0].shapes[0];
  CHECK(circle.kind == ShapeKind::player);
  CHECK(circle.player == 1);
  CHECK(circle.flags == 0);
  CHECK(circle.a == 100.5f);
  CHECK(circle.b == 200.25f);
  CHECK(circle.c == 12.0f);
  const view::DecodedShape& rope = first.worlds[0].shapes[1];
  CHECK(rope.kind == ShapeKind::rope);
  CHECK(rope.flags == static_cast<std::uint8_t>(view::ShapeFlags::differs));
  CHECK(rope.player == 0xFFFF);
  CHECK((rope.a == 1.0f && rope.b == 2.0f && rope.c == 3.0f && rope.d == 4.0f));
  CHECK(first.worlds[1].flags == static_cast<std::uint8_t>(view::WorldFlags::absent));
  CHECK(first.worlds[1].shapes.empty());
  CHECK(batch->frames[1].tick == 601);
  CHECK(batch->frames[1].worlds[1].hash == 8);
}

TEST_CASE("a frame batch whose counts its bytes cannot hold is refused before anything is allocated",
          "[cli][view][hostile]") {
  view::FrameBatchWriter writer;
  writer.begin(1, 1, 2);
  writer.begin_frame(1);
  writer.add_world(1, 0, bytes_of({0, 0}), two_shapes());
  const std::vector<std::byte> good = writer.bytes();
  REQUIRE(view::decode_frame_batch(good).ok());
  SECTION("every truncation") {
    for (std::size_t n = 0; n < good.size(); ++n) CHECK_FALSE(view::decode_frame_batch(std::span(good).first(n)).ok());
  }
  SECTION("a trailing byte") {
    std::vector<std::byte> padded = good;
    padded.push_back(std::byte{0});
    CHECK_FALSE(view::decode_frame_batch(padded).ok());
  }
  SECTION("four billion frames") {
    std::vector<std::byte> claim = good;
    for (int i = 0; i < 4; ++i) claim[6 + static_cast<std::size_t>(i)] = std::byte{0xFF};
    CHECK_FALSE(view::decode_frame_batch(claim).ok());
  }
  SECTION("four billion shapes") {
    std::vector<std::byte> claim = good;
    const std::size_t shapes_at = 10 + 8 + 8 + 1 + 2 + 16;  // header, tick, hash, flags, inputs, box
    for (int i = 0; i < 4; ++i) claim[shapes_at + static_cast<std::size_t>(i)] = std::byte{0xFF};
    CHECK_FALSE(view::decode_frame_batch(claim).ok());
  }
  SECTION("65,535 players of 65,535-byte inputs") {
    std::vector<std::byte> claim = good;
    for (std::size_t i = 2; i < 6; ++i) claim[i] = std::byte{0xFF};
    CHECK_FALSE(view::decode_frame_batch(claim).ok());
  }
  SECTION("a shape of no known kind, and a batch of three worlds") {
    std::vector<std::byte> kind = good;
    kind[10 + 8 + 8 + 1 + 2 + 16 + 4] = std::byte{0};
    CHECK_FALSE(view::decode_frame_batch(kind).ok());
    std::vector<std::byte> worlds = good;
    worlds[1] = std::byte{3};
    CHECK_FALSE(view::decode_frame_batch(worlds).ok());
  }
}

TEST_CASE("json_string escapes quotes, backslashes and control bytes, and keeps text messages UTF-8",
          "[cli][view]") {
  CHECK(view::json_string("a \"b\" \\ c") == "\"a \\\"b\\\" \\\\ c\"");
  CHECK(view::json_string(std::string("x\ny\x01", 4)) == "\"x\\u000ay\\u0001\"");
  CHECK(view::json_string("caf\xC3\xA9") == "\"caf??\"");
}
