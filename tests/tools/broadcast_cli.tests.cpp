// `host --broadcast DIR` and `lockstep spectate http://…/` as users run them: real `lockstep`
// processes, the broadcast directory served by a real web server from Debian's packages (nginx,
// which scripts/install-deps.sh installs), with the cache headers docs/COMMANDS.md gives.
// Processes are ordered by what they print, never by sleeps.

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/replay/broadcast_manifest.hpp"
#include "lockstep_binary.hpp"
#include "ports.hpp"
#include "process.hpp"

using lockstep::testing::free_udp_port;
using lockstep::testing::k_lockstep;
using lockstep::testing::ProcessResult;
using lockstep::testing::read_file;
using lockstep::testing::read_file_bytes;
using lockstep::testing::run_process;
using lockstep::testing::RunningProcess;
using lockstep::testing::TempDir;
using lockstep::testing::write_file_bytes;

namespace {

const char* const k_nginx = "/usr/sbin/nginx";

std::uint16_t free_tcp_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(io, boost::asio::ip::tcp::endpoint(boost::asio::ip::tcp::v4(), 0));
  return acceptor.local_endpoint().port();
}

/// nginx serving `root` on a loopback port, in the foreground, one process (no worker that
/// changes user), its files in `dir`; a request with `?refetch=1` is served from `refetch_root`
/// when one is given (a cache that holds a damaged copy, and an origin that holds the good one).
class Nginx {
 public:
  Nginx(const TempDir& dir, const std::string& root, const std::string& refetch_root = "") : port_(free_tcp_port()) {
    const std::string prefix = dir.file("nginx");
    std::filesystem::create_directories(prefix + "/logs");
    std::ofstream conf(prefix + "/nginx.conf");
    conf << "daemon off; master_process off; worker_processes 1;\n"
         << "error_log " << prefix << "/logs/error.log; pid " << prefix << "/nginx.pid;\n"
         << "events { worker_connections 64; }\n"
         << "http {\n  access_log off;\n"
         << "  client_body_temp_path " << prefix << "/body; proxy_temp_path " << prefix << "/proxy;\n"
         << "  fastcgi_temp_path " << prefix << "/fastcgi; uwsgi_temp_path " << prefix << "/uwsgi; scgi_temp_path "
         << prefix << "/scgi;\n"
         << "  types { application/json json; application/octet-stream lss; }\n"
         << "  server {\n    listen 127.0.0.1:" << port_ << ";\n    root " << root << ";\n"
         << "    location ~ \\.json$ { add_header Cache-Control \"max-age=1\"; }\n"
         << "    location ~ \\.lss$ {\n      add_header Cache-Control \"public, max-age=31536000, immutable\";\n"
         << (refetch_root.empty() ? "" : "      if ($arg_refetch) { root " + refetch_root + "; }\n") << "    }\n"
         << "  }\n}\n";
    conf.close();
    server_ = std::make_unique<RunningProcess>(k_nginx, std::vector<std::string>{"-p", prefix, "-c", prefix + "/nginx.conf"});
    // Ready once it answers (its own error page for a file that is not there).
    for (int i = 0; i < 200 && !answers(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    REQUIRE(answers());
  }
  ~Nginx() { server_->signal(SIGQUIT); }
  [[nodiscard]] std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + path;
  }

 private:
  [[nodiscard]] bool answers() const {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket(io);
    boost::system::error_code error;
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, error);
    return !error;
  }

  std::uint16_t port_;
  std::unique_ptr<RunningProcess> server_;
};

const std::regex k_final_line("tick [0-9]+ hash [0-9a-f]{16}");

lockstep::replay::BroadcastManifest manifest_of(const std::string& dir) {
  const std::string text = read_file(dir + "/manifest.json");
  lockstep::Result<lockstep::replay::BroadcastManifest> m =
      lockstep::replay::parse_manifest({reinterpret_cast<const std::byte*>(text.data()), text.size()});
  REQUIRE(m.ok());
  return std::move(m).value();
}

/// A host of one bot player and 480 ticks at 120 Hz (4 s), broadcasting into `dir`.
std::vector<std::string> broadcasting_host(const std::string& dir) {
  return {"host",    "--open",      "--players", "1",         "--bot",      "--ticks", "480",
          "--tick-rate", "120", "--port", std::to_string(free_udp_port()), "--broadcast", dir, "--bodies", "200"};
}

}  // namespace

TEST_CASE("spectate follows a live broadcast through nginx to the host's own final hash",
          "[processes][broadcast]") {
  TempDir dir;
  const std::string root = dir.file("www");
  const std::string live = root + "/live";
  std::filesystem::create_directories(root);
  Nginx nginx(dir, root);
  RunningProcess host(k_lockstep, broadcasting_host(live));
  REQUIRE(host.wait_for("host: broadcasting into", 30'000));
  ProcessResult watched = run_process(k_lockstep, {"spectate", nginx.url("live/"), "--behind", "1"});
  ProcessResult hosted = host.finish();
  REQUIRE(hosted.exit_code == 0);
  INFO(watched.out << watched.err);
  CHECK(watched.exit_code == 0);
  CHECK(std::regex_match(hosted.last_line(), k_final_line));
  CHECK(watched.last_line() == hosted.last_line());
  CHECK(watched.out.find("spectator: following the broadcast at " + nginx.url("live/")) != std::string::npos);
  CHECK(watched.out.find("broadcast: tick ") != std::string::npos);
  CHECK(hosted.out.find("host: broadcasting into " + live) != std::string::npos);

  // Afterwards, from tick 0: every hash of the session verified, to the same end.
  ProcessResult again = run_process(k_lockstep, {"spectate", nginx.url("live"), "--from-start", "--behind", "0"});
  CHECK(again.exit_code == 0);
  CHECK(again.last_line() == hosted.last_line());
  CHECK(again.out.find("from tick 0 (its start)") != std::string::npos);
}

TEST_CASE("a damaged segment is fetched again past the cache, and reported when it stays damaged",
          "[processes][broadcast]") {
  TempDir dir;
  const std::string good = dir.file("origin");
  const std::string damaged = dir.file("cache");
  ProcessResult hosted = run_process(k_lockstep, broadcasting_host(good + "/live"));
  REQUIRE(hosted.exit_code == 0);
  std::filesystem::copy(good, damaged, std::filesystem::copy_options::recursive);
  const lockstep::replay::BroadcastManifest m = manifest_of(good + "/live");
  REQUIRE(m.segments.size() > 3);
  const std::string name = m.segment_name(m.segments[2].number);
  std::vector<std::byte> bytes = read_file_bytes(damaged + "/live/" + name);
  bytes[bytes.size() / 2] ^= std::byte{0x01};
  write_file_bytes(damaged + "/live/" + name, bytes);

  SECTION("the origin has it whole: the second fetch plays on") {
    Nginx nginx(dir, damaged, good);
    ProcessResult watched = run_process(k_lockstep, {"spectate", nginx.url("live/"), "--from-start", "--behind", "0"});
    INFO(watched.out << watched.err);
    CHECK(watched.exit_code == 0);
    CHECK(watched.last_line() == hosted.last_line());
    CHECK(watched.out.find("(1 fetched again)") != std::string::npos);
  }
  SECTION("damaged everywhere: reported, exit 3") {
    Nginx nginx(dir, damaged);
    ProcessResult watched = run_process(k_lockstep, {"spectate", nginx.url("live/"), "--from-start", "--behind", "0"});
    CHECK(watched.exit_code == 3);
    CHECK(watched.err.find("segment " + std::to_string(m.segments[2].number) + " (" + nginx.url("live/") + name +
                           ") failed twice: ") != std::string::npos);
    CHECK(watched.err.find("fails its checksum") != std::string::npos);
  }
}

TEST_CASE("spectate's broadcast options are checked before anything is fetched", "[broadcast]") {
  const auto refused = [](const std::vector<std::string>& args) {
    ProcessResult r = run_process(k_lockstep, args);
    CHECK(r.exit_code == 2);
    return r.err;
  };
  CHECK(refused({"spectate", "https://example.org/live/"}).find("https:// is not followed") != std::string::npos);
  CHECK(refused({"spectate", "http://127.0.0.1:99999/live/"}).find("port '99999' is not 1 to 65535") != std::string::npos);
  CHECK(refused({"spectate", "http://127.0.0.1/live/", "--invite", "x"}).find(
            "--invite is for a session's host (HOST:PORT), not a broadcast") != std::string::npos);
  CHECK(refused({"spectate", "127.0.0.1:7777", "--from-start"}).find(
            "--from-start follows a broadcast (an http:// address), not a session's host") != std::string::npos);
  CHECK(refused({"spectate", "http://127.0.0.1/live/", "--behind", "-1"}).find("--behind") != std::string::npos);
  // Under a file, not a directory: said before the host waits for anyone.
  CHECK(refused({"host", "--open", "--broadcast", k_lockstep + "/live"}).find(
            "cannot broadcast into '" + k_lockstep + "/live': ") != std::string::npos);
}
