#include "lockstep/replay/evidence_bundle.hpp"

#include <algorithm>
#include <set>

#include "lockstep/engine/byte_io.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/engine/tick_limit.hpp"
#include "lockstep/replay/keyframe_codec.hpp"
#include "lockstep/replay/regular_file.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace lockstep::replay {
namespace {

/// Magic (8) + version (u32) + reserved (u32).
constexpr std::size_t k_bundle_preamble_bytes = 16;
constexpr std::size_t k_bundle_checksum_bytes = 8;

enum class BlobEncoding : std::uint8_t {
  whole = 0,           ///< the bytes themselves
  from_reference = 1,  ///< the difference from the first present participant's (keyframe_codec)
};

/// The two blobs of a record, by kind.
enum class Blob { replay, state };

std::uint32_t blob_bound(Blob kind) { return kind == Blob::replay ? k_max_bundle_replay_bytes : k_max_snapshot_bytes; }
const char* blob_name(Blob kind) { return kind == Blob::replay ? "replay" : "state"; }

/// Writes one blob, as its difference from `reference` when there is one of its size.
void put_blob(ByteWriter& w, std::span<const std::byte> bytes, const std::vector<std::byte>* reference,
              std::vector<std::byte>& scratch) {
  scratch.clear();
  const bool coded = reference != nullptr && reference->size() == bytes.size();
  if (coded) encode_keyframe_delta(bytes, *reference, scratch);
  // A difference that costs more than the bytes themselves is not worth it.
  const bool delta = coded && scratch.size() < bytes.size();
  w.u8(static_cast<std::uint8_t>(delta ? BlobEncoding::from_reference : BlobEncoding::whole));
  w.u32(static_cast<std::uint32_t>(bytes.size()));
  const std::span<const std::byte> stored = delta ? std::span<const std::byte>(scratch) : bytes;
  w.u32(static_cast<std::uint32_t>(stored.size()));
  w.bytes(stored);
}

class BundleParser {
 public:
  explicit BundleParser(std::span<const std::byte> body) : in_(body) {}

  Result<EvidenceBundle> parse() {
    EvidenceBundle bundle;
    bundle.simulation = in_.text(k_max_text_bytes);
    bundle.session = in_.u64();
    bundle.desync_tick = in_.u64();
    bundle.agreed_tick = in_.u64();
    const std::uint32_t count = in_.u32();
    if (!in_.ok()) return cut("the header");
    if (bundle.simulation.empty()) return fail("the bundle names no simulation");
    if (bundle.desync_tick == 0 || bundle.desync_tick >= k_tick_limit) {
      return fail("the bundle's desync tick ", bundle.desync_tick, " is outside 1 to ", k_tick_limit - 1);
    }
    if (bundle.agreed_tick >= bundle.desync_tick) {
      return fail("the bundle's agreed tick ", bundle.agreed_tick, " is not before its desync tick ", bundle.desync_tick);
    }
    if (count == 0 || count > k_max_bundle_participants) {
      return fail("the bundle lists ", count, " participants, outside 1 to ", k_max_bundle_participants);
    }
    bundle.participants.reserve(count);
    for (std::uint32_t i = 0; i < count; ++i) {
      Result<BundleParticipant> participant = parse_participant(i);
      if (!participant) return participant.error();
      if (Status fits = check_roles(bundle.participants, *participant, i); !fits) return fits.error();
      bundle.participants.push_back(std::move(participant).value());
      // The first present participant's records are what later ones may be coded against.
      if (!reference_ && bundle.participants.back().present()) reference_ = &bundle.participants.back();
    }
    if (!in_.at_end()) return fail("the bundle has ", in_.remaining(), " bytes after its last participant");
    return bundle;
  }

 private:
  Error cut(const std::string& where) const { return Error{"the bundle ends inside " + where}; }

  Result<BundleParticipant> parse_participant(std::uint32_t index) {
    const std::string who = "participant " + std::to_string(index);
    BundleParticipant p;
    const std::uint8_t role = in_.u8();
    p.slot = in_.u32();
    const std::uint8_t hash_bits = in_.u8();
    const std::uint64_t hash = in_.u64();
    p.missing = in_.text(k_max_text_bytes);
    const std::uint8_t present = in_.u8();
    if (!in_.ok()) return cut(who);
    if (role > static_cast<std::uint8_t>(ParticipantRole::spectator)) return fail(who, " has an unknown role ", unsigned{role});
    p.role = static_cast<ParticipantRole>(role);
    if (hash_bits != 0 && hash_bits != 32 && hash_bits != 64) {
      return fail(who, "'s hash has ", unsigned{hash_bits}, " bits, not 0, 32 or 64");
    }
    if ((hash_bits == 0 && hash != 0) || (hash_bits == 32 && hash > 0xFFFFFFFFu)) {
      return fail(who, "'s hash ", hash, " does not fit its ", unsigned{hash_bits}, " bits");
    }
    if (hash_bits != 0) p.desync_hash = ReportedHash{hash, hash_bits};
    if (present > 1) return fail(who, "'s presence flag is ", unsigned{present}, ", not 0 or 1");
    if ((present == 1) != p.missing.empty()) {
      return fail(who, present == 1 ? " is present but says why it is missing" : " is missing but does not say why");
    }
    if (present == 0) return p;
    Result<std::vector<std::byte>> replay = parse_blob(who, Blob::replay);
    if (!replay) return replay.error();
    Result<std::vector<std::byte>> state = parse_blob(who, Blob::state);
    if (!state) return state.error();
    p.replay = std::move(replay).value();
    p.state = std::move(state).value();
    return p;
  }

  Result<std::vector<std::byte>> parse_blob(const std::string& who, Blob kind) {
    const std::uint8_t encoding = in_.u8();
    const std::uint32_t size = in_.u32();
    const std::span<const std::byte> code = in_.blob(blob_bound(kind));
    const std::string what = who + "'s " + blob_name(kind);
    if (!in_.ok()) return cut(what);
    if (size == 0 || size > blob_bound(kind)) {
      return fail(what, " is ", size, " bytes, outside 1 to ", blob_bound(kind));
    }
    decoded_ += size;
    if (decoded_ > k_max_bundle_bytes) return fail("the bundle's records decode to more than ", k_max_bundle_bytes, " bytes");
    if (encoding == static_cast<std::uint8_t>(BlobEncoding::whole)) {
      if (code.size() != size) return fail(what, " declares ", size, " bytes but holds ", code.size());
      return std::vector<std::byte>(code.begin(), code.end());
    }
    if (encoding != static_cast<std::uint8_t>(BlobEncoding::from_reference)) {
      return fail(what, " has an unknown encoding ", unsigned{encoding});
    }
    if (!reference_) return fail(what, " is coded against the first present participant's, but none came before it");
    const std::vector<std::byte>& reference = kind == Blob::replay ? reference_->replay : reference_->state;
    if (reference.size() != size) {
      return fail(what, " is coded against the first present participant's of ", reference.size(), " bytes, but declares ",
                  size);
    }
    Result<std::vector<std::byte>> bytes = decode_keyframe_delta(code, reference);
    if (!bytes) return fail(what, ": ", bytes.error().message);
    return bytes;
  }

  /// Players hold distinct slots, and so does a host that plays; spectators hold none.
  Status check_roles(const std::vector<BundleParticipant>& before, const BundleParticipant& p, std::uint32_t index) {
    const std::string who = "participant " + std::to_string(index);
    const bool plays = p.role == ParticipantRole::player || (p.role == ParticipantRole::host && p.slot != k_no_bundle_slot);
    if (plays) {
      if (p.slot >= k_max_replay_players) return fail(who, " plays in slot ", p.slot, ", not below ", k_max_replay_players);
      if (!slots_.insert(p.slot).second) return fail(who, " is a second player of slot ", p.slot);
    } else if (p.slot != k_no_bundle_slot) {
      return fail(who, " is a spectator but has slot ", p.slot);
    }
    if (p.role == ParticipantRole::host && std::any_of(before.begin(), before.end(), [](const BundleParticipant& b) {
          return b.role == ParticipantRole::host;
        })) {
      return fail(who, " is a second host");
    }
    return {};
  }

  ByteReader in_;
  std::uint64_t decoded_ = 0;
  std::set<std::uint32_t> slots_;
  const BundleParticipant* reference_ = nullptr;  ///< in the bundle's participants (reserved: they stay put)
};

}  // namespace

std::string participant_name(const BundleParticipant& participant) {
  switch (participant.role) {
    case ParticipantRole::host:
      return participant.slot == k_no_bundle_slot ? "the host" : "the host, slot " + std::to_string(participant.slot);
    case ParticipantRole::player: return "slot " + std::to_string(participant.slot);
    case ParticipantRole::spectator: return "a spectator";
  }
  return "a participant";
}

Result<std::vector<std::byte>> encode_bundle(const EvidenceBundle& bundle) {
  if (bundle.participants.empty() || bundle.participants.size() > k_max_bundle_participants) {
    return fail("a bundle lists 1 to ", k_max_bundle_participants, " participants, not ", bundle.participants.size());
  }
  if (bundle.agreed_tick >= bundle.desync_tick) {
    return fail("a bundle's agreed tick (", bundle.agreed_tick, ") must come before its desync tick (", bundle.desync_tick, ")");
  }
  std::vector<std::byte> out;
  ByteWriter w(out);
  for (const char c : k_bundle_magic) w.u8(static_cast<std::uint8_t>(c));
  w.u32(k_bundle_version);
  w.u32(0);
  w.text(bundle.simulation);
  w.u64(bundle.session);
  w.u64(bundle.desync_tick);
  w.u64(bundle.agreed_tick);
  w.u32(static_cast<std::uint32_t>(bundle.participants.size()));
  const BundleParticipant* reference = nullptr;
  std::vector<std::byte> scratch;
  std::uint64_t decoded = 0;
  for (const BundleParticipant& p : bundle.participants) {
    w.u8(static_cast<std::uint8_t>(p.role));
    w.u32(p.slot);
    w.u8(p.desync_hash ? p.desync_hash->bits : 0);
    w.u64(p.desync_hash ? p.desync_hash->value : 0);
    w.text(p.missing.substr(0, k_max_text_bytes));
    w.u8(p.present() ? 1 : 0);
    if (!p.present()) continue;
    if (p.replay.empty() || p.replay.size() > k_max_bundle_replay_bytes || p.state.empty() ||
        p.state.size() > k_max_snapshot_bytes) {
      return fail(participant_name(p), "'s evidence (a replay of ", p.replay.size(), " bytes, a state of ", p.state.size(),
                  ") is empty or over the bundle's bounds");
    }
    decoded += p.replay.size() + p.state.size();
    put_blob(w, p.replay, reference ? &reference->replay : nullptr, scratch);
    put_blob(w, p.state, reference ? &reference->state : nullptr, scratch);
    if (reference == nullptr) reference = &p;
  }
  if (decoded > k_max_bundle_bytes || out.size() + k_bundle_checksum_bytes > k_max_bundle_bytes) {
    return fail("the bundle would be over its ", k_max_bundle_bytes, "-byte bound");
  }
  w.u64(xxh3_64(out));
  // Every rule a reader holds a bundle to (names, ticks, slots, hosts) is checked once, there.
  if (Result<EvidenceBundle> readable = parse_bundle(out); !readable) {
    return fail("the bundle would not read back: ", readable.error().message);
  }
  return out;
}

Result<EvidenceBundle> parse_bundle(std::span<const std::byte> bytes) {
  if (bytes.size() < k_bundle_magic.size() ||
      !std::equal(k_bundle_magic.begin(), k_bundle_magic.end(), reinterpret_cast<const char*>(bytes.data()))) {
    return fail("not a lockstep evidence bundle");
  }
  if (bytes.size() < k_bundle_preamble_bytes + k_bundle_checksum_bytes) return fail("the bundle ends inside its preamble");
  ByteReader preamble(bytes.subspan(k_bundle_magic.size(), 8));
  const std::uint32_t version = preamble.u32();
  if (version != k_bundle_version) {
    return fail("evidence bundle version ", version, " is not this build's ", k_bundle_version);
  }
  const std::span<const std::byte> covered = bytes.first(bytes.size() - k_bundle_checksum_bytes);
  ByteReader checksum(bytes.last(k_bundle_checksum_bytes));
  if (checksum.u64() != xxh3_64(covered)) {
    return fail("the bundle fails its checksum: it is corrupted or was cut short");
  }
  return BundleParser(covered.subspan(k_bundle_preamble_bytes)).parse();
}

Result<EvidenceBundle> read_bundle_file(const std::string& path) {
  Result<std::vector<std::byte>> bytes = read_regular_file(path, k_max_bundle_bytes);
  if (!bytes) return bytes.error();
  Result<EvidenceBundle> bundle = parse_bundle(*bytes);
  if (!bundle) return fail("'", path, "': ", bundle.error().message);
  return bundle;
}

Status write_bundle_file(const std::string& path, const EvidenceBundle& bundle) {
  Result<std::vector<std::byte>> bytes = encode_bundle(bundle);
  if (!bytes) return bytes.error();
  return write_file_whole(path, path + ".part", *bytes, "the bundle");
}

bool looks_like_bundle(const std::string& path) {
  // Any size: a bundle over the bound is then refused by its own reader, in its own words.
  Result<RegularFile> file = RegularFile::open(path, ~std::uint64_t{0});
  if (!file || file->size() < k_bundle_magic.size()) return false;
  std::vector<std::byte> magic(k_bundle_magic.size());
  if (!file->read_at(0, magic)) return false;
  return std::equal(k_bundle_magic.begin(), k_bundle_magic.end(), reinterpret_cast<const char*>(magic.data()));
}

}  // namespace lockstep::replay
