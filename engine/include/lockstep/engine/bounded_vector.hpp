#pragma once
/// Serialises a std::vector with a bound on its length that loading checks before it allocates:
/// `archive(cereal::make_nvp("pos_x", bounded(pos_x_, k_max_bodies)))`.
///
/// cereal's own vector support resizes to whatever count the bytes claim; with untrusted bytes
/// that is an unbounded allocation. This wrapper rejects a count over the named bound, and with
/// the canonical archive also a count the remaining bytes cannot possibly hold.

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <cereal/cereal.hpp>

#include "lockstep/engine/canonical_archive.hpp"

namespace lockstep {

template <class T>
struct BoundedVector {
  std::vector<T>* values;
  std::uint64_t max_count;
};

/// Wraps `values` for serialisation with at most `max_count` elements.
template <class T>
BoundedVector<T> bounded(std::vector<T>& values, std::uint64_t max_count) {
  return {&values, max_count};
}

template <class Archive, class T>
void CEREAL_SAVE_FUNCTION_NAME(Archive& archive, const BoundedVector<T>& wrapped) {
  const std::vector<T>& values = *wrapped.values;
  archive(cereal::make_size_tag(static_cast<std::uint64_t>(values.size())));
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool> &&
                cereal::traits::is_output_serializable<cereal::BinaryData<const T*>, Archive>::value) {
    archive(cereal::binary_data(values.data(), values.size() * sizeof(T)));
  } else {
    for (const T& value : values) archive(value);
  }
}

template <class Archive, class T>
void CEREAL_LOAD_FUNCTION_NAME(Archive& archive, BoundedVector<T>& wrapped) {
  std::uint64_t count = 0;
  archive(cereal::make_size_tag(count));
  if (count > wrapped.max_count) {
    throw cereal::Exception("an array of " + std::to_string(count) + " exceeds its bound of " +
                            std::to_string(wrapped.max_count));
  }
  if constexpr (std::is_same_v<Archive, CanonicalInputArchive> && std::is_arithmetic_v<T>) {
    if (count > archive.remaining() / sizeof(T)) {
      throw cereal::Exception("an array of " + std::to_string(count) +
                              " runs past the end of the data");
    }
  }
  std::vector<T>& values = *wrapped.values;
  values.resize(static_cast<std::size_t>(count));
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool> &&
                cereal::traits::is_input_serializable<cereal::BinaryData<T*>, Archive>::value) {
    archive(cereal::binary_data(values.data(), values.size() * sizeof(T)));
  } else {
    for (T& value : values) archive(value);
  }
}

}  // namespace lockstep
