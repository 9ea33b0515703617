#pragma once
/// The replay file format's constants and bounds. The format itself is described in
/// replay/FORMAT.md; every limit a reader checks before it allocates is named here.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lockstep/engine/tick_limit.hpp"

namespace lockstep::replay {

/// The first 8 bytes of every replay file.
inline constexpr std::string_view k_file_magic = "LOCKSTEP";
/// The format version this build writes and reads; a reader refuses any other, naming it.
/// Version 2 frames chunks with varints and a 32-bit checksum, and codes input runs with
/// varints: an inputs-only recording of the 4-bot arena takes half the bytes of version 1.
inline constexpr std::uint32_t k_format_version = 2;
/// Magic (8) + format version (u32) + reserved (u32).
inline constexpr std::size_t k_preamble_bytes = 16;
/// A chunk's header: type (u8), payload length (varint), first tick (varint), last − first
/// (varint), then the header check (u32: the low half of XXH3-64 over the header bytes before
/// it). The header check lets a reader tell a chunk cut short by a crash (its header intact,
/// its payload incomplete) from a corrupted length that only looks like one. Varints take at
/// most 10 bytes each, so a header at most 35.
inline constexpr std::size_t k_chunk_header_check_bytes = 4;
inline constexpr std::size_t k_max_chunk_header_bytes = 1 + 3 * 10 + k_chunk_header_check_bytes;
/// The checksum that closes every chunk: the low half of XXH3-64 over the header and payload.
inline constexpr std::size_t k_chunk_checksum_bytes = 4;
/// The most bytes a chunk takes beyond its payload.
inline constexpr std::size_t k_max_chunk_framing_bytes = k_max_chunk_header_bytes + k_chunk_checksum_bytes;
/// The most bytes an end record takes: framing and the final hash.
inline constexpr std::size_t k_max_end_chunk_bytes = k_max_chunk_framing_bytes + 8;

enum class ChunkType : std::uint8_t {
  header = 1,          ///< everything that built S0
  start_snapshot = 2,  ///< S0 itself, for a session that starts mid-way
  inputs = 3,          ///< every player's input for a range of ticks, run-length coded
  hashes = 4,          ///< state hashes of the ticks in range that are multiples of hash_every
  keyframe = 5,        ///< a snapshot, for seeking
  end = 6,             ///< the last tick and its hash: the recording finished cleanly
  phase_hashes = 7,    ///< the hashes of the checkpoints inside the step of some ticks in range
};

/// A chunk's name for messages ("inputs", …), or "unknown".
std::string_view chunk_type_name(std::uint32_t type);

// Bounds on everything a reader takes from a file, checked before anything is allocated.
inline constexpr std::uint64_t k_max_file_bytes = 1ull << 32;          ///< 4 GiB
inline constexpr std::uint32_t k_max_header_payload_bytes = 1u << 20;  ///< 1 MiB
inline constexpr std::uint32_t k_max_snapshot_bytes = 256u << 20;      ///< 256 MiB (keyframes too)
inline constexpr std::uint32_t k_max_inputs_payload_bytes = 16u << 20;
inline constexpr std::uint32_t k_max_hashes_payload_bytes = 16u << 20;
inline constexpr std::uint32_t k_max_phase_hashes_payload_bytes = 16u << 20;
/// Players a replay holds, for any simulation: as many as a World scene (k_max_world_players) or a
/// network session (net::k_max_session_players) has, so the format is not what limits either.
inline constexpr std::uint32_t k_max_replay_players = 256;
inline constexpr std::uint32_t k_max_input_bytes = 64;                 ///< per player per tick
inline constexpr std::uint64_t k_max_ticks_per_chunk = 1u << 20;
inline constexpr std::size_t k_max_text_bytes = 4096;                  ///< names, layout, build

/// How often the recorder completes and writes a chunk, in ticks (the issue's "at least every
/// 60 ticks"): a crash loses at most this many ticks.
inline constexpr std::uint64_t k_ticks_per_chunk = 60;

}  // namespace lockstep::replay
