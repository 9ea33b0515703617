#pragma once
/// Networked lockstep sessions for any Simulation: a host that relays every player's inputs
/// (playing slot 0 itself, or as a headless relay), peers that play a slot, and spectators.
///
/// A participant steps tick t only with every player's input for t in hand, as relayed by the
/// host, so all agree by construction. Inputs sampled at tick t are for tick t + D (the input
/// delay); ticks 1 to D are neutral for everyone. Every datagram carries everything the other
/// side has not acknowledged yet, so a lost datagram costs no retransmission timer. Peers report
/// their state hash for every tick; the host compares them and, at the first mismatch, tells
/// everyone, who stop and write evidence. The host alone decides from which tick a vanished
/// player's input is neutral.
///
/// One thread: the loop runs the io_context for a millisecond at a time; receive handlers only
/// queue datagrams, which the loop then decodes and applies. The simulation is stepped by the
/// loop, never from a handler.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <cstring>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <cereal/archives/json.hpp>

#include "lockstep/engine/canonical_archive.hpp"
#include "lockstep/engine/fixed_clock.hpp"
#include "lockstep/engine/runner.hpp"
#include "lockstep/engine/simulation.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/net/udp_transport.hpp"
#include "lockstep/net/wire.hpp"
#include "lockstep/replay/recorder.hpp"

namespace lockstep::net {

/// How a session ended: the exit codes of `lockstep host/join/spectate`.
enum class Outcome { finished = 0, desync = 1, refused = 2, network_failed = 3 };

struct SessionResult {
  Outcome outcome = Outcome::finished;
  std::uint64_t tick = 0;        ///< the last tick stepped
  std::uint64_t hash = 0;        ///< its state hash
  std::uint64_t desync_tick = 0;
  std::string evidence;          ///< desync: the evidence folder
  std::string message;           ///< refused or failed: why, one line
};

template <Simulation S>
struct SessionOptions {
  std::uint16_t port = 7777;                 ///< host: the port to listen on
  std::uint32_t players = 2;                 ///< host: player slots
  bool relay = false;                        ///< host: play no slot
  std::uint64_t end_tick = 600;              ///< host: the session ends after this tick
  std::uint32_t input_delay = 2;             ///< host: D
  std::string record;                        ///< a replay file to record, or empty
  NetSimConfig netsim;
  std::uint64_t perturb_tick = 0;            ///< test only: nudge the state after this tick
  std::function<void(S&)> perturb;           ///< … with this
  std::string evidence_dir = ".";
  std::chrono::milliseconds notify_after{1000};   ///< silent this long: interrupted
  std::chrono::milliseconds timeout_after{5000};  ///< silent this long: gone
  std::chrono::milliseconds countdown{500};
  /// This participant's input for a tick, given its slot and the session seed (bots, or a
  /// person's buttons); called once per tick, in tick order.
  std::function<typename S::Input(std::uint32_t slot, std::uint64_t seed, std::uint64_t tick)> input;
  /// Polled every loop: true asks this participant to leave now (SIGINT, SIGTERM). A peer says
  /// goodbye so the host marks it gone at once; a host ends the session for everyone.
  std::function<bool()> stop_requested;
  /// Status and statistics lines, as they happen.
  std::function<void(const std::string&)> log = [](const std::string& line) { std::printf("%s\n", line.c_str()); };
};

namespace detail {

inline std::uint32_t now_ms() {
  return static_cast<std::uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count());
}

/// Round-trip time from an echoed timestamp.
struct RttMeter {
  double rtt_ms = 0.0;
  std::uint32_t echo_ms = 0;                 ///< the other side's last clock value
  Clock::time_point echo_received{};
  bool have_echo = false;
  void on_timing(const Timing& t) {
    echo_ms = t.sent_ms;
    echo_received = Clock::now();
    have_echo = true;
    if (t.echo_ms != 0) {
      const auto rtt = static_cast<double>(now_ms() - t.echo_ms) - static_cast<double>(t.echo_held_ms);
      if (rtt >= 0.0 && rtt < 60'000.0) rtt_ms = rtt_ms == 0.0 ? rtt : 0.875 * rtt_ms + 0.125 * rtt;
    }
  }
  [[nodiscard]] Timing outgoing() const {
    Timing t;
    t.sent_ms = now_ms();
    if (have_echo) {
      t.echo_ms = echo_ms;
      t.echo_held_ms = static_cast<std::uint32_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - echo_received).count());
    }
    return t;
  }
};

/// Once-a-second and final statistics.
class StatsPrinter {
 public:
  void maybe_print(const std::function<void(const std::string&)>& log, const UdpTransport& transport, double rtt_ms,
                   std::uint32_t delay, std::uint64_t stalls, std::uint64_t tick, bool final = false) {
    const Clock::time_point now = Clock::now();
    if (!final && now - last_ < std::chrono::seconds(1)) return;
    const double seconds = std::max(1e-3, std::chrono::duration<double>(now - last_).count());
    const TransportStats& s = transport.stats();
    char line[512];
    std::snprintf(line, sizeof line,
                  "net%s: tick %llu, rtt %.1f ms, input delay %u, stalls %llu, sent %.0f dgrams/s %.1f KB/s, "
                  "received %.0f dgrams/s %.1f KB/s, dropped %s",
                  final ? " (session)" : "", static_cast<unsigned long long>(tick), rtt_ms, delay,
                  static_cast<unsigned long long>(stalls),
                  final ? static_cast<double>(s.datagrams_sent) : static_cast<double>(s.datagrams_sent - sent_) / seconds,
                  (final ? static_cast<double>(s.bytes_sent) : static_cast<double>(s.bytes_sent - bytes_sent_) / seconds) / 1024.0,
                  final ? static_cast<double>(s.datagrams_received) : static_cast<double>(s.datagrams_received - received_) / seconds,
                  (final ? static_cast<double>(s.bytes_received) : static_cast<double>(s.bytes_received - bytes_received_) / seconds) / 1024.0,
                  dropped(s).c_str());
    std::string text = line;
    if (final) {
      // Totals rather than rates: "dgrams/s" reads as totals over the session.
      const std::string from = "dgrams/s";
      for (std::size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), "dgrams");
      for (std::size_t at; (at = text.find("KB/s")) != std::string::npos;) text.replace(at, 4, "KB");
    }
    log(text);
    last_ = now;
    sent_ = s.datagrams_sent;
    bytes_sent_ = s.bytes_sent;
    received_ = s.datagrams_received;
    bytes_received_ = s.bytes_received;
  }

 private:
  static std::string dropped(const TransportStats& s) {
    std::string out;
    for (const auto& [reason, count] : s.dropped) out += (out.empty() ? "" : ", ") + reason + " " + std::to_string(count);
    if (s.simulated_losses > 0) out += (out.empty() ? "" : ", ") + std::string("simulated loss ") + std::to_string(s.simulated_losses);
    return out.empty() ? "none" : out;
  }
  Clock::time_point last_ = Clock::now();
  std::uint64_t sent_ = 0, bytes_sent_ = 0, received_ = 0, bytes_received_ = 0;
};

/// What every participant keeps: the simulation, the inputs of every tick, its own hashes, a
/// recording, and a short ring of snapshots for desync evidence.
template <Simulation S>
class Participant {
 public:
  using Input = typename S::Input;
  static constexpr std::size_t k_input_bytes = Input::k_bytes;
  static constexpr std::uint64_t k_evidence_ring = 256;

  Participant(const typename S::Config& config, std::uint64_t seed, std::uint32_t players, std::uint64_t end_tick,
              std::unique_ptr<Runner<S>> runner)
      : config_(config), seed_(seed), players_(players), end_tick_(end_tick), runner_(std::move(runner)) {
    hashes_.push_back(runner_->hash());
  }

  Status start_recording(const std::string& path) {
    if (path.empty()) return {};
    Result<replay::Recorder<S>> recorder = replay::Recorder<S>::create(path, config_, seed_, *runner_, {1, 3600});
    if (!recorder) return recorder.error();
    recorder_.emplace(std::move(recorder).value());
    return {};
  }

  /// Inputs of tick t (1-based): players × k_input_bytes, if known.
  [[nodiscard]] bool known(std::uint64_t tick) const { return tick <= known_through_; }
  [[nodiscard]] std::uint64_t known_through() const { return known_through_; }
  [[nodiscard]] std::uint64_t tick() const { return runner_->tick(); }
  [[nodiscard]] std::uint64_t hash() const { return runner_->hash(); }
  [[nodiscard]] std::uint64_t hash_at(std::uint64_t tick) const { return hashes_[static_cast<std::size_t>(tick)]; }
  [[nodiscard]] std::uint32_t players() const { return players_; }
  [[nodiscard]] std::uint64_t end_tick() const { return end_tick_; }

  /// Appends the next tick's inputs (every player's, slot order).
  void add_tick(std::span<const std::byte> inputs) {
    log_.insert(log_.end(), inputs.begin(), inputs.end());
    ++known_through_;
  }
  [[nodiscard]] std::span<const std::byte> inputs_of(std::uint64_t tick) const {
    const std::size_t stride = players_ * k_input_bytes;
    return std::span<const std::byte>(log_).subspan(static_cast<std::size_t>(tick - 1) * stride, stride);
  }

  /// Steps one tick if its inputs are known and the session has not ended.
  Result<bool> step_if_ready(const std::function<void(S&)>& perturb, std::uint64_t perturb_tick) {
    const std::uint64_t next = tick() + 1;
    if (next > end_tick_ || !known(next)) return false;
    decoded_.resize(players_);
    const std::span<const std::byte> raw = inputs_of(next);
    for (std::uint32_t p = 0; p < players_; ++p) {
      const std::optional<Input> input =
          Input::from_bytes(std::span<const std::byte, k_input_bytes>(raw.data() + p * k_input_bytes, k_input_bytes));
      decoded_[p] = input ? *input : Input{};
    }
    Result<std::uint64_t> stepped = runner_->step(decoded_);
    if (!stepped) return stepped.error();
    if (perturb && next == perturb_tick) {
      perturb(runner_->simulation_for_update());
      runner_->rehash();
    }
    hashes_.push_back(runner_->hash());
    if (recorder_) {
      Status recorded = recorder_->record(*runner_, decoded_);
      if (!recorded) return recorded.error();
    }
    runner_->save_into(ring_[next % k_evidence_ring]);
    return true;
  }

  Status finish_recording() {
    if (!recorder_) return {};
    Status status = recorder_->finish();
    recorder_.reset();
    return status;
  }

  /// Writes the evidence of a desync at `tick`: the replay up to it (re-simulated from the
  /// inputs), this participant's own state at it, and the session configuration.
  Result<std::string> write_evidence(const std::string& dir, const std::string& name, std::uint64_t desync_tick) {
    namespace fs = std::filesystem;
    std::error_code error;
    const fs::path folder = fs::path(dir) / name;
    fs::create_directories(folder, error);
    if (error) return fail("cannot create '", folder.string(), "': ", error.message());
    const std::uint64_t last = std::min({desync_tick, tick(), known_through_});
    Result<Runner<S>> fresh = Runner<S>::create(config_, seed_);
    if (!fresh) return fresh.error();
    Result<replay::Recorder<S>> recorder =
        replay::Recorder<S>::create((folder / "replay.lsr").string(), config_, seed_, fresh.value(), {1, 0});
    if (!recorder) return recorder.error();
    std::vector<Input> inputs(players_);
    for (std::uint64_t t = 1; t <= last; ++t) {
      const std::span<const std::byte> raw = inputs_of(t);
      for (std::uint32_t p = 0; p < players_; ++p) {
        inputs[p] = Input::from_bytes(std::span<const std::byte, k_input_bytes>(raw.data() + p * k_input_bytes, k_input_bytes))
                        .value_or(Input{});
      }
      if (!fresh->step(inputs)) break;
      (void)recorder->record(fresh.value(), inputs);
    }
    (void)recorder->finish();
    // This participant's own state at the desync tick (or as close as it got).
    const std::vector<std::byte>& state = tick() >= last && tick() - last < k_evidence_ring ? ring_[last % k_evidence_ring]
                                                                                             : ring_[tick() % k_evidence_ring];
    std::ofstream snapshot(folder / "state.snapshot", std::ios::binary);
    snapshot.write(reinterpret_cast<const char*>(state.data()), static_cast<std::streamsize>(state.size()));
    std::ofstream json(folder / "config.json");
    {
      cereal::JSONOutputArchive out(json);
      typename S::Config config = config_;
      out(cereal::make_nvp("config", config), cereal::make_nvp("seed", seed_), cereal::make_nvp("desync_tick", desync_tick));
    }
    return folder.string();
  }

 private:
  typename S::Config config_;
  std::uint64_t seed_;
  std::uint32_t players_;
  std::uint64_t end_tick_;
  std::unique_ptr<Runner<S>> runner_;
  std::optional<replay::Recorder<S>> recorder_;
  std::vector<std::byte> log_;
  std::uint64_t known_through_ = 0;
  std::vector<std::uint64_t> hashes_;
  std::vector<Input> decoded_;
  std::vector<std::byte> ring_[k_evidence_ring];
};

inline std::uint64_t random_u64() {
  std::random_device device;  // session ids and tokens must not be guessable; not simulation state
  return (static_cast<std::uint64_t>(device()) << 32) ^ device() ^ 0x9E3779B97F4A7C15ull;
}

inline std::string hex(std::uint64_t v) { return hash_hex(v); }

}  // namespace detail

// ------------------------------------------------------------------------------------------------
// Host

template <Simulation S>
SessionResult run_host(const typename S::Config& config, std::uint64_t seed, const SessionOptions<S>& options) {
  using Input = typename S::Input;
  constexpr std::uint32_t k_input_bytes = static_cast<std::uint32_t>(Input::k_bytes);
  SessionResult result;
  auto failed = [&](Outcome outcome, std::string message) {
    result.outcome = outcome;
    result.message = std::move(message);
    return result;
  };

  Result<Runner<S>> created = Runner<S>::create(config, seed);
  if (!created) return failed(Outcome::refused, created.error().message);
  const std::uint32_t players = created->simulation().players();
  if (players < 1 || players > k_max_players) return failed(Outcome::refused, "sessions have 1 to 8 players");
  if (k_input_bytes > k_max_input_bytes) return failed(Outcome::refused, "inputs too large for the wire");
  detail::Participant<S> me(config, seed, players, options.end_tick,
                            std::make_unique<Runner<S>>(std::move(created).value()));
  Status recording = me.start_recording(options.record);
  if (!recording) return failed(Outcome::refused, recording.error().message);

  boost::asio::io_context io;
  Result<std::unique_ptr<UdpTransport>> bound = UdpTransport::bind(io, options.port, options.netsim);
  if (!bound) return failed(Outcome::network_failed, bound.error().message);
  UdpTransport& transport = *bound.value();

  const std::uint64_t session = detail::random_u64();
  const std::uint64_t cookie_secret = detail::random_u64();
  const std::uint32_t delay = options.input_delay;
  const std::uint8_t my_slot = options.relay ? k_no_slot : 0;
  std::vector<std::byte> config_bytes = canonical_bytes(config);
  if (config_bytes.size() > k_max_config_bytes) {
    return failed(Outcome::refused, "the configuration is " + std::to_string(config_bytes.size()) +
                                        " bytes, more than a welcome datagram carries");
  }
  // Relays carry as many ticks as fit in one datagram with every player's input.
  const std::uint64_t relay_ticks = std::min<std::uint64_t>(
      k_max_ticks_per_datagram, (k_max_datagram_bytes - k_header_bytes - 64 - 9 * players) / (players * k_input_bytes));

  struct Remote {
    Endpoint endpoint;
    std::uint8_t slot = k_no_slot;      ///< k_no_slot: spectator
    std::uint64_t token = 0;
    std::uint32_t last_sequence = 0;
    Clock::time_point last_heard = Clock::now();
    std::uint64_t relay_ack = 0;         ///< relayed ticks it holds
    std::uint64_t hash_through = 0;      ///< its hashes the host holds (contiguous)
    bool gone = false;
    detail::RttMeter rtt;
  };
  std::vector<Remote> remotes;
  std::vector<SlotStatus> slots(players);
  // Inputs held per slot: held[slot][t - 1] for t = 1 … (contiguous prefix counted in through).
  std::vector<std::vector<std::byte>> held(players);
  std::vector<std::uint64_t> held_through(players, delay);  // ticks 1…D are neutral for everyone
  for (std::uint32_t p = 0; p < players; ++p) held[p].assign(static_cast<std::size_t>(delay) * k_input_bytes, std::byte{0});
  std::vector<std::byte> neutral(k_input_bytes);
  Input{}.to_bytes(std::span<std::byte, k_input_bytes>(neutral.data(), k_input_bytes));
  for (std::uint32_t p = 0; p < players; ++p) {
    for (std::uint32_t t = 0; t < delay; ++t) std::copy(neutral.begin(), neutral.end(), held[p].begin() + static_cast<std::ptrdiff_t>(t * k_input_bytes));
  }
  if (my_slot != k_no_slot) slots[my_slot].state = SlotState::active;
  std::map<std::uint64_t, std::uint64_t> reference_hash;  // tick → the first hash reported for it
  std::uint64_t desync_tick = 0;
  std::uint64_t stalls = 0;
  std::uint64_t stalled_on = 0;
  std::vector<std::byte> out;
  std::uint32_t sequence = 0;

  auto header = [&](MessageType type, std::uint64_t token) {
    return Header{type, my_slot, session, token, ++sequence};
  };
  auto find_remote = [&](const Endpoint& from) -> Remote* {
    for (Remote& r : remotes) {
      if (r.endpoint == from) return &r;
    }
    return nullptr;
  };
  auto filled = [&] {
    return std::all_of(slots.begin(), slots.end(), [](const SlotStatus& s) { return s.state != SlotState::waiting; });
  };
  auto note_hash = [&](std::uint64_t tick, std::uint64_t hash) {
    auto [it, inserted] = reference_hash.emplace(tick, hash);
    if (!inserted && it->second != hash && (desync_tick == 0 || tick < desync_tick)) desync_tick = tick;
  };

  options.log("host: session " + detail::hex(session) + " on UDP port " + std::to_string(transport.local_port()) +
              ", " + std::to_string(players) + " players" + (options.relay ? " (relay: the host plays no slot)" : "") +
              ", " + std::to_string(options.end_tick) + " ticks, input delay " + std::to_string(delay) +
              ", netsim " + describe(options.netsim));

  // --- Handshake and datagrams -------------------------------------------------------------
  bool started = false;
  Clock::time_point start_at{};
  auto handle = [&](const Datagram& d) {
    Result<Header> h = read_header(d.bytes);
    if (!h && h.error().message == "bad version" && d.bytes.size() >= 7 &&
        std::to_integer<std::uint8_t>(d.bytes[6]) == static_cast<std::uint8_t>(MessageType::hello)) {
      // A joiner of another protocol version: tell it so rather than leave it waiting.
      const auto version = static_cast<unsigned>(std::to_integer<unsigned>(d.bytes[4]) | (std::to_integer<unsigned>(d.bytes[5]) << 8));
      write_refuse(out, header(MessageType::refuse, 0),
                   {RefuseReason::version, "protocol version " + std::to_string(version) + " is not the host's " +
                                               std::to_string(k_protocol_version)});
      transport.send(d.from, out);
      return transport.count_drop("bad version");
    }
    if (!h) return transport.count_drop(h.error().message);
    if (h->type == MessageType::hello) {
      Result<Hello> hello = read_hello(d.bytes);
      if (!hello) return transport.count_drop("malformed");
      // Nothing is given to an address until it proves it receives there: the cookie is a
      // keyed hash of the address, sent back in a datagram no larger than the hello.
      const std::string address = d.from.address().to_string() + ":" + std::to_string(d.from.port());
      std::vector<std::byte> keyed(address.size() + 8);
      for (int i = 0; i < 8; ++i) keyed[static_cast<std::size_t>(i)] = static_cast<std::byte>((cookie_secret >> (8 * i)) & 0xFF);
      std::memcpy(keyed.data() + 8, address.data(), address.size());
      const std::uint64_t cookie = xxh3_64(keyed) | 1;
      if (hello->cookie != cookie) {
        write_challenge(out, header(MessageType::challenge, 0), {cookie});
        transport.send(d.from, out);
        return;
      }
      if (Remote* known = find_remote(d.from)) {  // a repeated hello: answer again
        Welcome w{known->slot, known->token, session, players, k_input_bytes, 60, delay, options.end_tick, seed, config_bytes};
        write_welcome(out, header(MessageType::welcome, known->token), w);
        transport.send(d.from, out);
        return;
      }
      if (hello->protocol_version != k_protocol_version) {
        write_refuse(out, header(MessageType::refuse, 0),
                     {RefuseReason::version, "protocol version " + std::to_string(hello->protocol_version) +
                                                 " is not the host's " + std::to_string(k_protocol_version)});
        transport.send(d.from, out);
        return;
      }
      const auto spectators = std::count_if(remotes.begin(), remotes.end(),
                                            [](const Remote& r) { return r.slot == k_no_slot && !r.gone; });
      if (hello->role == Role::spectator && spectators >= static_cast<long>(k_max_spectators)) {
        write_refuse(out, header(MessageType::refuse, 0), {RefuseReason::full, "the session has all the spectators it serves"});
        transport.send(d.from, out);
        return;
      }
      Remote remote;
      remote.endpoint = d.from;
      remote.token = detail::random_u64();
      if (hello->role == Role::player) {
        auto free_slot = std::find_if(slots.begin(), slots.end(), [](const SlotStatus& s) { return s.state == SlotState::waiting; });
        if (free_slot == slots.end() || started) {
          write_refuse(out, header(MessageType::refuse, 0), {RefuseReason::full, "the session is full"});
          transport.send(d.from, out);
          return;
        }
        remote.slot = static_cast<std::uint8_t>(free_slot - slots.begin());
        free_slot->state = SlotState::active;
      }
      remotes.push_back(remote);
      Welcome w{remote.slot, remote.token, session, players, k_input_bytes, 60, delay, options.end_tick, seed, config_bytes};
      write_welcome(out, header(MessageType::welcome, remote.token), w);
      transport.send(d.from, out);
      options.log(remote.slot == k_no_slot ? "host: a spectator joined"
                                           : "host: player " + std::to_string(remote.slot) + " joined");
      return;
    }
    Remote* remote = find_remote(d.from);
    if (remote == nullptr) return transport.count_drop("unknown address");
    if (h->session != session) return transport.count_drop("wrong session");
    if (h->slot != remote->slot) return transport.count_drop("forged slot");
    if (h->token != remote->token) return transport.count_drop("bad token");
    if (h->sequence + 4096u < remote->last_sequence) return transport.count_drop("stale");
    remote->last_sequence = std::max(remote->last_sequence, h->sequence);
    remote->last_heard = Clock::now();
    if (remote->slot != k_no_slot && slots[remote->slot].state == SlotState::interrupted) {
      slots[remote->slot].state = SlotState::active;
      options.log("host: player " + std::to_string(remote->slot) + " is back");
    }
    if (h->type == MessageType::bye) {
      if (!remote->gone && remote->slot != k_no_slot && slots[remote->slot].state != SlotState::gone) {
        slots[remote->slot] = {SlotState::gone, held_through[remote->slot] + 1};
        options.log("host: player " + std::to_string(remote->slot) + " left; neutral from tick " +
                    std::to_string(held_through[remote->slot] + 1));
      }
      remote->gone = true;
      return;
    }
    if (h->type != MessageType::update) return transport.count_drop("unexpected type");
    Result<Update> u = read_update(d.bytes, k_input_bytes);
    if (!u) return transport.count_drop("malformed");
    remote->rtt.on_timing(u->timing);
    remote->relay_ack = std::max(remote->relay_ack, std::min(u->relay_ack, me.known_through()));
    const std::size_t count = u->inputs.size() / k_input_bytes;
    if (count > 0 && remote->slot == k_no_slot) return transport.count_drop("spectator inputs");
    if (count > 0 && u->first_tick + count + 2 * k_max_ticks_per_datagram < held_through[remote->slot]) {
      return transport.count_drop("stale");
    }
    if (remote->slot != k_no_slot && slots[remote->slot].state != SlotState::gone) {
      std::vector<std::byte>& mine = held[remote->slot];
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint64_t tick = u->first_tick + i;
        if (tick != held_through[remote->slot] + 1) continue;  // already held, or a gap
        if (tick > me.known_through() + 4096) break;            // absurdly far ahead: ignore
        std::span<const std::byte> input(u->inputs.data() + i * k_input_bytes, k_input_bytes);
        if (!Input::from_bytes(std::span<const std::byte, k_input_bytes>(input.data(), k_input_bytes))) {
          // Not an input: the tick gets the neutral one (refusing it would stall everyone).
          transport.count_drop("invalid input");
          input = neutral;
        }
        mine.insert(mine.end(), input.begin(), input.end());
        ++held_through[remote->slot];
      }
    }
    for (std::size_t i = 0; i < u->hashes.size(); ++i) {
      const std::uint64_t tick = u->hash_first_tick + i;
      if (remote->slot == k_no_slot || tick == 0 || tick > me.known_through()) continue;
      if (tick == remote->hash_through + 1) remote->hash_through = tick;
      note_hash(tick, u->hashes[i]);
    }
  };

  auto send_relay = [&](Remote& r) {
    Relay relay;
    relay.input_ack = r.slot != k_no_slot ? held_through[r.slot] : 0;
    relay.hash_ack = r.hash_through;
    relay.first_tick = r.relay_ack + 1;
    const std::uint64_t last = std::min(me.known_through(), r.relay_ack + relay_ticks);
    for (std::uint64_t t = relay.first_tick; t <= last; ++t) {
      const std::span<const std::byte> inputs = me.inputs_of(t);
      relay.inputs.insert(relay.inputs.end(), inputs.begin(), inputs.end());
    }
    relay.slots = slots;
    relay.desync_tick = desync_tick;
    relay.timing = r.rtt.outgoing();
    write_relay(out, header(MessageType::relay, r.token), relay, players, k_input_bytes);
    transport.send(r.endpoint, out);
  };

  // --- The loop --------------------------------------------------------------------------------
  FixedClock clock(60, 4);
  std::uint64_t budget = 0;
  std::uint64_t produced_through = delay;
  Clock::time_point last_frame = Clock::now();
  Clock::time_point last_send = Clock::now();
  Clock::time_point last_start_sent{};
  Clock::time_point finished_at{};
  Clock::time_point desync_at{};
  detail::StatsPrinter stats;
  const auto tick_period = std::chrono::microseconds(1'000'000 / 60);

  for (;;) {
    io.run_for(std::chrono::milliseconds(1));
    transport.flush_due();
    for (const Datagram& d : transport.take_received()) handle(d);
    const Clock::time_point now = Clock::now();

    if (!started) {
      if (filled()) {
        started = true;
        start_at = now + options.countdown;
        options.log("host: every slot is filled; tick 1 in " + std::to_string(options.countdown.count()) + " ms");
      } else {
        // Waiting for the others: a joiner that went silent frees its slot, and everyone who
        // waits hears from the host (slot states, no inputs) so it knows the host is there.
        for (auto it = remotes.begin(); it != remotes.end();) {
          if (now - it->last_heard > options.timeout_after) {
            if (it->slot != k_no_slot) slots[it->slot].state = SlotState::waiting;
            options.log(it->slot == k_no_slot ? "host: a waiting spectator went silent"
                                              : "host: player " + std::to_string(it->slot) + " went silent before the start; the slot is free");
            it = remotes.erase(it);
          } else {
            ++it;
          }
        }
        if (now - last_send >= std::chrono::milliseconds(100)) {
          for (Remote& r : remotes) send_relay(r);
          last_send = now;
        }
        continue;
      }
    }
    // START until tick 1 (repeated: datagrams get lost), then relays carry the session.
    if (now < start_at) {
      if (now - last_start_sent > std::chrono::milliseconds(50)) {
        for (Remote& r : remotes) {
          const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(start_at - now).count();
          write_start(out, header(MessageType::start, r.token), {static_cast<std::uint32_t>(left)});
          transport.send(r.endpoint, out);
        }
        last_start_sent = now;
      }
      last_frame = now;
      continue;
    }

    // Own input, when the host plays: sampled as the clock runs, D ticks ahead.
    budget += clock.advance(now - last_frame).ticks;
    last_frame = now;
    if (my_slot != k_no_slot) {
      while (produced_through < std::min(me.tick() + delay + 1, options.end_tick) && budget > 0) {
        ++produced_through;
        std::vector<std::byte> bytes(k_input_bytes);
        const Input input = options.input ? options.input(my_slot, seed, produced_through) : Input{};
        input.to_bytes(std::span<std::byte, k_input_bytes>(bytes.data(), k_input_bytes));
        held[my_slot].insert(held[my_slot].end(), bytes.begin(), bytes.end());
        ++held_through[my_slot];
        break;
      }
    }

    // Disconnects: silent players are interrupted, then gone; the host fixes from which tick
    // their input is neutral and relays that decision with every tick.
    for (Remote& r : remotes) {
      if (r.gone) continue;
      const auto silent = now - r.last_heard;
      if (r.slot == k_no_slot) {  // a spectator that went quiet is simply no longer served
        r.gone = silent > options.timeout_after;
        continue;
      }
      SlotStatus& s = slots[r.slot];
      if (silent > options.timeout_after) {
        r.gone = true;
        s = {SlotState::gone, held_through[r.slot] + 1};
        options.log("host: player " + std::to_string(r.slot) + " is gone; its input is neutral from tick " +
                    std::to_string(s.neutral_from_tick));
      } else if (silent > options.notify_after && s.state == SlotState::active) {
        s.state = SlotState::interrupted;
        options.log("host: player " + std::to_string(r.slot) + " is silent (interrupted)");
      }
    }

    // Relay every tick whose inputs are all in (neutral for players who are gone).
    for (;;) {
      const std::uint64_t next = me.known_through() + 1;
      if (next > options.end_tick) break;
      bool ready = true;
      std::vector<std::byte> tick_inputs;
      for (std::uint32_t p = 0; p < players && ready; ++p) {
        if (slots[p].state == SlotState::gone && next >= slots[p].neutral_from_tick) {
          tick_inputs.insert(tick_inputs.end(), neutral.begin(), neutral.end());
        } else if (held_through[p] >= next) {
          const auto at = held[p].begin() + static_cast<long>((next - 1) * k_input_bytes);
          tick_inputs.insert(tick_inputs.end(), at, at + k_input_bytes);
        } else {
          ready = false;
        }
      }
      if (!ready) break;
      me.add_tick(tick_inputs);
    }

    // Step the host's own simulation (player or relay) as far as the inputs go.
    while (budget > 0 || my_slot == k_no_slot) {
      Result<bool> stepped = me.step_if_ready(options.perturb, options.perturb_tick);
      if (!stepped) return failed(Outcome::network_failed, stepped.error().message);
      if (!stepped.value()) {
        // A stall is a tick that was due and had to wait for inputs: counted once per tick.
        if (budget > 0 && me.tick() < options.end_tick && stalled_on != me.tick() + 1) {
          ++stalls;
          stalled_on = me.tick() + 1;
        }
        // Time sync: a participant that waits is ahead of someone; it gives up the time it
        // waited instead of rushing to catch up later, and so settles in phase with the
        // slowest, where nobody waits.
        if (my_slot != k_no_slot) budget = 0;
        break;
      }
      note_hash(me.tick(), me.hash());
      if (budget > 0) --budget;
    }
    budget = std::min<std::uint64_t>(budget, 8);

    // Send to everyone once a tick, and right away to whoever is behind and just spoke.
    if (now - last_send >= tick_period) {
      for (Remote& r : remotes) {
        if (!r.gone) send_relay(r);
      }
      last_send = now;
    }
    stats.maybe_print(options.log, transport, remotes.empty() ? 0.0 : remotes.front().rtt.rtt_ms, delay, stalls, me.tick());

    // Forget the hashes of ticks every player still present has reported (and the host stepped).
    std::uint64_t all_reported = me.tick();
    for (const Remote& r : remotes) {
      if (!r.gone && r.slot != k_no_slot) all_reported = std::min(all_reported, r.hash_through);
    }
    reference_hash.erase(reference_hash.begin(), reference_hash.lower_bound(all_reported));

    if (desync_tick != 0) {
      if (desync_at == Clock::time_point{}) {
        desync_at = now;
        options.log("host: desync at tick " + std::to_string(desync_tick) + ": telling everyone");
      }
      if (now - desync_at > std::chrono::milliseconds(400)) {
        for (Remote& r : remotes) send_relay(r);
        (void)me.finish_recording();
        Result<std::string> evidence = me.write_evidence(options.evidence_dir,
            "lockstep-desync-" + detail::hex(session) + "-host", desync_tick);
        result.outcome = Outcome::desync;
        result.desync_tick = desync_tick;
        result.evidence = evidence ? evidence.value() : evidence.error().message;
        result.tick = me.tick();
        result.hash = me.hash();
        stats.maybe_print(options.log, transport, 0.0, delay, stalls, me.tick(), true);
        return result;
      }
      continue;
    }
    if (options.stop_requested && options.stop_requested()) {
      options.log("host: ending the session at tick " + std::to_string(me.tick()));
      break;
    }
    if (me.tick() >= options.end_tick) {
      if (finished_at == Clock::time_point{}) finished_at = now;
      const bool all_acked = std::all_of(remotes.begin(), remotes.end(), [&](const Remote& r) {
        return r.gone || (r.relay_ack >= options.end_tick && (r.slot == k_no_slot || r.hash_through >= options.end_tick));
      });
      if (all_acked || now - finished_at > options.timeout_after) break;
    }
  }
  for (Remote& r : remotes) {
    if (!r.gone) {
      write_bye(out, header(MessageType::bye, r.token), Bye{me.tick()});
      transport.send(r.endpoint, out);
    }
  }
  transport.flush_due();
  Status finished = me.finish_recording();
  if (!finished) return failed(Outcome::network_failed, finished.error().message);
  stats.maybe_print(options.log, transport, remotes.empty() ? 0.0 : remotes.front().rtt.rtt_ms, delay, stalls, me.tick(), true);
  result.tick = me.tick();
  result.hash = me.hash();
  return result;
}

// ------------------------------------------------------------------------------------------------
// Peer and spectator

template <Simulation S>
SessionResult run_peer(const Endpoint& host, Role role, const SessionOptions<S>& options) {
  using Input = typename S::Input;
  constexpr std::uint32_t k_input_bytes = static_cast<std::uint32_t>(Input::k_bytes);
  SessionResult result;
  auto failed = [&](Outcome outcome, std::string message) {
    result.outcome = outcome;
    result.message = std::move(message);
    return result;
  };

  boost::asio::io_context io;
  Result<std::unique_ptr<UdpTransport>> bound = UdpTransport::bind(io, 0, options.netsim);
  if (!bound) return failed(Outcome::network_failed, bound.error().message);
  UdpTransport& transport = *bound.value();
  std::vector<std::byte> out;
  std::uint32_t sequence = 0;
  const std::string name = role == Role::spectator ? "spectator" : "peer";

  // The header of a datagram from the host; anything else is dropped and counted.
  auto header_from_host = [&](const Datagram& d) -> std::optional<Header> {
    if (d.from != host) {
      transport.count_drop("unknown address");
      return std::nullopt;
    }
    Result<Header> h = read_header(d.bytes);
    if (!h) {
      transport.count_drop(h.error().message);
      return std::nullopt;
    }
    return h.value();
  };

  // --- Handshake: hello until welcome or refusal --------------------------------------------
  std::optional<Welcome> welcome;
  std::uint64_t cookie = 0;
  const Clock::time_point asked = Clock::now();
  Clock::time_point last_hello{};
  while (!welcome) {
    const Clock::time_point now = Clock::now();
    if (now - asked > options.timeout_after) {
      return failed(Outcome::network_failed, "no answer from the host at " + host.address().to_string() + ":" +
                                                 std::to_string(host.port()));
    }
    if (now - last_hello > std::chrono::milliseconds(200)) {
      write_hello(out, Header{MessageType::hello, k_no_slot, 0, 0, ++sequence}, Hello{k_protocol_version, role, cookie});
      transport.send(host, out);
      last_hello = now;
    }
    io.run_for(std::chrono::milliseconds(2));
    transport.flush_due();
    for (const Datagram& d : transport.take_received()) {
      const std::optional<Header> h = header_from_host(d);
      if (!h) continue;
      if (h->type == MessageType::challenge) {
        Result<Challenge> challenge = read_challenge(d.bytes);
        if (challenge && cookie != challenge->cookie) {
          cookie = challenge->cookie;
          last_hello = {};  // answer at once
        }
        continue;
      }
      if (h->type == MessageType::refuse) {
        Result<Refuse> refusal = read_refuse(d.bytes);
        return failed(Outcome::refused, "refused by the host: " + (refusal ? refusal->text : std::string("(malformed refusal)")));
      }
      if (h->type != MessageType::welcome) continue;
      Result<Welcome> w = read_welcome(d.bytes);
      if (!w || w->input_bytes != k_input_bytes) {
        transport.count_drop("malformed");
        continue;
      }
      welcome = w.value();
    }
  }

  typename S::Config config{};
  try {
    CanonicalInputArchive in(welcome->config);
    in(config);
  } catch (const cereal::Exception& e) {
    return failed(Outcome::refused, std::string("the host's configuration is malformed: ") + e.what());
  }
  Result<Runner<S>> created = Runner<S>::create(config, welcome->seed);
  if (!created) return failed(Outcome::refused, "the host's configuration is rejected: " + created.error().message);
  const std::uint32_t players = welcome->players;
  if (created->simulation().players() != players) return failed(Outcome::refused, "the host's player count disagrees");
  const std::uint32_t delay = welcome->input_delay;
  const std::uint64_t end_tick = welcome->end_tick;
  const std::uint8_t slot = welcome->slot;
  const std::uint64_t token = welcome->token;
  const std::uint64_t session = welcome->session;
  detail::Participant<S> me(config, welcome->seed, players, end_tick, std::make_unique<Runner<S>>(std::move(created).value()));
  Status recording = me.start_recording(options.record);
  if (!recording) return failed(Outcome::refused, recording.error().message);
  options.log(name + ": joined session " + detail::hex(session) + (slot == k_no_slot ? " as a spectator" : " as player " + std::to_string(slot)) +
              ", " + std::to_string(players) + " players, " + std::to_string(end_tick) + " ticks, input delay " +
              std::to_string(delay) + ", netsim " + describe(options.netsim));

  // --- The loop --------------------------------------------------------------------------------
  std::vector<std::byte> my_inputs;        // ticks produced_first … produced_through
  std::uint64_t my_first_unacked = delay + 1;
  std::uint64_t produced_through = delay;
  std::uint64_t hash_acked = 0;
  detail::RttMeter rtt;
  detail::StatsPrinter stats;
  std::uint64_t stalls = 0;
  std::uint64_t stalled_on = 0;
  std::uint64_t desync_tick = 0;
  std::vector<SlotStatus> slot_states(players);
  bool started = false;
  bool host_finished = false;
  Clock::time_point start_at{};
  Clock::time_point last_heard = Clock::now();
  Clock::time_point last_send{};
  Clock::time_point finished_at{};
  FixedClock clock(60, 4);
  std::uint64_t budget = 0;
  Clock::time_point last_frame = Clock::now();
  const auto tick_period = std::chrono::microseconds(1'000'000 / 60);

  auto say_goodbye = [&] {
    for (int i = 0; i < 3; ++i) {  // three times: a goodbye lost is a 5-second timeout for the rest
      write_bye(out, Header{MessageType::bye, slot, session, token, ++sequence}, Bye{me.tick()});
      transport.send(host, out);
    }
    transport.flush_due();
  };

  auto send_update = [&] {
    Update u;
    u.relay_ack = me.known_through();
    u.first_tick = my_first_unacked;
    const std::uint64_t count = std::min<std::uint64_t>(my_inputs.size() / k_input_bytes, k_max_ticks_per_datagram);
    u.inputs.assign(my_inputs.begin(), my_inputs.begin() + static_cast<long>(count * k_input_bytes));
    u.hash_first_tick = hash_acked + 1;
    for (std::uint64_t t = hash_acked + 1;
         slot != k_no_slot && t <= me.tick() && u.hashes.size() < k_max_ticks_per_datagram; ++t) {
      u.hashes.push_back(me.hash_at(t));
    }
    u.timing = rtt.outgoing();
    write_update(out, Header{MessageType::update, slot, session, token, ++sequence}, u, k_input_bytes);
    transport.send(host, out);
  };

  for (;;) {
    io.run_for(std::chrono::milliseconds(1));
    transport.flush_due();
    for (const Datagram& d : transport.take_received()) {
      const std::optional<Header> h = header_from_host(d);
      if (!h) continue;
      if (h->session != session) {
        transport.count_drop("wrong session");
        continue;
      }
      if (h->token != token) {
        transport.count_drop("bad token");
        continue;
      }
      last_heard = Clock::now();
      if (h->type == MessageType::bye) {
        host_finished = true;
        continue;
      }
      if (h->type == MessageType::start) {
        Result<Start> s = read_start(d.bytes);
        if (s && !started) {
          started = true;
          start_at = Clock::now() + std::chrono::milliseconds(s->countdown_ms);
        }
        continue;
      }
      if (h->type != MessageType::relay) continue;
      Result<Relay> r = read_relay(d.bytes, players, k_input_bytes);
      if (!r) {
        transport.count_drop("malformed");
        continue;
      }
      if (!started && !r->inputs.empty()) {  // the start was lost, but the session is running
        started = true;
        start_at = Clock::now();
      }
      rtt.on_timing(r->timing);
      const std::size_t stride = static_cast<std::size_t>(players) * k_input_bytes;
      const std::size_t count = r->inputs.size() / stride;
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint64_t tick = r->first_tick + i;
        if (tick != me.known_through() + 1) continue;
        me.add_tick(std::span<const std::byte>(r->inputs.data() + i * stride, stride));
      }
      if (slot != k_no_slot && r->input_ack >= my_first_unacked) {
        const std::uint64_t drop = std::min<std::uint64_t>(r->input_ack - my_first_unacked + 1, my_inputs.size() / k_input_bytes);
        my_inputs.erase(my_inputs.begin(), my_inputs.begin() + static_cast<long>(drop * k_input_bytes));
        my_first_unacked += drop;
      }
      hash_acked = std::max(hash_acked, std::min(r->hash_ack, me.tick()));
      for (std::uint32_t p = 0; p < players; ++p) {
        if (r->slots[p].state != slot_states[p].state) {
          const SlotStatus& s = r->slots[p];
          if (s.state == SlotState::interrupted) options.log(name + ": player " + std::to_string(p) + " is interrupted");
          if (s.state == SlotState::gone) options.log(name + ": player " + std::to_string(p) + " is gone; neutral from tick " + std::to_string(s.neutral_from_tick));
          if (s.state == SlotState::active && slot_states[p].state == SlotState::interrupted) options.log(name + ": player " + std::to_string(p) + " is back");
          slot_states[p] = s;
        }
      }
      if (r->desync_tick != 0 && desync_tick == 0) desync_tick = r->desync_tick;
    }
    const Clock::time_point now = Clock::now();

    if (options.stop_requested && options.stop_requested()) {
      say_goodbye();
      Status finished = me.finish_recording();
      if (!finished) return failed(Outcome::network_failed, finished.error().message);
      options.log(name + ": left the session at tick " + std::to_string(me.tick()));
      stats.maybe_print(options.log, transport, rtt.rtt_ms, delay, stalls, me.tick(), true);
      result.tick = me.tick();
      result.hash = me.hash();
      return result;
    }

    if (desync_tick != 0) {
      (void)me.finish_recording();
      Result<std::string> evidence = me.write_evidence(options.evidence_dir,
          "lockstep-desync-" + detail::hex(session) + "-" + (slot == k_no_slot ? std::string("spectator") : "slot" + std::to_string(slot)),
          desync_tick);
      result.outcome = Outcome::desync;
      result.desync_tick = desync_tick;
      result.evidence = evidence ? evidence.value() : evidence.error().message;
      result.tick = me.tick();
      result.hash = me.hash();
      stats.maybe_print(options.log, transport, rtt.rtt_ms, delay, stalls, me.tick(), true);
      return result;
    }
    // A host that has gone (or said goodbye) ends the session here, unless every tick is
    // already in hand and this participant can finish on its own.
    if ((now - last_heard > options.timeout_after || host_finished) && me.known_through() < end_tick) {
      (void)me.finish_recording();
      result.tick = me.tick();
      result.hash = me.hash();
      return failed(Outcome::network_failed,
                    (host_finished ? std::string("the host ended the session")
                                   : "the host is gone (silent for " + std::to_string(options.timeout_after.count()) + " ms)") +
                        " at tick " + std::to_string(me.tick()) + "; the recording is saved");
    }

    if (started && now >= start_at) {
      budget += clock.advance(now - last_frame).ticks;
      // Own input for tick t + D, sampled as the clock runs (players only).
      if (slot != k_no_slot && budget > 0 && produced_through < std::min(me.tick() + delay + 1, end_tick)) {
        ++produced_through;
        std::vector<std::byte> bytes(k_input_bytes);
        const Input input = options.input ? options.input(slot, welcome->seed, produced_through) : Input{};
        input.to_bytes(std::span<std::byte, k_input_bytes>(bytes.data(), k_input_bytes));
        my_inputs.insert(my_inputs.end(), bytes.begin(), bytes.end());
      }
      // Spectators (and peers catching up) step as far as the relayed inputs go.
      while (budget > 0 || slot == k_no_slot) {
        Result<bool> stepped = me.step_if_ready(options.perturb, options.perturb_tick);
        if (!stepped) return failed(Outcome::network_failed, stepped.error().message);
        if (!stepped.value()) {
          if (budget > 0 && me.tick() < end_tick && stalled_on != me.tick() + 1) {
            ++stalls;
            stalled_on = me.tick() + 1;
          }
          budget = 0;  // time sync, as on the host
          break;
        }
        if (budget > 0) --budget;
      }
      budget = std::min<std::uint64_t>(budget, 8);
    }
    last_frame = now;

    if (now - last_send >= (started ? std::chrono::duration_cast<std::chrono::microseconds>(tick_period)
                                    : std::chrono::microseconds(100'000))) {
      send_update();
      last_send = now;
    }
    stats.maybe_print(options.log, transport, rtt.rtt_ms, delay, stalls, me.tick());

    if (me.tick() >= end_tick) {
      if (finished_at == Clock::time_point{}) finished_at = now;
      // Stay until the host holds every hash (so it can check the last ticks too), briefly.
      if (hash_acked >= end_tick || slot == k_no_slot || host_finished || now - finished_at > std::chrono::seconds(1)) break;
    }
  }
  say_goodbye();
  Status finished = me.finish_recording();
  if (!finished) return failed(Outcome::network_failed, finished.error().message);
  stats.maybe_print(options.log, transport, rtt.rtt_ms, delay, stalls, me.tick(), true);
  result.tick = me.tick();
  result.hash = me.hash();
  return result;
}

}  // namespace lockstep::net
