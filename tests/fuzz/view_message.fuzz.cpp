// libFuzzer target for the viewer's messages: a page's request (what the server decodes from any
// client) and a frame batch (what a client decodes), each round-tripped when it decodes.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/cli/view/view_protocol.hpp"

namespace {

void check(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  namespace view = lockstep::cli::view;
  if (auto request = view::decode_request(bytes); request.ok()) {
    check(view::encode_request(request.value()) == std::vector<std::byte>(bytes.begin(), bytes.end()));
  }
  if (auto batch = view::decode_frame_batch(bytes); batch.ok()) {
    // Every frame decoded takes bytes: a batch never holds more frames than its size allows.
    check(batch->frames.size() <= size / 8);
  }
  return 0;
}
