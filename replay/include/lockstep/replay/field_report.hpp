#pragma once
/// Field-level comparison of two states: every arithmetic value a state's `serialize` visits is
/// listed with its path ("state.pos_x[17]"), and two lists are compared path by path. This is
/// what turns "the hashes differ at tick 812" into "body 18's x differs: 412.5984… vs 412.5985…".

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <cereal/cereal.hpp>
#include <cereal/types/common.hpp>

#include "lockstep/engine/bounded_vector.hpp"

namespace lockstep::replay {

/// One value of a state and where it sits.
struct Field {
  std::string path;
  std::string value;
};

/// A cereal output archive that lists every arithmetic value with its path. Names come from
/// name-value pairs; unnamed values are "value0", "value1", …; array elements are "[i]".
class FieldListArchive : public cereal::OutputArchive<FieldListArchive> {
 public:
  FieldListArchive() : cereal::OutputArchive<FieldListArchive>(this) { nodes_.push_back({"", false, 0}); }

  void name_next(const char* name) { next_name_ = name; }
  void start_node() {
    const std::string path = child_path();
    nodes_.push_back({path, false, 0});
  }
  void finish_node() {
    if (nodes_.size() > 1) nodes_.pop_back();
  }
  void make_array() { nodes_.back().is_array = true; }
  template <class T>
  void write(T value) {
    char text[64];
    if constexpr (std::is_same_v<T, bool>) {
      std::snprintf(text, sizeof text, "%s", value ? "true" : "false");
    } else if constexpr (std::is_floating_point_v<T>) {
      std::snprintf(text, sizeof text, "%.17g", static_cast<double>(value));
    } else if constexpr (std::is_signed_v<T>) {
      std::snprintf(text, sizeof text, "%lld", static_cast<long long>(value));
    } else {
      std::snprintf(text, sizeof text, "%llu", static_cast<unsigned long long>(value));
    }
    fields.push_back({child_path(), text});
  }

  std::vector<Field> fields;

 private:
  struct Node {
    std::string path;
    bool is_array;
    std::uint64_t children;
  };
  std::string child_path() {
    Node& node = nodes_.back();
    std::string segment;
    if (node.is_array) {
      segment = "[" + std::to_string(node.children) + "]";
    } else {
      const std::string name = next_name_ != nullptr ? next_name_ : "value" + std::to_string(node.children);
      segment = node.path.empty() ? name : "." + name;
    }
    next_name_ = nullptr;
    ++node.children;
    return node.path + segment;
  }
  std::vector<Node> nodes_;
  const char* next_name_ = nullptr;
};

namespace detail {
template <class T>
struct is_nvp : std::false_type {};
template <class T>
struct is_nvp<cereal::NameValuePair<T>> : std::true_type {};
template <class T>
struct is_size_tag : std::false_type {};
template <class T>
struct is_size_tag<cereal::SizeTag<T>> : std::true_type {};
template <class T>
constexpr bool is_field_node = std::is_class_v<T> && !is_nvp<T>::value && !is_size_tag<T>::value;
}  // namespace detail

template <class T>
void prologue(FieldListArchive& ar, const T&) {
  if constexpr (detail::is_field_node<T>) ar.start_node();
}
template <class T>
void epilogue(FieldListArchive& ar, const T&) {
  if constexpr (detail::is_field_node<T>) ar.finish_node();
}
template <class T>
void CEREAL_SAVE_FUNCTION_NAME(FieldListArchive& ar, const cereal::NameValuePair<T>& nvp) {
  ar.name_next(nvp.name);
  ar(nvp.value);
}
template <class T>
void CEREAL_SAVE_FUNCTION_NAME(FieldListArchive& ar, const cereal::SizeTag<T>&) {
  ar.make_array();
}
template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_SAVE_FUNCTION_NAME(FieldListArchive& ar, const T& value) {
  ar.write(value);
}

/// Every field of the state at `tick`, as paths "tick" and "state.…".
template <class State>
std::vector<Field> list_fields(std::uint64_t tick, const State& state) {
  FieldListArchive archive;
  archive(cereal::make_nvp("tick", tick), cereal::make_nvp("state", state));
  return std::move(archive.fields);
}

/// A field whose values differ (or that only one side has: its value there is "(absent)").
struct FieldDifference {
  std::string path;
  std::string a;
  std::string b;
};

/// The fields that differ between two lists, in the order of the first list, then those only
/// the second has.
std::vector<FieldDifference> compare_fields(const std::vector<Field>& a, const std::vector<Field>& b);

}  // namespace lockstep::replay

CEREAL_REGISTER_ARCHIVE(lockstep::replay::FieldListArchive)
