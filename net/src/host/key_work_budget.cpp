#include "lockstep/net/host/key_work_budget.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace lockstep::net {
namespace {

/// How long until a bucket with `tokens` holds one, at `per_second`.
Duration wait_for_one(double tokens, double per_second) {
  if (tokens >= 1.0) return Duration(0);
  return Duration(static_cast<std::int64_t>(std::ceil((1.0 - tokens) / per_second * 1e6)));
}

}  // namespace

boost::asio::ip::address address_group(const Endpoint& from) {
  const boost::asio::ip::address address = from.address();
  if (!address.is_v6() || address.to_v6().is_v4_mapped()) return address;
  boost::asio::ip::address_v6::bytes_type bytes = address.to_v6().to_bytes();
  std::fill(bytes.begin() + 6, bytes.end(), 0);
  return boost::asio::ip::address_v6(bytes);
}

double KeyWorkBudget::Bucket::at_time(Instant now, double burst, double per_second) const {
  return std::min(burst, tokens + std::chrono::duration<double>(now - at).count() * per_second);
}

template <class Key, std::size_t N>
std::pair<typename KeyWorkBudget::Shares<Key, N>::Share*, double> KeyWorkBudget::Shares<Key, N>::find(
    const Key& key, Instant now, double burst, double per_second) {
  const auto tokens_of = [&](const Share& s) { return s.bucket.at_time(now, burst, per_second); };
  for (Share& s : shares) {
    if (s.used && s.key == key) return {&s, tokens_of(s)};
  }
  Share* share = &*std::max_element(shares.begin(), shares.end(), [&](const Share& a, const Share& b) {
    return (a.used ? tokens_of(a) : burst + 1) < (b.used ? tokens_of(b) : burst + 1);
  });
  return {share, share->used ? tokens_of(*share) : burst};
}

KeyWorkBudget::KeyWorkBudget(Instant now, std::uint32_t players)
    : host_{k_burst, now},
      player_invite_burst_(std::max(k_credential_burst, static_cast<double>(players))),
      player_invite_per_second_(std::max(k_credential_per_second, static_cast<double>(players) / 4.0)) {}

std::optional<Duration> KeyWorkBudget::take(const Endpoint& from, const std::optional<CredentialShareKey>& credential,
                                            Instant now) {
  const double host = host_.at_time(now, k_burst, k_per_second);
  auto [address_share, address] = addresses_.find(address_group(from), now, k_address_burst, k_address_per_second);
  using CredentialShare = Shares<CredentialShareKey, 16>::Share;
  CredentialShare* credential_share = nullptr;
  const bool player_invite = credential && credential->kind == CredentialKind::invite && credential->role == Role::player;
  const double credential_burst = player_invite ? player_invite_burst_ : k_credential_burst;
  const double credential_per_second = player_invite ? player_invite_per_second_ : k_credential_per_second;
  double by_credential = credential_burst;
  if (credential) std::tie(credential_share, by_credential) = credentials_.find(*credential, now, credential_burst, credential_per_second);
  if (host < 1.0 || address < 1.0 || by_credential < 1.0) {  // nothing taken, nothing claimed
    return std::max({wait_for_one(host, k_per_second), wait_for_one(address, k_address_per_second),
                     wait_for_one(by_credential, credential_per_second)});
  }
  host_ = {host - 1.0, now};
  *address_share = {address_group(from), {address - 1.0, now}, true};
  if (credential_share != nullptr) *credential_share = {*credential, {by_credential - 1.0, now}, true};
  ++taken_;
  return std::nullopt;
}

}  // namespace lockstep::net
