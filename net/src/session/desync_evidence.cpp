#include "lockstep/net/session/desync_evidence.hpp"

#include <algorithm>

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
  // Sized once and filled (not grown byte by byte): g++ 12 at -O3 for s390x takes a vector grown
  // from one byte for an out-of-bounds copy (-Warray-bounds), depending on what it inlines beside it.
  const std::string_view kept = why.substr(0, replay::k_max_text_bytes);
  std::vector<std::byte> out(1 + kept.size());
  out[0] = static_cast<std::byte>(EvidenceKind::none);
  std::transform(kept.begin(), kept.end(), out.begin() + 1, [](char c) { return static_cast<std::byte>(c); });
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
