#pragma once
// Fetching a live broadcast's files over HTTP (Boost.Beast): `lockstep spectate http://…/`. What
// comes back is untrusted: every body is bounded before it is read, every wait is bounded, and
// every failure is one line naming the file.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/engine/result.hpp"

namespace lockstep::cli::detail {

/// A broadcast's address: http://HOST[:PORT]/PATH/ (the directory the files are in).
struct HttpUrl {
  std::string host;
  std::string port = "80";
  std::string path = "/";  ///< starts and ends with '/'

  [[nodiscard]] std::string text() const;
};

/// Whether `text` names a broadcast (an http:// or https:// address) rather than a host's UDP port.
bool is_broadcast_url(std::string_view text);

/// Parses http://HOST[:PORT][/PATH]; a path without a final '/' gets one (it names a directory).
/// Refuses https:// (fetch it through a plain-HTTP cache, or serve plain HTTP: said so), user
/// info, a query or fragment, a port out of range, and characters that are not a URL's.
Result<HttpUrl> parse_http_url(std::string_view text);

/// GETs files of one server, a connection each, within a deadline each.
class HttpGetter {
 public:
  explicit HttpGetter(HttpUrl base);

  /// The body of `name` (relative to the base path; `query` appended when not empty), if the
  /// server answers 200 within `timeout` (resolving the host included) and the body is at most
  /// `max_bytes`. Errors:
  /// "http://…/name: HTTP 404", "… is over the N-byte bound", "… timed out", "… cannot connect: …".
  Result<std::vector<std::byte>> get(const std::string& name, std::uint64_t max_bytes,
                                     std::chrono::milliseconds timeout, std::string_view query = {});

  [[nodiscard]] const HttpUrl& base() const { return base_; }
  /// Bytes of bodies received so far.
  [[nodiscard]] std::uint64_t bytes_received() const { return bytes_received_; }

 private:
  HttpUrl base_;
  std::uint64_t bytes_received_ = 0;
};

}  // namespace lockstep::cli::detail
