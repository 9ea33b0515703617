// Credentials on their own: invite codes round-trip and refuse damage in one line; connect tokens
// open only under their key, whole, in their format, with their grant.

#include <catch2/catch.hpp>

#include <string>

#include "lockstep/net/credentials/connect_token.hpp"
#include "lockstep/net/credentials/invite_code.hpp"

using namespace lockstep::net;

namespace {

template <std::size_t N>
std::array<std::byte, N> pattern(std::size_t first) {
  std::array<std::byte, N> a{};
  for (std::size_t i = 0; i < N; ++i) a[i] = static_cast<std::byte>(first + 13 * i);
  return a;
}

}  // namespace

TEST_CASE("an invite code round-trips, and any damage to it is refused in one line", "[net][crypto][invite]") {
  REQUIRE(crypto_ready());
  const Invite invite{Role::spectator, pattern<32>(1), pattern<32>(2)};
  const std::string code = invite_code(invite);
  CHECK(code.rfind("LK6-", 0) == 0);
  CHECK(code.size() == 4 + 90);  // 67 bytes in base64url without padding
  CHECK(code.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", 4) == std::string::npos);
  const lockstep::Result<Invite> back = parse_invite_code("  " + code + "\n");
  REQUIRE(back.ok());
  CHECK(back->role == Role::spectator);
  CHECK(back->host_key == invite.host_key);
  CHECK(back->secret == invite.secret);
  CHECK(parse_invite_code(invite_code({Role::player, invite.host_key, invite.secret}))->role == Role::player);
  // Every character changed, and every truncation, is refused (the checksum catches what base64
  // alone would not), each with one line and no newline.
  std::size_t refused = 0;
  for (std::size_t i = 4; i < code.size(); ++i) {
    std::string typo = code;
    typo[i] = typo[i] == 'A' ? 'B' : 'A';
    const lockstep::Result<Invite> r = parse_invite_code(typo);
    if (!r.ok()) {
      ++refused;
      CHECK(r.error().message.find('\n') == std::string::npos);
    }
  }
  CHECK(refused == code.size() - 4);
  for (std::size_t n = 0; n < code.size(); ++n) CHECK_FALSE(parse_invite_code(code.substr(0, n)).ok());
  CHECK_FALSE(parse_invite_code(code + "A").ok());
  CHECK_THAT(parse_invite_code("hello").error().message, Catch::Contains("is not a lockstep invite code"));
}

TEST_CASE("a connect token opens under its key alone, with its grant and secret", "[net][crypto][token]") {
  REQUIRE(crypto_ready());
  const TokenKey key = pattern<32>(7);
  const TokenGrant grant{Role::player, 2, 1'900'000'000, 42, 0xC11E};
  const ConnectToken token = mint_token(key, grant, pattern<k_token_random_bytes>(9));
  CHECK(token.grant == grant);
  const std::optional<OpenedToken> opened = open_token(key, token.blob);
  REQUIRE(opened.has_value());
  CHECK(opened->grant == grant);
  CHECK(opened->secret == token.secret);
  // The secret and the nonce come from the random bytes; the same bytes, the same token.
  CHECK(mint_token(key, grant, pattern<k_token_random_bytes>(9)).blob == token.blob);
  CHECK(mint_token(key, grant, pattern<k_token_random_bytes>(10)).blob != token.blob);
  // Another key, or any changed byte, opens nothing.
  CHECK_FALSE(open_token(pattern<32>(8), token.blob).has_value());
  for (std::size_t i = 0; i < token.blob.size(); ++i) {
    TokenBlob flipped = token.blob;
    flipped[i] ^= std::byte{0x01};
    CHECK_FALSE(open_token(key, flipped).has_value());
  }
  // A grant out of bounds is refused even under the right key: a spectator with a slot, a slot past
  // the largest session, client id 0 (no client).
  CHECK_FALSE(open_token(key, mint_token(key, {Role::spectator, 1, 1, 0, 1}, pattern<k_token_random_bytes>(3)).blob));
  CHECK_FALSE(open_token(key, mint_token(key, {Role::player, 256, 1, 0, 1}, pattern<k_token_random_bytes>(3)).blob));
  CHECK_FALSE(open_token(key, mint_token(key, {Role::player, k_no_slot, 1, 0, 0}, pattern<k_token_random_bytes>(3)).blob));
  CHECK(open_token(key, mint_token(key, {Role::spectator, k_no_slot, 1, 0, 1}, pattern<k_token_random_bytes>(3)).blob));
}
