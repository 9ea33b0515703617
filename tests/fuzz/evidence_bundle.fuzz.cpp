// libFuzzer target for desync evidence bundles: the bundle reader on the bytes as they come (the
// checksum refuses nearly all), and again with the checksum made right, so that the fuzzer reaches
// every field, bound and record behind it. A bundle the reader accepts is written again and reads
// back as the same participants with the same evidence, and writing that once more gives the same
// bytes; each present participant's replay goes through the replay reader. Built with
// -fsanitize=fuzzer,address,undefined under clang; with any compiler, fuzz_main.cpp replays the
// saved corpus through it as a regression test.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/engine/byte_io.hpp"
#include "lockstep/engine/state_hash.hpp"
#include "lockstep/replay/evidence_bundle.hpp"
#include "lockstep/replay/replay_file.hpp"

namespace {

/// A broken property is a crash, which libFuzzer reports and the corpus run fails on.
void check(bool condition) {
  if (!condition) __builtin_trap();
}

void round_trip(std::span<const std::byte> bytes) {
  using namespace lockstep;
  Result<replay::EvidenceBundle> bundle = replay::parse_bundle(bytes);
  if (!bundle) return;
  Result<std::vector<std::byte>> written = replay::encode_bundle(*bundle);
  check(written.ok());
  Result<replay::EvidenceBundle> again = replay::parse_bundle(*written);
  check(again.ok());
  check(again->simulation == bundle->simulation && again->session == bundle->session &&
        again->desync_tick == bundle->desync_tick && again->agreed_tick == bundle->agreed_tick);
  check(again->participants.size() == bundle->participants.size());
  for (std::size_t i = 0; i < bundle->participants.size(); ++i) {
    const replay::BundleParticipant& a = bundle->participants[i];
    const replay::BundleParticipant& b = again->participants[i];
    check(a.role == b.role && a.slot == b.slot && a.desync_hash == b.desync_hash && a.missing == b.missing);
    check(a.replay == b.replay && a.state == b.state);
    if (a.present()) (void)replay::parse_replay(a.replay);
  }
  Result<std::vector<std::byte>> rewritten = replay::encode_bundle(*again);
  check(rewritten.ok() && *rewritten == *written);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lockstep;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  round_trip(bytes);
  if (size < 24) return 0;
  std::vector<std::byte> sealed(bytes.begin(), bytes.end() - 8);
  const std::uint64_t sum = xxh3_64(sealed);
  ByteWriter(sealed).u64(sum);
  round_trip(sealed);
  return 0;
}
