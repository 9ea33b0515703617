#include "lockstep/cli/stop_signal.hpp"

#include <atomic>
#include <csignal>

namespace lockstep::cli {
namespace {

std::atomic<int> g_stop_signal{0};

extern "C" void request_stop(int signal_number) { g_stop_signal.store(signal_number); }

}  // namespace

void catch_stop_signals() {
  g_stop_signal.store(0);
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
}

int stop_signal() { return g_stop_signal.load(); }

}  // namespace lockstep::cli
