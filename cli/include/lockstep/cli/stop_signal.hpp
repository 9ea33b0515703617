#pragma once
// SIGINT and SIGTERM ask a long command (run, host, join, spectate) to stop between two steps, so
// recordings are finished properly and nothing already recorded is lost.

namespace lockstep::cli {

/// Installs the handlers and forgets any earlier request.
void catch_stop_signals();

/// The signal that asked to stop, or 0.
int stop_signal();

}  // namespace lockstep::cli
