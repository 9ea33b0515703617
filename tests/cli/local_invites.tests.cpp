// The invites a host leaves for joiners of the same user on the same machine: found only in a
// private folder, in an owner-only file, of a host that still runs, for the role asked; removed
// when the host ends.

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "counting_randomness.hpp"
#include "lockstep/cli/detail/local_invites.hpp"
#include "process.hpp"
#include "umask_is.hpp"

using namespace lockstep;
using namespace lockstep::cli::detail;

namespace {

/// Points the folder at `folder` while it lives, then puts back what was there.
struct RuntimeDirIs {
  explicit RuntimeDirIs(const std::string& folder) {
    if (const char* was = std::getenv("LOCKSTEP_RUNTIME_DIR")) before = was;
    ::setenv("LOCKSTEP_RUNTIME_DIR", folder.c_str(), 1);
  }
  ~RuntimeDirIs() {
    if (before) {
      ::setenv("LOCKSTEP_RUNTIME_DIR", before->c_str(), 1);
    } else {
      ::unsetenv("LOCKSTEP_RUNTIME_DIR");
    }
  }
  std::optional<std::string> before;
};

const std::vector<std::string> k_lines = {"invite LK6-player", "spectate-invite LK6-spectator"};

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

/// A file as a host would write it, but with `pid` and `mode`.
void write_invites(const std::string& path, long pid, mode_t mode) {
  std::ofstream(path) << "lockstep local invites 1\npid " << pid << "\ninvite LK6-player\nspectate-invite LK6-spectator\n";
  REQUIRE(::chmod(path.c_str(), mode) == 0);
}

/// The id of a process that has exited and been reaped.
long gone_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

}  // namespace

TEST_CASE("a host's local invites are found for the role asked while it runs, in owner-only files of a folder it "
          "creates owner-only, and are gone when it ends",
          "[cli][invite][local]") {
  testing::TempDir dir;
  const RuntimeDirIs runtime(dir.file("run"));
  CHECK(local_invite_folder() == dir.file("run"));
  CHECK_FALSE(find_local_invite(7001, net::Role::player));  // no folder yet
  {
    Result<LocalInvites> left = LocalInvites::leave(7001, k_lines);
    REQUIRE(left);
    CHECK(left->path() == dir.file("run") + "/host-7001.invites");
    CHECK(mode_of(dir.file("run")) == 0700);
    CHECK(mode_of(left->path()) == 0600);
    const std::optional<LocalInvite> player = find_local_invite(7001, net::Role::player);
    const std::optional<LocalInvite> spectator = find_local_invite(7001, net::Role::spectator);
    REQUIRE(player);
    REQUIRE(spectator);
    CHECK(player->code == "LK6-player");
    CHECK(player->file == left->path());
    CHECK(spectator->code == "LK6-spectator");
    CHECK_FALSE(find_local_invite(7002, net::Role::player));  // another port's host
  }
  CHECK_FALSE(find_local_invite(7001, net::Role::player));
  CHECK_FALSE(std::ifstream(dir.file("run") + "/host-7001.invites").good());
}

TEST_CASE("local invites are neither left nor taken where someone else could read them, nor taken from a host "
          "that is gone or a file that is not one",
          "[cli][invite][local]") {
  testing::TempDir dir;
  const std::string folder = dir.file("run");
  const RuntimeDirIs runtime(folder);
  REQUIRE(::mkdir(folder.c_str(), 0700) == 0);
  const std::string file = local_invite_file(folder, 7003);

  SECTION("a folder open to others") {
    REQUIRE(::chmod(folder.c_str(), 0755) == 0);
    write_invites(file, ::getpid(), 0600);
    Result<LocalInvites> left = LocalInvites::leave(7003, k_lines);
    REQUIRE_FALSE(left);
    CHECK(left.error().message == "'" + folder + "' is not private to this user (owner-only, mode 0700)");
    CHECK_FALSE(find_local_invite(7003, net::Role::player));
  }
  SECTION("a folder that is a link to a private folder") {
    const RuntimeDirIs linked(dir.file("link"));
    REQUIRE(::symlink(folder.c_str(), dir.file("link").c_str()) == 0);
    write_invites(file, ::getpid(), 0600);
    Result<LocalInvites> left = LocalInvites::leave(7003, k_lines);
    REQUIRE_FALSE(left);
    CHECK(left.error().message == "'" + dir.file("link") + "' is not a folder");
    CHECK_FALSE(find_local_invite(7003, net::Role::player));
  }
  SECTION("a file others can read") {
    write_invites(file, ::getpid(), 0644);
    CHECK_FALSE(find_local_invite(7003, net::Role::player));
  }
  SECTION("a host that is gone") {
    write_invites(file, gone_pid(), 0600);
    CHECK_FALSE(find_local_invite(7003, net::Role::player));
  }
  SECTION("a file that is not a host's invites") {
    std::ofstream(file) << "lockstep local invites 2\npid " << ::getpid() << "\ninvite LK6-player\n";
    REQUIRE(::chmod(file.c_str(), 0600) == 0);
    CHECK_FALSE(find_local_invite(7003, net::Role::player));
    std::ofstream(file) << "lockstep local invites 1\npid " << ::getpid() << "x\ninvite LK6-player\n";
    CHECK_FALSE(find_local_invite(7003, net::Role::player));
    std::ofstream(file) << "lockstep local invites 1\npid " << ::getpid() << "\ninvite LK6-player\n";
    CHECK_FALSE(find_local_invite(7003, net::Role::spectator));  // no spectator line
    CHECK(find_local_invite(7003, net::Role::player)->code == "LK6-player");
  }
  SECTION("a file that is a link to a host's file") {
    write_invites(dir.file("elsewhere.invites"), ::getpid(), 0600);
    REQUIRE(::symlink(dir.file("elsewhere.invites").c_str(), file.c_str()) == 0);
    CHECK_FALSE(find_local_invite(7003, net::Role::player));
  }
  SECTION("a host's file replaced by another host's: the first leaves it be") {
    {
      Result<LocalInvites> left = LocalInvites::leave(7003, k_lines);
      REQUIRE(left);
      write_invites(file, gone_pid(), 0600);  // another process's now
    }
    CHECK(std::ifstream(file).good());
  }
  SECTION("a file replaced by a folder") {
    REQUIRE(::mkdir(file.c_str(), 0700) == 0);
    CHECK_FALSE(find_local_invite(7003, net::Role::player));
  }
}

TEST_CASE("local invites are left as a regular owner only file whatever the umask, and links planted at their "
          "temporary and final names leave their target untouched",
          "[cli][invite][local][hostile]") {
  testing::TempDir dir;
  const std::string folder = dir.file("run");
  const RuntimeDirIs runtime(folder);
  REQUIRE(::mkdir(folder.c_str(), 0700) == 0);
  const std::string file = local_invite_file(folder, 7004);
  const std::string victim = dir.file("victim");
  const std::string victim_text = "the victim's own text\n";
  std::ofstream(victim) << victim_text;
  REQUIRE(::chmod(victim.c_str(), 0644) == 0);
  // The first temporary name drawn, and the final name, are links to the victim.
  const std::string planted = testing::CountingRandomness::temporary(folder, "host-7004.invites", 0);
  REQUIRE(::symlink(victim.c_str(), planted.c_str()) == 0);
  REQUIRE(::symlink(victim.c_str(), file.c_str()) == 0);
  {
    const testing::UmaskIs umask(0);
    Result<LocalInvites> left = [] {
      const testing::CountingRandomness counting;
      return LocalInvites::leave(7004, k_lines);
    }();
    INFO((left ? "" : left.error().message));
    REQUIRE(left);
    struct stat st {};
    REQUIRE(::lstat(file.c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK(mode_of(file) == 0600);
    CHECK(std::filesystem::read_symlink(planted) == victim);
    CHECK(testing::read_file(victim) == victim_text);
    CHECK(mode_of(victim) == 0644);
    REQUIRE(find_local_invite(7004, net::Role::player));
    CHECK(find_local_invite(7004, net::Role::player)->code == "LK6-player");
  }
  // The host has ended: its own file is gone, the victim is as it was.
  CHECK_FALSE(std::filesystem::exists(std::filesystem::symlink_status(file)));
  CHECK(testing::read_file(victim) == victim_text);
  CHECK(mode_of(victim) == 0644);
}
