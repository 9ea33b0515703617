#pragma once
/// XXH3-64 over the canonical encoding of a state (see canonical_archive.hpp), streamed straight
/// from the state's arrays without building the byte string.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "lockstep/engine/canonical_archive.hpp"

namespace lockstep {

/// A ByteSink that feeds XXH3-64 (seed 0). Reusable: `reset()` starts a new hash. Owns its
/// hashing state on the heap (XXH3's state is large and wants 64-byte alignment).
class Xxh3Sink final : public ByteSink {
 public:
  Xxh3Sink();
  ~Xxh3Sink() override;
  Xxh3Sink(const Xxh3Sink&) = delete;
  Xxh3Sink& operator=(const Xxh3Sink&) = delete;

  void reset();
  void write(const std::byte* data, std::size_t size) override;
  [[nodiscard]] std::uint64_t digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// XXH3-64 (seed 0) of a byte string, one shot.
std::uint64_t xxh3_64(std::span<const std::byte> bytes);

/// The canonical bytes of one or more serialisable values, in order.
template <class... T>
std::vector<std::byte> canonical_bytes(const T&... values) {
  std::vector<std::byte> out;
  VectorSink sink(out);
  CanonicalOutputArchive archive(sink);
  archive(values...);
  return out;
}

/// XXH3-64 of `canonical_bytes(values...)`, computed without materialising the bytes.
template <class... T>
std::uint64_t canonical_hash(Xxh3Sink& sink, const T&... values) {
  sink.reset();
  CanonicalOutputArchive archive(sink);
  archive(values...);
  return sink.digest();
}

template <class... T>
std::uint64_t canonical_hash(const T&... values) {
  Xxh3Sink sink;
  return canonical_hash(sink, values...);
}

}  // namespace lockstep
