#pragma once
/// A desync evidence bundle: one file holding every participant's evidence of one desync, as the
/// host of a session collects it. Each participant's record is its evidence replay (a replay
/// file, from a tick everyone agreed on to the desync tick, re-simulated from the inputs the host
/// relayed) and its own state at the desync tick (a snapshot); a participant that could not send
/// its evidence is listed with why. Records are stored as their difference from the first
/// present participant's (the same coding as keyframes, keyframe_codec.hpp): participants that
/// agree cost almost nothing. The format is described in replay/FORMAT.md ("Evidence bundles");
/// every bound a reader checks before it allocates is named here.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/engine/result.hpp"
#include "lockstep/replay/format.hpp"

namespace lockstep::replay {

/// The first 8 bytes of every bundle.
inline constexpr std::string_view k_bundle_magic = "LSBUNDLE";
inline constexpr std::uint32_t k_bundle_version = 1;
/// Participants a bundle lists at most: a host, every player a session has, and spectators.
inline constexpr std::uint32_t k_max_bundle_participants = 1 + k_max_replay_players + 64;
/// The largest evidence replay a record holds, decoded.
inline constexpr std::uint32_t k_max_bundle_replay_bytes = 64u << 20;
/// The largest bundle file, and the most its records decode to, together.
inline constexpr std::uint64_t k_max_bundle_bytes = 1ull << 30;
/// A player's slot in a bundle when the participant is no player (the host, a spectator).
inline constexpr std::uint32_t k_no_bundle_slot = 0xFFFFFFFF;

enum class ParticipantRole : std::uint8_t { host = 0, player = 1, spectator = 2 };

/// A state hash as a participant reported it: whole, or the low 32 bits the wire carries.
struct ReportedHash {
  std::uint64_t value = 0;
  std::uint8_t bits = 64;  ///< 32 or 64
  friend bool operator==(const ReportedHash&, const ReportedHash&) = default;
};

/// One participant's evidence, or why it is missing.
struct BundleParticipant {
  ParticipantRole role = ParticipantRole::player;
  std::uint32_t slot = k_no_bundle_slot;      ///< a player's slot (< k_max_replay_players), a playing host's too
  std::optional<ReportedHash> desync_hash;    ///< its state hash at the desync tick, when known
  std::string missing;                        ///< empty: present; else why its evidence is not here
  std::vector<std::byte> replay;              ///< present: its evidence replay, a replay file's bytes
  std::vector<std::byte> state;               ///< present: its state at the desync tick, a snapshot

  [[nodiscard]] bool present() const { return missing.empty(); }
};

struct EvidenceBundle {
  std::string simulation;          ///< the simulation type's k_name
  std::uint64_t session = 0;       ///< the session's id
  std::uint64_t desync_tick = 0;   ///< the first tick whose hashes disagreed
  std::uint64_t agreed_tick = 0;   ///< the last tick every participant's hash agreed on (< desync_tick)
  std::vector<BundleParticipant> participants;  ///< the host's first, when it is listed
};

/// "the host" ("the host, slot 0" when it plays), "slot 2" or "a spectator".
std::string participant_name(const BundleParticipant& participant);

/// The bundle's bytes; fails on a bundle the format cannot hold (over a bound, or no participant).
Result<std::vector<std::byte>> encode_bundle(const EvidenceBundle& bundle);

/// Parses a whole bundle from memory, checking its checksum, every bound and rule of FORMAT.md
/// before anything is allocated; errors are one line ("not a lockstep evidence bundle", "the
/// bundle fails its checksum: it is corrupted", "participant 3's state does not decode: …").
Result<EvidenceBundle> parse_bundle(std::span<const std::byte> bytes);

/// Reads and parses a bundle file (a regular file of at most k_max_bundle_bytes).
Result<EvidenceBundle> read_bundle_file(const std::string& path);

/// Writes a bundle to `path` whole or not at all (beside it first, then renamed into place).
Status write_bundle_file(const std::string& path, const EvidenceBundle& bundle);

/// Whether `path` is a regular file that begins as a bundle does.
bool looks_like_bundle(const std::string& path);

}  // namespace lockstep::replay
