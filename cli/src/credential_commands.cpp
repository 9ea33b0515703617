#include "lockstep/cli/detail/credential_commands.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "lockstep/cli/command.hpp"
#include "lockstep/cli/numbers.hpp"
#include "lockstep/net/credentials/credential_files.hpp"
#include "lockstep/net/wire/packet_protection.hpp"

namespace lockstep::cli::detail {
namespace {

struct TokenFlags {
  std::string key_file;
  std::string role;
  std::string slot = "any";
  std::uint64_t expires_s = 3600;
  std::uint64_t host_id = 0;
  std::string out;
};

std::uint64_t unix_now() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

void require_crypto() {
  if (!net::crypto_ready()) throw CommandError{"libsodium cannot start here (no source of randomness)"};
}

void keygen(const std::string& out) {
  require_crypto();
  net::TokenKey key{};
  net::random_bytes(key);
  const Status written = net::write_token_key(out, key);
  net::random_bytes(key);  // nothing of the key stays behind in this process
  if (!written) throw CommandError{written.error().message};
  std::printf("keygen: wrote a token key to %s (readable by its owner alone; whoever holds it mints tokens)\n", out.c_str());
}

void token(const TokenFlags& o) {
  require_crypto();
  Result<net::TokenKey> key = net::read_token_key(o.key_file);
  if (!key) throw CommandError{key.error().message};
  net::TokenGrant grant;
  grant.role = o.role == "player" ? net::Role::player : net::Role::spectator;
  if (o.slot != "any") {
    if (grant.role == net::Role::spectator) throw CommandError{"--slot is for players: a spectator holds no slot"};
    grant.slot = static_cast<net::Slot>(std::stoul(o.slot));
  }
  grant.expires = unix_now() + o.expires_s;
  grant.host_id = o.host_id;
  grant.client_id = net::random_u64() | 1;  // never 0, which is no client
  std::array<std::byte, net::k_token_random_bytes> random{};
  net::random_bytes(random);
  const net::ConnectToken minted = net::mint_token(key.value(), grant, random);
  net::random_bytes(random);
  const Status written = net::write_connect_token(o.out, minted);
  if (!written) throw CommandError{written.error().message};
  std::printf("token: wrote a %s token for host %llu, slot %s, expiring in %llu s (at %llu) to %s\n", o.role.c_str(),
              static_cast<unsigned long long>(o.host_id), o.slot.c_str(), static_cast<unsigned long long>(o.expires_s),
              static_cast<unsigned long long>(grant.expires), o.out.c_str());
}

}  // namespace

void add_credential_commands(CLI::App& app, int* exit_code) {
  auto key_out = std::make_shared<std::string>();
  CLI::App* keygen_cmd = app.add_subcommand("keygen", "Write a new token key: a backend mints connect tokens with it, and "
                                                      "`host --token-key` admits their holders");
  keygen_cmd->add_option("--out", *key_out, "The key file to create (never overwritten; readable by its owner alone)")
      ->required();
  keygen_cmd->callback([key_out, exit_code] {
    keygen(*key_out);
    *exit_code = k_exit_ok;
  });

  auto flags = std::make_shared<TokenFlags>();
  CLI::App* token_cmd = app.add_subcommand("token", "Mint a connect token under a token key: one joiner's admission to "
                                                    "the hosts started with that key");
  token_cmd->add_option("--key", flags->key_file, "The token key file (from keygen)")->required();
  token_cmd->add_option("--role", flags->role, "What the token admits as")->required()->check(CLI::IsMember({"player", "spectator"}));
  token_cmd->add_option("--slot", flags->slot, "A player's fixed slot, 0 to " + std::to_string(net::k_max_session_players - 1) +
                                            ", or any (default any)")
      ->check(CLI::IsMember({"any"}) | whole_number(0, net::k_max_session_players - 1));
  token_cmd->add_option("--expires", flags->expires_s,
                        "Seconds from now until the token stops admitting (default " + std::to_string(flags->expires_s) +
                            ", at most a year)")
      ->check(whole_number(1, net::k_max_token_lifetime_s));
  token_cmd->add_option("--host-id", flags->host_id,
                        "Only a host started with this --host-id admits it (give each host of one key its own)")
      ->check(whole_number())
      ->required();
  token_cmd->add_option("--out", flags->out, "The token file to create (never overwritten; readable by its owner alone)")
      ->required();
  token_cmd->callback([flags, exit_code] {
    token(*flags);
    *exit_code = k_exit_ok;
  });
}

}  // namespace lockstep::cli::detail
