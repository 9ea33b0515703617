#include "lockstep/replay/replay_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "lockstep/engine/byte_io.hpp"
#include "lockstep/engine/state_hash.hpp"

namespace lockstep::replay {

std::vector<std::byte> encode_header(const ReplayHeader& h) {
  std::vector<std::byte> out;
  ByteWriter w(out);
  w.text(h.engine_version);
  w.text(h.simulation);
  w.u64(h.compatibility_id);
  w.text(h.build);
  w.u64(h.seed);
  w.u32(h.players);
  w.u32(h.input_bytes);
  w.text(h.input_layout);
  w.u32(h.hash_every);
  w.u32(h.keyframe_every);
  w.u64(h.start_tick);
  w.u64(h.start_hash);
  w.blob(h.config);
  return out;
}

namespace {

/// A replay file: each piece in one write(2), and fsync when the end record is written.
class FileSink final : public ReplaySink {
 public:
  explicit FileSink(int fd) : fd_(fd) {}
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  ~FileSink() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status write(std::span<const std::byte> bytes, const WrittenChunks&) override {
    const std::byte* data = bytes.data();
    std::size_t size = bytes.size();
    while (size > 0) {
      const ssize_t n = ::write(fd_, data, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        return fail("cannot write the replay: ", std::strerror(errno));
      }
      data += n;
      size -= static_cast<std::size_t>(n);
    }
    return {};
  }

  Status close() override {
    const bool synced = ::fsync(fd_) == 0 || errno == EINVAL;
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    if (!synced) return fail("cannot sync the replay: ", std::strerror(error));
    return {};
  }

 private:
  int fd_;
};

}  // namespace

Result<ReplayWriter> ReplayWriter::create(const std::string& path, const ReplayHeader& header,
                                          std::span<const std::byte> start_snapshot,
                                          std::uint64_t max_file_bytes, bool whole_keyframes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot create '", path, "': ", std::strerror(errno));
  return create(std::make_unique<FileSink>(fd), header, start_snapshot, max_file_bytes, whole_keyframes);
}

Result<ReplayWriter> ReplayWriter::create(std::unique_ptr<ReplaySink> sink, const ReplayHeader& header,
                                          std::span<const std::byte> start_snapshot, std::uint64_t max_file_bytes,
                                          bool whole_keyframes) {
  if (header.players < 1 || header.players > k_max_replay_players || header.input_bytes < 1 ||
      header.input_bytes > k_max_input_bytes) {
    return fail("cannot record: players or input size out of range");
  }
  if (header.start_tick >= k_tick_limit) return fail("cannot record: start tick ", header.start_tick, " is not below the format's limit ", k_tick_limit);
  if ((header.start_tick > 0) != !start_snapshot.empty()) {
    return fail("cannot record: a start snapshot goes with a start tick above 0, and only then");
  }
  // The reader's bounds, so that nothing written here is refused there.
  for (const std::string* text : {&header.engine_version, &header.simulation, &header.build, &header.input_layout}) {
    if (text->size() > k_max_text_bytes) return fail("cannot record: a header text is over ", k_max_text_bytes, " bytes");
  }
  if (start_snapshot.size() > k_max_snapshot_bytes) {
    return fail("cannot record: the start state takes ", start_snapshot.size(), " bytes, over the format's ",
                k_max_snapshot_bytes, "-byte bound for a snapshot");
  }
  const std::vector<std::byte> header_payload = encode_header(header);
  if (header_payload.size() > k_max_header_payload_bytes) {
    return fail("cannot record: the header takes ", header_payload.size(), " bytes, over the format's ",
                k_max_header_payload_bytes, "-byte bound");
  }
  const std::uint64_t opening = k_preamble_bytes + k_max_chunk_framing_bytes + header_payload.size() +
                                (start_snapshot.empty() ? 0 : k_max_chunk_framing_bytes + start_snapshot.size()) +
                                k_max_end_chunk_bytes;
  if (opening > max_file_bytes) {
    return fail("cannot record: the header and start state alone take ", opening, " bytes, over the ",
                max_file_bytes, "-byte limit of a replay file");
  }
  ReplayWriter writer(std::move(sink), header, max_file_bytes, whole_keyframes);
  ByteWriter w(writer.chunk_);
  for (char c : k_file_magic) w.u8(static_cast<std::uint8_t>(c));
  w.u32(k_format_version);
  w.u32(0);
  writer.encode_chunk({ChunkType::header, header.start_tick, header.start_tick, header_payload});
  if (header.start_tick > 0) {
    writer.encode_chunk({ChunkType::start_snapshot, header.start_tick, header.start_tick, start_snapshot});
  }
  WrittenChunks what;
  what.opening = true;
  what.first_tick = what.last_tick = header.start_tick;
  if (Status status = writer.emit(what); !status) return status.error();
  return writer;
}

ReplayWriter::ReplayWriter(std::unique_ptr<ReplaySink> sink, const ReplayHeader& header,
                           std::uint64_t max_file_bytes, bool whole_keyframes)
    : sink_(std::move(sink)),
      players_(header.players),
      input_bytes_(header.input_bytes),
      hash_every_(header.hash_every),
      keyframe_every_(header.keyframe_every),
      whole_keyframes_(whole_keyframes),
      max_file_bytes_(max_file_bytes),
      last_tick_(header.start_tick),
      last_hash_(header.start_hash),
      written_tick_(header.start_tick),
      written_hash_(header.start_hash),
      pending_first_(header.start_tick + 1) {}

bool ReplayWriter::fits(std::size_t payload_a, std::size_t payload_b, std::size_t payload_c,
                        std::size_t payload_d) const {
  const std::uint64_t more = k_max_chunk_framing_bytes + payload_a +
                             (payload_b > 0 ? k_max_chunk_framing_bytes + payload_b : 0) +
                             (payload_c > 0 ? k_max_chunk_framing_bytes + payload_c : 0) +
                             (payload_d > 0 ? k_max_chunk_framing_bytes + payload_d : 0);
  return bytes_written_ + more + k_max_end_chunk_bytes <= max_file_bytes_ &&
         (sink_ == nullptr || more <= sink_->max_piece_bytes());
}

Status ReplayWriter::end_at_limit() {
  reached_limit_ = true;
  pending_inputs_.clear();
  pending_hashes_.clear();
  pending_phases_.clear();
  return write_end(written_tick_, written_hash_);
}

void ReplayWriter::encode_chunk(const ChunkOut& c) {
  ByteWriter w(chunk_);
  // Each checksum covers its own chunk's bytes so far, from the chunk's first byte.
  const std::size_t start = chunk_.size();
  const auto checksum = [&] {
    return static_cast<std::uint32_t>(xxh3_64(std::span(chunk_).subspan(start)) & 0xFFFFFFFFu);
  };
  w.u8(static_cast<std::uint8_t>(c.type));
  w.varint(c.payload.size());
  w.varint(c.first);
  w.varint(c.last - c.first);
  w.u32(checksum());
  w.bytes(c.payload);
  w.u32(checksum());
}

Status ReplayWriter::emit(const WrittenChunks& what) {
  if (!sink_) {
    chunk_.clear();
    return fail("the replay is already closed");
  }
  Status status = sink_->write(chunk_, what);
  if (status) bytes_written_ += chunk_.size();
  chunk_.clear();
  return status;
}

Status ReplayWriter::add_tick(std::uint64_t tick, std::span<const std::byte> inputs, std::uint64_t hash,
                              std::span<const std::string> phase_names, std::span<const PhaseHash> phases) {
  if (reached_limit_) return {};
  if (tick != last_tick_ + 1) return fail("cannot record tick ", tick, " after tick ", last_tick_);
  if (inputs.size() != static_cast<std::size_t>(players_) * input_bytes_) {
    return fail("cannot record tick ", tick, ": ", inputs.size(), " input bytes");
  }
  if (Status kept = keep_phase_hashes(tick, phase_names, phases); !kept) return kept;
  pending_inputs_.insert(pending_inputs_.end(), inputs.begin(), inputs.end());
  if (hash_every_ > 0 && tick % hash_every_ == 0) pending_hashes_.push_back(hash);
  last_tick_ = tick;
  last_hash_ = hash;
  const bool keyframe_due = keyframe_every_ > 0 && tick % keyframe_every_ == 0;
  if (last_tick_ - pending_first_ + 1 >= k_ticks_per_chunk && !keyframe_due) return flush();
  return {};
}

Status ReplayWriter::flush() { return write_pending({}); }

Status ReplayWriter::write_pending(std::span<const std::byte> keyframe) {
  if (reached_limit_) return {};
  if (!sink_) return fail("the replay is already closed");
  if (last_tick_ < pending_first_) {
    if (keyframe.empty()) return {};
    if (!fits(keyframe.size())) return end_at_limit();
    encode_chunk({ChunkType::keyframe, last_tick_, last_tick_, keyframe});
    WrittenChunks what;
    what.first_tick = what.last_tick = last_tick_;
    what.keyframe = true;
    return emit(what);
  }
  const std::uint64_t first = pending_first_;
  const std::uint64_t last = last_tick_;
  const std::uint64_t ticks = last - first + 1;
  const std::size_t stride = static_cast<std::size_t>(players_) * input_bytes_;

  // Inputs, run-length coded per player, counts and lengths as varints: a held or idle input
  // costs one run per chunk (3 bytes for the built-in world's 2-byte input).
  std::vector<std::byte> payload;
  ByteWriter w(payload);
  std::vector<std::byte> runs;
  ByteWriter r(runs);
  for (std::uint32_t p = 0; p < players_; ++p) {
    runs.clear();
    std::uint64_t count = 0;
    std::uint64_t t = 0;
    while (t < ticks) {
      const std::byte* value = pending_inputs_.data() + t * stride + p * input_bytes_;
      std::uint64_t length = 1;
      while (t + length < ticks &&
             std::memcmp(value, pending_inputs_.data() + (t + length) * stride + p * input_bytes_, input_bytes_) == 0) {
        ++length;
      }
      r.varint(length);
      r.bytes({value, input_bytes_});
      ++count;
      t += length;
    }
    w.varint(count);
    w.bytes(runs);
  }
  std::vector<std::byte> hashes;
  if (!pending_hashes_.empty()) {
    ByteWriter h(hashes);
    h.u32(static_cast<std::uint32_t>(pending_hashes_.size()));
    for (std::uint64_t hash : pending_hashes_) h.u64(hash);
  }
  const std::vector<std::byte> phases = phase_hashes_payload(first);
  if (!fits(payload.size(), hashes.size(), phases.size())) return end_at_limit();
  // A keyframe that does not fit beside its ticks ends the file after them, as it would alone.
  const bool with_keyframe = !keyframe.empty() && fits(payload.size(), hashes.size(), phases.size(), keyframe.size());
  encode_chunk({ChunkType::inputs, first, last, payload});
  if (!hashes.empty()) encode_chunk({ChunkType::hashes, first, last, hashes});
  if (!phases.empty()) encode_chunk({ChunkType::phase_hashes, first, last, phases});
  if (with_keyframe) encode_chunk({ChunkType::keyframe, last, last, keyframe});
  WrittenChunks what;
  what.first_tick = first;
  what.last_tick = last;
  what.keyframe = with_keyframe;
  if (Status status = emit(what); !status) return status;
  pending_inputs_.clear();
  pending_hashes_.clear();
  pending_phases_.clear();
  pending_first_ = last + 1;
  written_tick_ = last;
  written_hash_ = last_hash_;
  if (!keyframe.empty() && !with_keyframe) return end_at_limit();
  return {};
}

Status ReplayWriter::keep_phase_hashes(std::uint64_t tick, std::span<const std::string> names,
                                       std::span<const PhaseHash> hashes) {
  if (hashes.empty()) return {};
  if (hashes.size() > k_max_checkpoints_per_tick || names.size() > k_max_phase_names) {
    return fail("tick ", tick, " has ", hashes.size(), " checkpoints of ", names.size(), " phases, over the format's ",
                k_max_checkpoints_per_tick, " and ", k_max_phase_names);
  }
  for (const std::string& name : names) {
    if (name.empty() || name.size() > k_max_phase_name_bytes) return fail("a phase name of ", name.size(), " bytes");
  }
  for (const PhaseHash& h : hashes) {
    if (h.phase >= names.size() || h.substep > 0xFFFF) return fail("tick ", tick, ": a checkpoint of an unknown phase or substep");
  }
  // The names only grow (a run's table): the pending ticks index the latest copy.
  if (names.size() > phase_names_.size()) phase_names_.assign(names.begin(), names.end());
  pending_phases_.push_back({tick, std::vector<PhaseHash>(hashes.begin(), hashes.end())});
  return {};
}

std::vector<std::byte> ReplayWriter::phase_hashes_payload(std::uint64_t first) const {
  std::vector<std::byte> payload;
  if (pending_phases_.empty()) return payload;
  ByteWriter w(payload);
  w.varint(phase_names_.size());
  for (const std::string& name : phase_names_) w.text(name);
  w.varint(pending_phases_.size());
  for (const PendingPhases& p : pending_phases_) {
    w.varint(p.tick - first);
    w.varint(p.hashes.size());
    for (const PhaseHash& h : p.hashes) {
      w.varint(h.substep);
      w.varint(h.phase);
      w.u64(h.hash);
    }
  }
  return payload;
}

Status ReplayWriter::add_keyframe(std::uint64_t tick, std::span<const std::byte> snapshot) {
  if (reached_limit_) return {};
  if (tick != last_tick_) return fail("a keyframe must be of the last recorded tick");
  if (snapshot.size() > k_max_snapshot_bytes) {
    return fail("a keyframe of ", snapshot.size(), " bytes is over the format's ", k_max_snapshot_bytes,
                "-byte bound for a snapshot");
  }
  // The first keyframe whole; each later one as its difference from the first when that is
  // smaller (it is, unless nearly every byte changed), whole otherwise — or whole always, when
  // every keyframe must stand alone.
  keyframe_.clear();
  ByteWriter w(keyframe_);
  const bool first = first_keyframe_.empty();
  if (!first && !whole_keyframes_ && first_keyframe_.size() == snapshot.size()) {
    w.u8(static_cast<std::uint8_t>(KeyframeEncoding::from_first));
    w.varint(snapshot.size());
    encode_keyframe_delta(snapshot, first_keyframe_, keyframe_);
  }
  if (keyframe_.empty() || keyframe_.size() >= snapshot.size()) {
    keyframe_.clear();
    w.u8(static_cast<std::uint8_t>(KeyframeEncoding::whole));
    w.varint(snapshot.size());
    w.bytes(snapshot);
  }
  Status status = write_pending(keyframe_);
  if (status && !reached_limit_ && first && !whole_keyframes_) first_keyframe_.assign(snapshot.begin(), snapshot.end());
  return status;
}

Status ReplayWriter::finish() {
  if (reached_limit_) return {};  // already ended, at the limit
  Status status = flush();
  if (!status || reached_limit_) return status;
  return write_end(last_tick_, last_hash_);
}

Status ReplayWriter::write_end(std::uint64_t tick, std::uint64_t hash) {
  std::vector<std::byte> payload;
  ByteWriter w(payload);
  w.u64(hash);
  encode_chunk({ChunkType::end, tick, tick, payload});
  WrittenChunks what;
  what.first_tick = what.last_tick = tick;
  what.end = true;
  what.end_hash = hash;
  if (Status status = emit(what); !status) return status;
  Status closed = sink_->close();
  sink_.reset();
  return closed;
}

}  // namespace lockstep::replay
