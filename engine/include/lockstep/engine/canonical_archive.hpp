#pragma once
/// The canonical encoding of simulation state, as a pair of cereal archives.
///
/// One `serialize` function per state type drives everything: snapshots are its canonical bytes,
/// the per-tick hash is XXH3 over the same bytes (streamed, never materialised), and the field
/// report dumps it through cereal's JSON archive. So the hash covers exactly what a snapshot
/// holds, by construction.
///
/// The encoding: every arithmetic value as its fixed width in little-endian order (bool as one
/// byte 0 or 1, floating point as its IEEE-754 bits), sizes as uint64, no padding, no names.
/// State types must use fixed-width integers (never size_t or long) so the bytes are the same on
/// every platform.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include <cereal/cereal.hpp>
#include <cereal/types/common.hpp>

#include "lockstep/engine/float_determinism.hpp"
#include "lockstep/engine/std_compat.hpp"

namespace lockstep {

/// Where a CanonicalOutputArchive puts its bytes.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void write(const std::byte* data, std::size_t size) = 0;
};

/// Appends to a byte vector.
class VectorSink final : public ByteSink {
 public:
  explicit VectorSink(std::vector<std::byte>& out) : out_(&out) {}
  void write(const std::byte* data, std::size_t size) override {
    out_->insert(out_->end(), data, data + size);
  }

 private:
  std::vector<std::byte>* out_;
};

namespace detail {

template <class T>
constexpr void check_canonical_type() {
  static_assert(std::is_arithmetic_v<T>, "canonical encoding covers arithmetic values only");
  static_assert(!std::is_floating_point_v<T> ||
                    (std::numeric_limits<T>::is_iec559 && (sizeof(T) == 4 || sizeof(T) == 8)),
                "only IEEE-754 float and double have a canonical encoding (no long double)");
}

/// The value's bits as an unsigned integer of the same width.
template <class T>
constexpr auto to_bits(T value) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<std::uint8_t>(value ? 1 : 0);
  } else if constexpr (sizeof(T) == 1) {
    return bit_cast<std::uint8_t>(value);
  } else if constexpr (sizeof(T) == 2) {
    return bit_cast<std::uint16_t>(value);
  } else if constexpr (sizeof(T) == 4) {
    return bit_cast<std::uint32_t>(value);
  } else {
    static_assert(sizeof(T) == 8);
    return bit_cast<std::uint64_t>(value);
  }
}

template <class T>
void store_le(std::byte* out, T value) {
  auto bits = to_bits(value);
  for (std::size_t i = 0; i < sizeof(bits); ++i) {
    out[i] = static_cast<std::byte>(bits & 0xFFu);
    if constexpr (sizeof(bits) > 1) bits = static_cast<decltype(bits)>(bits >> 8);
  }
}

}  // namespace detail

/// Writes the canonical encoding into a ByteSink.
class CanonicalOutputArchive
    : public cereal::OutputArchive<CanonicalOutputArchive, cereal::AllowEmptyClassElision> {
 public:
  explicit CanonicalOutputArchive(ByteSink& sink)
      : cereal::OutputArchive<CanonicalOutputArchive, cereal::AllowEmptyClassElision>(this),
        sink_(&sink) {}

  template <class T>
  void write_value(T value) {
    detail::check_canonical_type<T>();
    std::byte bytes[sizeof(T)];
    detail::store_le(bytes, value);
    sink_->write(bytes, sizeof(T));
  }

  /// An array of `count` values: on a little-endian host, memory already holds the canonical
  /// bytes, so they go to the sink in one piece (this is what keeps hashing at memory speed).
  template <class T>
  void write_array(const T* values, std::size_t count) {
    detail::check_canonical_type<T>();
    if (count == 0) return;
    if constexpr (std::endian::native == std::endian::little && !std::is_same_v<T, bool>) {
      sink_->write(reinterpret_cast<const std::byte*>(values), count * sizeof(T));
    } else {
      for (std::size_t i = 0; i < count; ++i) write_value(values[i]);
    }
  }

 private:
  ByteSink* sink_;
};

/// Reads the canonical encoding from a span of untrusted bytes. Reading past the end throws
/// cereal::Exception; callers catch it at the adapter edge and turn it into an Error.
class CanonicalInputArchive
    : public cereal::InputArchive<CanonicalInputArchive, cereal::AllowEmptyClassElision> {
 public:
  explicit CanonicalInputArchive(std::span<const std::byte> bytes)
      : cereal::InputArchive<CanonicalInputArchive, cereal::AllowEmptyClassElision>(this),
        bytes_(bytes) {}

  template <class T>
  void read_value(T& value) {
    detail::check_canonical_type<T>();
    const std::byte* in = take(sizeof(T));
    std::uint64_t wide = 0;
    for (std::size_t i = sizeof(T); i-- > 0;) wide = (wide << 8) | std::to_integer<std::uint64_t>(in[i]);
    const auto bits = static_cast<decltype(detail::to_bits(T{}))>(wide);
    if constexpr (std::is_same_v<T, bool>) {
      if (bits > 1) throw cereal::Exception("a boolean byte is neither 0 nor 1");
      value = bits == 1;
    } else {
      value = bit_cast<T>(bits);
    }
  }

  template <class T>
  void read_array(T* values, std::size_t count) {
    detail::check_canonical_type<T>();
    if (count > remaining() / sizeof(T)) throw cereal::Exception("array runs past the end");
    if (count == 0) return;  // an empty vector's data() may be null, which memcpy must not see
    if constexpr (std::endian::native == std::endian::little && !std::is_same_v<T, bool>) {
      std::memcpy(values, take(count * sizeof(T)), count * sizeof(T));
    } else {
      for (std::size_t i = 0; i < count; ++i) read_value(values[i]);
    }
  }

  /// Bytes not yet read: lets a reader bound a count before it allocates.
  [[nodiscard]] std::size_t remaining() const { return bytes_.size() - offset_; }
  [[nodiscard]] std::size_t offset() const { return offset_; }

 private:
  const std::byte* take(std::size_t size) {
    if (size > remaining()) throw cereal::Exception("truncated: value runs past the end");
    const std::byte* at = bytes_.data() + offset_;
    offset_ += size;
    return at;
  }

  std::span<const std::byte> bytes_;
  std::size_t offset_ = 0;
};

// cereal glue, found by argument-dependent lookup on the archive type.

template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_SAVE_FUNCTION_NAME(CanonicalOutputArchive& ar,
                                                                    const T& value) {
  ar.write_value(value);
}

template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_LOAD_FUNCTION_NAME(CanonicalInputArchive& ar,
                                                                    T& value) {
  ar.read_value(value);
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(CanonicalOutputArchive& ar, cereal::NameValuePair<T>& nvp) {
  ar(nvp.value);
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(CanonicalInputArchive& ar, cereal::NameValuePair<T>& nvp) {
  ar(nvp.value);
}

template <class T>
void CEREAL_SAVE_FUNCTION_NAME(CanonicalOutputArchive& ar, const cereal::SizeTag<T>& tag) {
  ar.write_value(static_cast<std::uint64_t>(tag.size));
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(CanonicalInputArchive& ar, cereal::SizeTag<T>& tag) {
  std::uint64_t size = 0;
  ar.read_value(size);
  using Size = std::remove_reference_t<decltype(tag.size)>;
  if (size > std::numeric_limits<Size>::max()) throw cereal::Exception("size out of range");
  tag.size = static_cast<Size>(size);
}

namespace detail {

/// How many elements a cereal::BinaryData spans. cereal counts bytes in a uint64; where size_t is
/// narrower (32-bit targets) a count that does not fit cannot describe memory, so it is refused.
template <class T>
std::size_t binary_count(const cereal::BinaryData<T>& data) {
  using Element = std::remove_cv_t<std::remove_pointer_t<std::remove_reference_t<T>>>;
  if constexpr (sizeof(std::size_t) < sizeof(data.size)) {
    if (data.size > std::numeric_limits<std::size_t>::max()) throw cereal::Exception("binary data larger than memory");
  }
  return static_cast<std::size_t>(data.size) / sizeof(Element);
}

}  // namespace detail

template <class T>
void CEREAL_SAVE_FUNCTION_NAME(CanonicalOutputArchive& ar, const cereal::BinaryData<T>& data) {
  using Element = std::remove_cv_t<std::remove_pointer_t<std::remove_reference_t<T>>>;
  ar.write_array(static_cast<const Element*>(data.data), detail::binary_count(data));
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(CanonicalInputArchive& ar, cereal::BinaryData<T>& data) {
  using Element = std::remove_cv_t<std::remove_pointer_t<std::remove_reference_t<T>>>;
  ar.read_array(static_cast<Element*>(data.data), detail::binary_count(data));
}

}  // namespace lockstep

CEREAL_REGISTER_ARCHIVE(lockstep::CanonicalOutputArchive)
CEREAL_REGISTER_ARCHIVE(lockstep::CanonicalInputArchive)
CEREAL_SETUP_ARCHIVE_TRAITS(lockstep::CanonicalInputArchive, lockstep::CanonicalOutputArchive)
