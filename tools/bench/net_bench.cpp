// Datagram protection figures: sealing one datagram, and opening it on the other side, at the
// sizes a session sends (an update or relay of a tick or two, a state piece); and a whole
// handshake's work on both sides.

#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <optional>
#include <vector>

#include "lockstep/net/host/host_protocol.hpp"
#include "lockstep/net/peer/peer_protocol.hpp"
#include "lockstep/net/wire/packet_protection.hpp"

using namespace lockstep::net;

namespace {

/// A joiner's and a host's protection of one connection, from fixed seeds: every run has the same
/// keys and starts its numbers at 0, which only a benchmark sealing the same bytes may do (a
/// session draws a fresh pair for every connection).
struct Connection {
  static std::array<std::byte, k_key_exchange_bytes> seed(std::byte b) {
    std::array<std::byte, k_key_exchange_bytes> s{};
    s.fill(b);
    return s;
  }
  KeyExchangePair joiner_pair{seed(std::byte{1})};
  KeyExchangePair host_pair{seed(std::byte{2})};
  PacketProtection joiner{*ConnectionKeys::for_joiner(joiner_pair, host_pair.public_key(), CredentialSecret{})};
  PacketProtection host{*ConnectionKeys::for_host(host_pair, joiner_pair.public_key(), CredentialSecret{})};
};

constexpr std::size_t k_header = 7;

void BM_SealDatagram(benchmark::State& state) {
  Connection c;
  std::vector<std::byte> d;
  d.reserve(1500);
  for (auto _ : state) {
    d.assign(static_cast<std::size_t>(state.range(0)), std::byte{0x5a});
    c.joiner.seal(d, k_header);
    benchmark::DoNotOptimize(d.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_SealDatagram)->Arg(32)->Arg(64)->Arg(1031);

void BM_SealAndOpenDatagram(benchmark::State& state) {
  Connection c;
  std::vector<std::byte> d;
  d.reserve(1500);
  std::size_t failed = 0;
  for (auto _ : state) {
    d.assign(static_cast<std::size_t>(state.range(0)), std::byte{0x5a});
    const std::uint64_t number = c.joiner.next_number();
    c.joiner.seal(d, k_header);
    if (c.host.open(d, k_header, number) != OpenOutcome::opened) ++failed;
  }
  if (failed != 0) state.SkipWithError("a datagram did not open");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_SealAndOpenDatagram)->Arg(32)->Arg(64)->Arg(1031);

/// What a host does for a datagram that does not open: the tag check alone fails it.
void BM_RejectForgedDatagram(benchmark::State& state) {
  Connection c;
  std::vector<std::byte> sealed(64, std::byte{0x5a});
  c.joiner.seal(sealed, k_header);
  sealed[20] ^= std::byte{1};
  std::vector<std::byte> d;
  d.reserve(1500);
  std::uint64_t number = 0;
  for (auto _ : state) {
    d = sealed;
    benchmark::DoNotOptimize(c.host.open(d, k_header, number++));
  }
}
BENCHMARK(BM_RejectForgedDatagram);

/// The host's public-key work for one joiner's handshake: its keys from the joiner's public key
/// (X25519, then the two keys mixed with the credential's secret).
void BM_HostKeysForJoiner(benchmark::State& state) {
  Connection c;
  const CredentialSecret secret{};
  for (auto _ : state) {
    std::optional<ConnectionKeys> keys = ConnectionKeys::for_host(c.host_pair, c.joiner_pair.public_key(), secret);
    benchmark::DoNotOptimize(keys->send().data());
  }
}
BENCHMARK(BM_HostKeysForJoiner);

/// One joiner's whole handshake with a host, both sides' work with no network between them: hello,
/// challenge, connect, welcome (two round trips), with an invite. The host is made afresh, untimed,
/// for each (its slots and budget of key work are a session's).
void BM_Handshake(benchmark::State& state) {
  const Endpoint host_at(boost::asio::ip::make_address("127.0.0.1"), 7777);
  const Endpoint joiner_at(boost::asio::ip::make_address("127.0.0.1"), 40000);
  CredentialSecret invite{};
  invite.fill(std::byte{9});
  std::uint64_t nonce = 1;
  std::uint64_t round_trips = 0;
  for (auto _ : state) {
    state.PauseTiming();
    HostProtocolConfig hc;
    hc.input_bytes = 1;
    hc.neutral_input = std::vector<std::byte>(1);
    hc.sim_name = "bench";
    hc.credentials.player_invite = invite;
    std::optional<HostProtocol> host;
    host.emplace(hc, Instant{0});
    state.ResumeTiming();
    PeerProtocolConfig pc;
    pc.host = host_at;
    pc.input_bytes = 1;
    pc.neutral_input = std::vector<std::byte>(1);
    pc.sim_name = "bench";
    pc.nonce = nonce++;
    pc.credential = {CredentialKind::invite, invite, host->host_key(), {}};
    PeerProtocol peer(pc, Instant{0});
    peer.poll(Instant{0});
    while (!peer.welcomed()) {
      for (const Transmit& t : peer.outbox().pending()) host->receive(joiner_at, t.bytes, Instant{0});
      peer.outbox().clear();
      for (const Transmit& t : host->outbox().pending()) peer.receive(host_at, t.bytes, Instant{0});
      host->outbox().clear();
      ++round_trips;
    }
    state.PauseTiming();
    host.reset();
    state.ResumeTiming();
  }
  state.counters["round_trips"] = benchmark::Counter(static_cast<double>(round_trips), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_Handshake);

}  // namespace
