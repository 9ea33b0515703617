// Test vectors for what a backend or another implementation computes from net/PROTOCOL.md alone:
// the handshake's and the traffic's keys, the connect's MAC, a connect token and a cookie. Each is
// computed here with libsodium directly, as the document says, and must equal both what lockstep
// computes and the hex recorded below (from a reviewed run; PROTOCOL.md, "Test vectors", quotes
// the same inputs and outputs).

#include <catch2/catch.hpp>

#include <sodium.h>

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/net/credentials/connect_token.hpp"
#include "lockstep/net/host/admission.hpp"
#include "lockstep/net/wire/packet_protection.hpp"

using namespace lockstep::net;

namespace {

using Bytes = std::vector<unsigned char>;

/// first, first + 1, … (mod 256), `n` bytes.
Bytes counting(unsigned first, std::size_t n) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>((first + i) & 0xFF);
  return b;
}

std::string hex(const unsigned char* p, std::size_t n) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += k_digits[p[i] >> 4];
    out += k_digits[p[i] & 15];
  }
  return out;
}
std::string hex(const Bytes& b) { return hex(b.data(), b.size()); }
template <std::size_t N>
std::string hex(const std::array<std::byte, N>& b) { return hex(reinterpret_cast<const unsigned char*>(b.data()), N); }

/// BLAKE2b of `parts` concatenated, `out_bytes` long, keyed with `key`.
Bytes blake2b(std::size_t out_bytes, const Bytes& key, std::initializer_list<Bytes> parts) {
  crypto_generichash_state state;
  crypto_generichash_init(&state, key.data(), key.size(), out_bytes);
  for (const Bytes& p : parts) crypto_generichash_update(&state, p.data(), p.size());
  Bytes out(out_bytes);
  crypto_generichash_final(&state, out.data(), out.size());
  return out;
}
Bytes text(std::string_view s) { return Bytes(s.begin(), s.end()); }
Bytes le(std::uint64_t v, std::size_t n) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
  return b;
}
Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
template <std::size_t N>
std::array<std::byte, N> as_array(const Bytes& b) {
  std::array<std::byte, N> a{};
  for (std::size_t i = 0; i < N; ++i) a[i] = static_cast<std::byte>(b[i]);
  return a;
}

struct KxPair {
  Bytes pk = Bytes(crypto_kx_PUBLICKEYBYTES), sk = Bytes(crypto_kx_SECRETKEYBYTES);
  explicit KxPair(const Bytes& seed) { crypto_kx_seed_keypair(pk.data(), sk.data(), seed.data()); }
};

}  // namespace

TEST_CASE("the handshake's and the traffic's keys are PROTOCOL.md's, computed with libsodium alone", "[net][crypto][vectors]") {
  REQUIRE(sodium_init() >= 0);
  const Bytes e_seed = counting(0x00, 32), s_seed = counting(0x20, 32), h_seed = counting(0x40, 32);
  const Bytes c = counting(0x60, 32);
  const KxPair e(e_seed), s(s_seed), h(h_seed);
  // K0: crypto_kx with the joiner as client, each direction mixed with the credential's secret.
  Bytes rx(crypto_kx_SESSIONKEYBYTES), tx(crypto_kx_SESSIONKEYBYTES);
  REQUIRE(crypto_kx_client_session_keys(rx.data(), tx.data(), e.pk.data(), e.sk.data(), s.pk.data()) == 0);
  const Bytes k0_to_host = blake2b(32, c, {text("lockstep 6 to host"), tx});
  const Bytes k0_to_joiner = blake2b(32, c, {text("lockstep 6 to joiner"), rx});
  // K1: the same from e and h, mixed with t.
  const Bytes t = blake2b(32, c, {text("lockstep 6 traffic"), k0_to_host, k0_to_joiner});
  REQUIRE(crypto_kx_client_session_keys(rx.data(), tx.data(), e.pk.data(), e.sk.data(), h.pk.data()) == 0);
  const Bytes k1_to_host = blake2b(32, t, {text("lockstep 6 to host"), tx});
  const Bytes k1_to_joiner = blake2b(32, t, {text("lockstep 6 to joiner"), rx});

  const KeyExchangePair joiner(as_array<32>(e_seed)), host(as_array<32>(s_seed)), ephemeral(as_array<32>(h_seed));
  const CredentialSecret secret = as_array<32>(c);
  const std::optional<ConnectionKeys> k0 = ConnectionKeys::for_joiner(joiner, host.public_key(), secret);
  const std::optional<ConnectionKeys> k0_host = ConnectionKeys::for_host(host, joiner.public_key(), secret);
  REQUIRE(k0);
  REQUIRE(k0_host);
  CHECK(hex(k0->send()) == hex(k0_to_host));
  CHECK(hex(k0->receive()) == hex(k0_to_joiner));
  CHECK(hex(k0_host->receive()) == hex(k0_to_host));
  CHECK(hex(k0_host->send()) == hex(k0_to_joiner));
  CHECK(hex(traffic_secret(secret, *k0)) == hex(t));
  CHECK(hex(traffic_secret(secret, *k0_host)) == hex(t));
  const std::optional<ConnectionKeys> k1 = ConnectionKeys::for_joiner(joiner, ephemeral.public_key(), traffic_secret(secret, *k0));
  REQUIRE(k1);
  CHECK(hex(k1->send()) == hex(k1_to_host));
  CHECK(hex(k1->receive()) == hex(k1_to_joiner));
  // Held: PROTOCOL.md quotes these.
  CHECK(hex(k0_to_host) == "917e88a960d31634f300fa42650a09a26bafa44294e592719370490a764c293d");
  CHECK(hex(k0_to_joiner) == "a196dd74bdd88272671904f334f9039c5c5907bf8798a386e3098f7435882a59");
  CHECK(hex(t) == "53165c3af05b3b896bf6f2438e42f833eeb8f106285bc65963e63e47955422cb");
  CHECK(hex(k1_to_host) == "d13e0c743a76b068e3d8d147b192f620868a366b693239fb8ab7926efdaae3c4");
  CHECK(hex(k1_to_joiner) == "acdb0e86fc63615c82894c1b1d5fe4ca2cf4873a79a70474066f7cf7629b8116");
}

TEST_CASE("the connect's MAC is PROTOCOL.md's, computed with libsodium alone", "[net][crypto][vectors]") {
  REQUIRE(sodium_init() >= 0);
  const Bytes c = counting(0x60, 32);
  const Bytes host_key = KxPair(counting(0x20, 32)).pk;
  const Bytes connect = counting(0x90, 120);  // every byte of a connect before its MAC
  const Bytes mac = blake2b(16, blake2b(32, c, {text("lockstep 6 connect mac")}), {host_key, connect});
  std::vector<std::byte> bytes(connect.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(connect[i]);
  CHECK(hex(connect_mac(as_array<32>(c), as_array<32>(host_key), bytes)) == hex(mac));
  CHECK(hex(mac) == "d6544200130adaff424fbe675766264d");
}

TEST_CASE("a connect token is PROTOCOL.md's grant sealed with libsodium alone", "[net][crypto][vectors][token]") {
  REQUIRE(sodium_init() >= 0);
  const Bytes key = counting(0x80, 32), nonce = counting(0xA0, 24), client_secret = counting(0xC0, 32);
  const TokenGrant grant{Role::player, 3, 1'900'000'000, 7, 0x0102030405060708};
  const Bytes grant_bytes = cat({{2, 0, 3, 0}, le(grant.expires, 8), le(grant.host_id, 8), le(grant.client_id, 8), client_secret});
  REQUIRE(grant_bytes.size() == 60);
  const Bytes ad = text("lockstep token 2");
  Bytes sealed(grant_bytes.size() + crypto_aead_xchacha20poly1305_ietf_ABYTES);
  unsigned long long sealed_bytes = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(sealed.data(), &sealed_bytes, grant_bytes.data(), grant_bytes.size(), ad.data(),
                                             ad.size(), nullptr, nonce.data(), key.data());
  REQUIRE(sealed_bytes == sealed.size());
  const Bytes blob = cat({nonce, sealed});
  const ConnectToken minted = mint_token(as_array<32>(key), grant, as_array<k_token_random_bytes>(cat({nonce, client_secret})));
  CHECK(hex(minted.blob) == hex(blob));
  CHECK(hex(minted.secret) == hex(client_secret));
  const std::optional<OpenedToken> opened = open_token(as_array<32>(key), as_array<k_token_blob_bytes>(blob));
  REQUIRE(opened);
  CHECK(opened->grant == grant);
  CHECK(hex(blob) == 
        "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7fc9eb222da1e6a97ab04be19eeaf5ddeefbe50bcc034f93690c1"
        "0ebe707c07e62d497f215cae80ca10ebdd700a114aad1df30bbfb09e6a7868b16e8ac3dc9f274cac7055724fc950096c016b");
}

TEST_CASE("a cookie is PROTOCOL.md's, computed with libsodium alone", "[net][crypto][vectors]") {
  REQUIRE(sodium_init() >= 0);
  const Bytes key = counting(0xE0, 32);
  const Endpoint from(boost::asio::ip::make_address_v4("192.0.2.7"), 40001);
  const std::uint64_t nonce = 0x1122334455667788, epoch = 178'000'000;
  const Bytes address = cat({{192, 0, 2, 7}, Bytes(12, 0)});
  const Bytes cookie = blake2b(16, key, {{4}, address, le(40001, 2), le(nonce, 8), le(epoch, 8)});
  CHECK(hex(cookie_of(as_array<32>(key), from, nonce, epoch)) == hex(cookie));
  CHECK(hex(cookie) == "9b275c0e8952f8c770b9dcefca218875");
}
