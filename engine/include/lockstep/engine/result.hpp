#pragma once
/// Expected failures as values (the second tier of errors; programmer errors are assert.hpp's): a `Result<T>` holds a value or an
/// `Error` with a human-readable, one-line message. g++ 12 has no std::expected.

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace lockstep {

/// A failure with a one-line message meant for a person (no trailing newline, no "error:" prefix).
struct Error {
  std::string message;
};

/// A value of type T or an Error. Test with `ok()` (or `explicit operator bool`) before `value()`.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : data_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  [[nodiscard]] bool ok() const { return data_.index() == 0; }
  explicit operator bool() const { return ok(); }

  [[nodiscard]] T& value() & { assert(ok()); return std::get<0>(data_); }
  [[nodiscard]] const T& value() const& { assert(ok()); return std::get<0>(data_); }
  [[nodiscard]] T&& value() && { assert(ok()); return std::get<0>(std::move(data_)); }
  [[nodiscard]] const Error& error() const { assert(!ok()); return std::get<1>(data_); }

  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Error> data_;
};

/// Success or an Error, for operations that produce nothing.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT: implicit by design

  [[nodiscard]] bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  [[nodiscard]] const Error& error() const { assert(failed_); return error_; }

 private:
  Error error_;
  bool failed_ = false;
};

/// Builds an Error from pieces: `fail("body ", 17, " is not finite")`.
template <class... Parts>
Error fail(const Parts&... parts) {
  std::string message;
  auto append = [&message](const auto& part) {
    if constexpr (std::is_convertible_v<decltype(part), std::string_view>) {
      message += std::string_view(part);
    } else {
      message += std::to_string(part);
    }
  };
  (append(parts), ...);
  return Error{std::move(message)};
}

}  // namespace lockstep
