#include "lockstep/cli/detail/bundle_commands.hpp"

#include <algorithm>
#include <cstdio>

#include "lockstep/cli/detail/text.hpp"
#include "lockstep/engine/hash_hex.hpp"

namespace lockstep::cli::detail {
namespace {

/// A reported hash: whole, or the low half the wire carries.
std::string reported_hash_text(std::uint64_t hash, std::uint8_t bits) {
  return bits == 64 ? hash_hex(hash) : hash_hex(hash).substr(8) + " (its low 32 bits)";
}

}  // namespace

replay::EvidenceBundle read_bundle_or_throw(const std::string& path) {
  Result<replay::EvidenceBundle> bundle = replay::read_bundle_file(path);
  if (!bundle) throw CommandError{bundle.error().message};
  return std::move(bundle).value();
}

std::string participant_label(const replay::EvidenceBundle& bundle, std::size_t index) {
  return "#" + std::to_string(index) + " (" + replay::participant_name(bundle.participants[index]) + ")";
}

replay::ReplayFile participant_replay(const replay::EvidenceBundle& bundle, std::size_t index) {
  if (index >= bundle.participants.size()) {
    throw CommandError{"the bundle has participants #0 to #" + std::to_string(bundle.participants.size() - 1) +
                       ", not #" + std::to_string(index) + " (`lockstep info BUNDLE` lists them)"};
  }
  const replay::BundleParticipant& p = bundle.participants[index];
  if (!p.present()) {
    throw CommandError{participant_label(bundle, index) + " sent no evidence: " + replay::printable(p.missing)};
  }
  Result<replay::ReplayFile> file = replay::parse_replay(p.replay);
  if (!file) throw CommandError{participant_label(bundle, index) + "'s replay: " + file.error().message};
  return std::move(file).value();
}

void info_bundle(const std::string& path, const replay::EvidenceBundle& bundle) {
  const auto missing = static_cast<std::size_t>(std::count_if(
      bundle.participants.begin(), bundle.participants.end(), [](const replay::BundleParticipant& p) { return !p.present(); }));
  std::printf("bundle      %s: desync at tick %llu (every participant agreed through tick %llu)\n", path.c_str(),
              static_cast<unsigned long long>(bundle.desync_tick), static_cast<unsigned long long>(bundle.agreed_tick));
  std::printf("simulation  %s\n", replay::printable(bundle.simulation).c_str());
  std::printf("session     %s\n", hash_hex(bundle.session).c_str());
  std::printf("participants %zu: %zu with evidence, %zu missing\n", bundle.participants.size(),
              bundle.participants.size() - missing, missing);
  for (std::size_t i = 0; i < bundle.participants.size(); ++i) {
    const replay::BundleParticipant& p = bundle.participants[i];
    const std::string hash = p.desync_hash ? reported_hash_text(p.desync_hash->value, p.desync_hash->bits)
                                           : std::string("(none reported)");
    std::string evidence;
    if (!p.present()) {
      evidence = "missing: " + replay::printable(p.missing);
    } else if (Result<replay::ReplayFile> file = replay::parse_replay(p.replay); file) {
      evidence = "replay of ticks " + std::to_string(file->header.start_tick) + " to " + std::to_string(file->last_tick) +
                 " (" + with_commas(p.replay.size()) + " bytes), state " + with_commas(p.state.size()) + " bytes";
    } else {
      evidence = "a replay that does not read: " + file.error().message;
    }
    std::printf("  %-24s hash at the desync %s  %s\n", participant_label(bundle, i).c_str(), hash.c_str(), evidence.c_str());
  }
}

bool BundleGroup::has(std::size_t index) const { return std::find(members.begin(), members.end(), index) != members.end(); }

std::vector<BundleGroup> group_by_state(const std::vector<std::optional<StateKey>>& keys, const replay::EvidenceBundle& bundle) {
  std::vector<BundleGroup> groups;
  // Whole hashes first, so that a hash of 32 bits finds the group whose low half it is.
  for (const std::uint8_t bits : {std::uint8_t{64}, std::uint8_t{32}}) {
    const std::uint64_t mask = bits == 64 ? ~std::uint64_t{0} : 0xFFFFFFFFu;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (!keys[i] || keys[i]->bits != bits) continue;
      auto group = std::find_if(groups.begin(), groups.end(), [&](const BundleGroup& g) {
        return g.tick == keys[i]->tick && (g.hash & mask) == keys[i]->hash;
      });
      if (group == groups.end()) group = groups.insert(groups.end(), BundleGroup{keys[i]->tick, keys[i]->hash, {}, bits});
      group->members.push_back(i);
    }
  }
  for (BundleGroup& g : groups) std::sort(g.members.begin(), g.members.end());
  std::sort(groups.begin(), groups.end(), [](const BundleGroup& a, const BundleGroup& b) { return a.members[0] < b.members[0]; });
  // The host's group leads (participant 0's when the bundle lists no host).
  const auto host = std::find_if(bundle.participants.begin(), bundle.participants.end(),
                                 [](const replay::BundleParticipant& p) { return p.role == replay::ParticipantRole::host; });
  const std::size_t lead = host == bundle.participants.end() ? 0 : static_cast<std::size_t>(host - bundle.participants.begin());
  const auto led = std::find_if(groups.begin(), groups.end(), [lead](const BundleGroup& g) { return g.has(lead); });
  if (led != groups.end()) {
    led->host = true;
    std::rotate(groups.begin(), led, led + 1);
  }
  return groups;
}

std::optional<std::size_t> first_present(const BundleGroup& group, const replay::EvidenceBundle& bundle) {
  for (std::size_t i : group.members) {
    if (bundle.participants[i].present()) return i;
  }
  return std::nullopt;
}

std::size_t print_groups(const std::vector<BundleGroup>& groups, const replay::EvidenceBundle& bundle) {
  std::printf("desync at tick %llu: %zu participants in %zu %s by their state\n",
              static_cast<unsigned long long>(bundle.desync_tick), bundle.participants.size(), groups.size(),
              groups.size() == 1 ? "group" : "groups");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    std::string members;
    for (std::size_t i : groups[g].members) {
      if (!members.empty()) members += ", ";
      members += participant_label(bundle, i);
      if (!bundle.participants[i].present()) members += " as it reported (its evidence is missing)";
    }
    std::printf("group %zu%s: hash %s at tick %llu: %s\n", g + 1, groups[g].host ? " (the host's)" : "",
                reported_hash_text(groups[g].hash, groups[g].bits).c_str(), static_cast<unsigned long long>(groups[g].tick),
                members.c_str());
  }
  std::size_t compared = 0;
  for (std::size_t i = 0; i < bundle.participants.size(); ++i) {
    const bool grouped = std::any_of(groups.begin(), groups.end(), [i](const BundleGroup& g) { return g.has(i); });
    if (grouped) {
      ++compared;
    } else {
      std::printf("not compared: %s reported no hash and sent no evidence: %s\n", participant_label(bundle, i).c_str(),
                  replay::printable(bundle.participants[i].missing).c_str());
    }
  }
  return compared;
}

void print_replays_compared(const replay::ReplayFile& reference, const replay::ReplayFile& other) {
  // Both re-simulate the agreed inputs, each on its own machine: where they part, the builds step
  // differently; where they agree, re-simulation does not reproduce the difference.
  if (const std::optional<replay::PhaseDivergence> phase = replay::compare_recorded_phases(reference, other)) {
    std::printf("  their evidence replays part at %s\n", replay::describe(*phase).c_str());
    return;
  }
  std::optional<std::uint64_t> through;
  for (const replay::TickHash& h : reference.hashes) {
    const std::optional<std::uint64_t> theirs = other.hash_at(h.tick);
    if (!theirs) continue;
    if (*theirs != h.hash) {
      std::printf("  their evidence replays first differ at tick %llu: their builds step the same inputs differently\n",
                  static_cast<unsigned long long>(h.tick));
      return;
    }
    through = h.tick;
  }
  if (!through) {
    std::printf("  their evidence replays share no tick to compare\n");
    return;
  }
  std::printf("  their evidence replays agree through tick %llu: re-simulating the agreed inputs does not reproduce "
              "the difference\n",
              static_cast<unsigned long long>(*through));
}

}  // namespace lockstep::cli::detail
