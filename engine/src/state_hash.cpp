#include "lockstep/engine/state_hash.hpp"

// Header-only: the lockstep_xxhash target defines XXH_INLINE_ALL, which also exposes XXH3_state_t.
#include <xxhash.h>

namespace lockstep {

struct Xxh3Sink::State {
  XXH3_state_t xxh;
};

Xxh3Sink::Xxh3Sink() : state_(std::make_unique<State>()) { reset(); }

Xxh3Sink::~Xxh3Sink() = default;

void Xxh3Sink::reset() { XXH3_64bits_reset(&state_->xxh); }

void Xxh3Sink::write(const std::byte* data, std::size_t size) {
  XXH3_64bits_update(&state_->xxh, data, size);
}

std::uint64_t Xxh3Sink::digest() const { return XXH3_64bits_digest(&state_->xxh); }

std::uint64_t xxh3_64(std::span<const std::byte> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

}  // namespace lockstep
