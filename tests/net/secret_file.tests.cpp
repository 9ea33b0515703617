// Files that hold a secret: written owner-only from the first byte whatever the umask, never
// through a link planted at the temporary or the final name, and read only from an owner-only
// regular file of this user's, never through a link, within a bound. Every writer and reader of a
// secret in lockstep::net goes through them, so the same attacks run against each
// (tests/cli/local_invites.tests.cpp runs them against the command line's invites).

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "counting_randomness.hpp"
#include "lockstep/net/credentials/credential_files.hpp"
#include "lockstep/net/credentials/reconnect_key.hpp"
#include "lockstep/net/credentials/secret_file.hpp"
#include "process.hpp"
#include "umask_is.hpp"

using namespace lockstep;
using lockstep::testing::CountingRandomness;
using lockstep::testing::read_file;
using lockstep::testing::TempDir;
using lockstep::testing::UmaskIs;

namespace {

const std::string k_victim_text = "the victim's own text\n";

std::span<const std::byte> secret_bytes(const std::string& text) { return std::as_bytes(std::span(text)); }

std::string text_of(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

/// The file type and permission bits of `path` itself (a link is not followed); 0 when nothing is there.
mode_t type_and_mode(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & (S_IFMT | 07777) : 0;
}

/// The names in `folder`, sorted.
std::vector<std::string> names_in(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// A file of someone else's that a planted link points at: its text and mode must survive.
void write_victim(const std::string& path) {
  std::ofstream(path) << k_victim_text;
  REQUIRE(::chmod(path.c_str(), 0644) == 0);
}

bool victim_untouched(const std::string& path) { return read_file(path) == k_victim_text && type_and_mode(path) == (S_IFREG | 0644); }

/// Where a link at `path` points; empty when it is not a link.
std::string link_target(const std::string& path) {
  std::error_code error;
  return std::filesystem::read_symlink(path, error).string();
}

/// Writing and reading one kind of secret file, as lockstep::net does it.
struct SecretKind {
  const char* name;
  std::function<Status(const std::string&)> write;
  std::function<Status(const std::string&)> read;
  net::ExistingFile existing;
  const char* what;  ///< in its error lines
};

template <class T>
Status status_of(const Result<T>& result) {
  return result ? Status() : Status(result.error());
}

std::vector<SecretKind> secret_kinds() {
  net::TokenKey key{};
  key.fill(std::byte{0x5A});
  net::ConnectToken token;
  token.blob.fill(std::byte{0x11});
  token.secret.fill(std::byte{0x22});
  token.grant.expires = 1'900'000'000;
  token.grant.client_id = 0x0123456789ABCDEFull;
  return {
      {"a reconnect key", [](const std::string& p) { return net::write_reconnect_key(p, {{0x1234, 2, 0x5678}, std::nullopt, std::nullopt}); },
       [](const std::string& p) { return status_of(net::read_reconnect_key(p)); }, net::ExistingFile::replace,
       "reconnect key"},
      {"a token key", [key](const std::string& p) { return net::write_token_key(p, key); },
       [](const std::string& p) { return status_of(net::read_token_key(p)); }, net::ExistingFile::refuse, "token key"},
      {"a connect token", [token](const std::string& p) { return net::write_connect_token(p, token); },
       [](const std::string& p) { return status_of(net::read_connect_token(p)); }, net::ExistingFile::refuse,
       "connect token"},
      {"any secret, replacing",
       [](const std::string& p) {
         return net::write_secret_file(p, secret_bytes("a secret\n"), "test secret", net::ExistingFile::replace);
       },
       [](const std::string& p) { return status_of(net::read_secret_file(p, 1024)); }, net::ExistingFile::replace,
       "test secret"},
      {"any secret, never over another file",
       [](const std::string& p) {
         return net::write_secret_file(p, secret_bytes("a secret\n"), "test secret", net::ExistingFile::refuse);
       },
       [](const std::string& p) { return status_of(net::read_secret_file(p, 1024)); }, net::ExistingFile::refuse,
       "test secret"},
  };
}

}  // namespace

TEST_CASE("every secret file is written as a regular owner only file whatever the umask, with nothing left beside it",
          "[net][secret]") {
  for (const SecretKind& kind : secret_kinds()) {
    for (const mode_t mask : {mode_t{0}, mode_t{022}, mode_t{0277}}) {
      INFO(kind.name << ", umask 0" << (mask >> 6) << ((mask >> 3) & 7) << (mask & 7));
      TempDir dir;
      const UmaskIs umask(mask);
      const std::string path = dir.file("secret");
      const Status written = kind.write(path);
      INFO((written ? "" : written.error().message));
      REQUIRE(written.ok());
      CHECK(type_and_mode(path) == (S_IFREG | 0600));
      CHECK(names_in(dir.path()) == std::vector<std::string>{"secret"});
      CHECK(kind.read(path).ok());
    }
  }
}

TEST_CASE("a link planted at the temporary name a secret is written through leaves its target untouched",
          "[net][secret][hostile]") {
  for (const SecretKind& kind : secret_kinds()) {
    INFO(kind.name);
    TempDir dir;
    const std::string path = dir.file("secret");
    const std::string victim = dir.file("victim");
    write_victim(victim);
    // The first name drawn is taken: the next one is used.
    const std::string planted = CountingRandomness::temporary(dir.path(), "secret", 0);
    REQUIRE(::symlink(victim.c_str(), planted.c_str()) == 0);
    Status written;
    {
      const CountingRandomness counting;
      written = kind.write(path);
    }
    INFO((written ? "" : written.error().message));
    REQUIRE(written.ok());
    CHECK(victim_untouched(victim));
    CHECK(link_target(planted) == victim);
    CHECK(type_and_mode(path) == (S_IFREG | 0600));
    CHECK(names_in(dir.path()) == std::vector<std::string>{".secret.0000000000000000.tmp", "secret", "victim"});
    CHECK(kind.read(path).ok());
  }
}

TEST_CASE("a secret whose every temporary name is taken by a link is not written, and the links' target is untouched",
          "[net][secret][hostile]") {
  for (const SecretKind& kind : secret_kinds()) {
    INFO(kind.name);
    TempDir dir;
    const std::string path = dir.file("secret");
    const std::string victim = dir.file("victim");
    write_victim(victim);
    for (unsigned n = 0; n < 64; ++n) {
      const std::string planted = CountingRandomness::temporary(dir.path(), "secret", n);
      REQUIRE(::symlink(victim.c_str(), planted.c_str()) == 0);
    }
    Status written;
    {
      const CountingRandomness counting;
      written = kind.write(path);
    }
    REQUIRE_FALSE(written.ok());
    CHECK(written.error().message == "cannot write the " + std::string(kind.what) + " to '" + path + "': File exists");
    CHECK(victim_untouched(victim));
    CHECK(type_and_mode(path) == 0);
  }
}

TEST_CASE("a link planted at the final name of a secret is replaced or refused, and its target left untouched",
          "[net][secret][hostile]") {
  for (const SecretKind& kind : secret_kinds()) {
    INFO(kind.name);
    TempDir dir;
    const std::string path = dir.file("secret");
    const std::string victim = dir.file("victim");
    write_victim(victim);
    // A link to a file, and a dangling one: creating through it would make the file it names.
    for (const std::string& target : {victim, dir.file("absent")}) {
      INFO("a link to " << target);
      std::filesystem::remove(path);
      REQUIRE(::symlink(target.c_str(), path.c_str()) == 0);
      const Status written = kind.write(path);
      if (kind.existing == net::ExistingFile::replace) {
        INFO((written ? "" : written.error().message));
        CHECK(written.ok());
        CHECK(type_and_mode(path) == (S_IFREG | 0600));
        CHECK(kind.read(path).ok());
      } else {
        REQUIRE_FALSE(written.ok());
        CHECK(written.error().message ==
              "'" + path + "' exists: a " + kind.what + " is never written over another file");
        CHECK(link_target(path) == target);
      }
      CHECK(victim_untouched(victim));
      CHECK(type_and_mode(dir.file("absent")) == 0);
      CHECK(names_in(dir.path()) == std::vector<std::string>{"secret", "victim"});
    }
  }
}

TEST_CASE("a secret that cannot be put in place leaves no temporary behind", "[net][secret]") {
  for (const SecretKind& kind : secret_kinds()) {
    INFO(kind.name);
    TempDir dir;
    const std::string missing = dir.file("no/such/folder/secret");
    const Status nowhere = kind.write(missing);
    REQUIRE_FALSE(nowhere.ok());
    CHECK(nowhere.error().message ==
          "cannot write the " + std::string(kind.what) + " to '" + missing + "': No such file or directory");
    // A folder at the final name: a rename cannot replace it and a link cannot be made over it.
    REQUIRE(std::filesystem::create_directory(dir.file("secret")));
    CHECK_FALSE(kind.write(dir.file("secret")).ok());
    CHECK(names_in(dir.path()) == std::vector<std::string>{"secret"});
    CHECK(std::filesystem::is_empty(dir.file("secret")));
  }
}

TEST_CASE("reading a secret refuses a link, a file others can reach, a folder, a FIFO and an oversized file",
          "[net][secret][hostile]") {
  TempDir dir;
  const std::string path = dir.file("secret");
  REQUIRE(net::write_secret_file(path, secret_bytes("0123456789abcdef"), "test secret", net::ExistingFile::refuse).ok());
  const auto refusal = [](const std::string& file, std::uint64_t max_bytes = 1024) {
    Result<std::vector<std::byte>> bytes = net::read_secret_file(file, max_bytes);
    return bytes ? std::string("read") : bytes.error().message;
  };
  Result<std::vector<std::byte>> good = net::read_secret_file(path, 16);
  REQUIRE(good.ok());
  CHECK(text_of(good.value()) == "0123456789abcdef");

  SECTION("a link to it, and a dangling one") {
    REQUIRE(::symlink(path.c_str(), dir.file("link").c_str()) == 0);
    REQUIRE(::symlink(dir.file("absent").c_str(), dir.file("dangling").c_str()) == 0);
    CHECK(refusal(dir.file("link")) ==
          "'" + dir.file("link") + "' is a symbolic link: a secret is read from its own file, never through a link");
    CHECK(refusal(dir.file("dangling")) ==
          "'" + dir.file("dangling") + "' is a symbolic link: a secret is read from its own file, never through a link");
  }
  SECTION("group or others with any permission") {
    const std::vector<std::pair<mode_t, std::string>> modes = {
        {0644, "readable by others (mode 0644)"}, {0640, "readable by others (mode 0640)"},
        {0604, "readable by others (mode 0604)"}, {0620, "writable by others (mode 0620)"},
        {0602, "writable by others (mode 0602)"}, {0610, "open to others (mode 0610)"},
        {0601, "open to others (mode 0601)"},     {0666, "readable by others (mode 0666)"}};
    for (const auto& [mode, words] : modes) {
      REQUIRE(::chmod(path.c_str(), mode) == 0);
      CHECK(refusal(path) == "'" + path + "' is " + words + "; chmod 600 it");
    }
    REQUIRE(::chmod(path.c_str(), 0400) == 0);  // owner-only, read-only: fine
    CHECK(refusal(path) == "read");
  }
  SECTION("a folder, a FIFO, nothing") {
    CHECK(refusal(dir.path()) == "'" + dir.path() + "' is not a regular file (a directory)");
    REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0600) == 0);
    CHECK(refusal(dir.file("fifo")) == "'" + dir.file("fifo") + "' is not a regular file (a FIFO)");
    CHECK(refusal(dir.file("absent")) == "cannot open '" + dir.file("absent") + "': No such file or directory");
  }
  SECTION("over the bound") { CHECK(refusal(path, 15) == "'" + path + "' is 16 bytes, over the 15-byte bound"); }
}

TEST_CASE("every reader of a secret file refuses a link to a good one and a copy others can read", "[net][secret][hostile]") {
  for (const SecretKind& kind : secret_kinds()) {
    INFO(kind.name);
    TempDir dir;
    const std::string path = dir.file("secret");
    REQUIRE(kind.write(path).ok());
    REQUIRE(kind.read(path).ok());
    REQUIRE(::symlink(path.c_str(), dir.file("link").c_str()) == 0);
    const Status linked = kind.read(dir.file("link"));
    REQUIRE_FALSE(linked.ok());
    CHECK(linked.error().message ==
          "'" + dir.file("link") + "' is a symbolic link: a secret is read from its own file, never through a link");
    REQUIRE(::chmod(path.c_str(), 0644) == 0);
    const Status exposed = kind.read(path);
    REQUIRE_FALSE(exposed.ok());
    CHECK(exposed.error().message == "'" + path + "' is readable by others (mode 0644); chmod 600 it");
  }
}

TEST_CASE("a secret file of another user is refused", "[net][secret][hostile]") {
  if (::geteuid() != 0) {
    // The marker tests/CMakeLists.txt makes ctest report as skipped.
    WARN("lockstep-test-skipped: only root can give a file to another user here, so the owner check was not tried");
    return;
  }
  TempDir dir;
  const std::string path = dir.file("secret");
  REQUIRE(net::write_secret_file(path, secret_bytes("a secret\n"), "test secret", net::ExistingFile::refuse).ok());
  REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);
  Result<std::vector<std::byte>> bytes = net::read_secret_file(path, 1024);
  REQUIRE_FALSE(bytes.ok());
  CHECK(bytes.error().message == "'" + path + "' belongs to another user (uid 65534): a secret is read only from a file of this user's");
}

TEST_CASE("wiping a secret leaves zeros", "[net][secret]") {
  std::array<std::byte, 5> secret{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}, std::byte{5}};
  net::wipe_secret(secret);
  CHECK(secret == std::array<std::byte, 5>{});
}
