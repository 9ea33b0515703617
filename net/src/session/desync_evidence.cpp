#include "lockstep/net/session/desync_evidence.hpp"

#include "lockstep/engine/byte_io.hpp"

namespace lockstep::net {
namespace {

enum class EvidenceKind : std::uint8_t { none = 0, evidence = 1 };

}  // namespace

std::vector<std::byte> encode_evidence(const ParticipantEvidence& evidence) {
  std::vector<std::byte> out;
  ByteWriter w(out);
  w.u8(static_cast<std::uint8_t>(EvidenceKind::evidence));
  w.u64(evidence.from_tick);
  w.blob(evidence.replay);
  w.bytes(evidence.state);
  return out;
}

std::vector<std::byte> encode_no_evidence(std::string_view why) {
  std::vector<std::byte> out;
  ByteWriter w(out);
  w.u8(static_cast<std::uint8_t>(EvidenceKind::none));
  const std::string_view kept = why.substr(0, replay::k_max_text_bytes);
  w.bytes(std::as_bytes(std::span(kept.data(), kept.size())));
  return out;
}

Result<SentEvidence> decode_evidence(std::span<const std::byte> bytes) {
  ByteReader r(bytes);
  const std::uint8_t kind = r.u8();
  if (!r.ok()) return fail("it sent empty evidence");
  SentEvidence sent;
  if (kind == static_cast<std::uint8_t>(EvidenceKind::none)) {
    if (r.remaining() == 0 || r.remaining() > replay::k_max_text_bytes) return fail("it sent no evidence and no reason of 1 to ",
                                                                                   replay::k_max_text_bytes, " bytes");
    const std::span<const std::byte> why = r.bytes(r.remaining());
    sent.none.assign(reinterpret_cast<const char*>(why.data()), why.size());
    return sent;
  }
  if (kind != static_cast<std::uint8_t>(EvidenceKind::evidence)) return fail("its evidence is of an unknown kind ", unsigned{kind});
  ParticipantEvidence e;
  e.from_tick = r.u64();
  const std::span<const std::byte> replay_bytes = r.blob(replay::k_max_bundle_replay_bytes);
  if (!r.ok() || replay_bytes.empty()) return fail("its evidence ends inside its replay, or has none");
  if (r.remaining() == 0 || r.remaining() > replay::k_max_snapshot_bytes) {
    return fail("its evidence holds a state of ", r.remaining(), " bytes, outside 1 to ", replay::k_max_snapshot_bytes);
  }
  e.replay.assign(replay_bytes.begin(), replay_bytes.end());
  const std::span<const std::byte> state = r.bytes(r.remaining());
  e.state.assign(state.begin(), state.end());
  sent.evidence = std::move(e);
  return sent;
}

}  // namespace lockstep::net
