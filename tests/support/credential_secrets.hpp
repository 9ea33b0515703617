#pragma once
// A credential secret for tests, distinct per `first` byte (invites and tokens of a test host).

#include <cstddef>
#include <cstdint>

#include "lockstep/net/wire/packet_protection.hpp"

namespace lockstep::testing {

inline net::CredentialSecret secret_of(std::uint8_t first) {
  net::CredentialSecret s{};
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::byte>(first + 5 * i);
  return s;
}

}  // namespace lockstep::testing
