#pragma once
/// Snapshots: the whole state of a simulation at a tick, as bytes that can be kept in memory,
/// written to a replay as a keyframe, or (later) sent to a peer.
///
/// Layout: magic "LSNP" (4 bytes), format version (u16 LE), then the canonical encoding of
/// (tick: u64, state). The state hash at that tick is XXH3-64 of everything after the version.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lockstep/engine/canonical_archive.hpp"
#include "lockstep/engine/result.hpp"
#include "lockstep/engine/simulation.hpp"

namespace lockstep {

inline constexpr std::uint32_t k_snapshot_magic = 0x504E534Cu;  // "LSNP" little-endian
inline constexpr std::uint16_t k_snapshot_version = 1;
inline constexpr std::size_t k_snapshot_header_bytes = 6;

/// A state and the tick it belongs to.
struct Snapshot {
  std::uint64_t tick = 0;
  std::vector<std::byte> bytes;  ///< header + canonical (tick, state)
};

/// Encodes (tick, sim) into `out`, replacing its contents but keeping its capacity.
template <Simulation S>
void encode_snapshot(std::uint64_t tick, const S& sim, std::vector<std::byte>& out) {
  out.clear();
  VectorSink sink(out);
  CanonicalOutputArchive archive(sink);
  archive(k_snapshot_magic, k_snapshot_version, tick, sim);
}

/// Decodes untrusted snapshot bytes into `out` and reports the tick. `out` is overwritten even
/// on failure, so pass a spare instance, never live state.
template <Simulation S>
Status decode_snapshot(std::span<const std::byte> bytes, S& out, std::uint64_t& tick) {
  if (bytes.size() < k_snapshot_header_bytes + sizeof(std::uint64_t)) {
    return fail("snapshot truncated: ", bytes.size(), " bytes");
  }
  try {
    CanonicalInputArchive archive(bytes);
    std::uint32_t magic = 0;
    std::uint16_t version = 0;
    archive(magic, version);
    if (magic != k_snapshot_magic) return fail("not a lockstep snapshot");
    if (version != k_snapshot_version) {
      return fail("snapshot format version ", version, " is not the supported version ",
                  k_snapshot_version);
    }
    archive(tick, out);
    if (archive.remaining() != 0) {
      return fail("snapshot has ", archive.remaining(), " unexpected bytes after the state");
    }
  } catch (const cereal::Exception& e) {
    return fail("snapshot is malformed: ", e.what());
  } catch (const std::length_error&) {
    return fail("snapshot is malformed: a length is impossible");
  }
  Status valid = out.check();
  if (!valid) return fail("snapshot is invalid: ", valid.error().message);
  return {};
}

}  // namespace lockstep
