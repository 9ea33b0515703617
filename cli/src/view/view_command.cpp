#include "lockstep/cli/view/view_command.hpp"

#include <cstdio>
#include <filesystem>

#include "lockstep/cli/numbers.hpp"
#include "lockstep/cli/stop_signal.hpp"
#include "lockstep/cli/view/view_static.hpp"

namespace lockstep::cli::detail {

std::string hash_ranges_json(const replay::ReplayFile& file) {
  constexpr std::size_t k_max_ranges = 1024;
  const std::uint64_t gap = std::max<std::uint64_t>(1, file.header.hash_every);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const replay::TickHash& h : file.hashes) {
    if (!ranges.empty() && (h.tick - ranges.back().second <= gap || ranges.size() == k_max_ranges)) {
      ranges.back().second = h.tick;
    } else {
      ranges.emplace_back(h.tick, h.tick);
    }
  }
  std::string json = "[";
  for (const auto& [first, last] : ranges) {
    json += (json.size() > 1 ? ",[" : "[") + std::to_string(first) + "," + std::to_string(last) + "]";
  }
  return json + "]";
}

std::string divergence_json(const std::optional<ViewDivergence>& divergence, std::string (*describe)(std::string_view)) {
  if (!divergence) return "null";
  std::string fields;
  for (const replay::FieldDifference& f : divergence->report.fields) {
    if (fields.size() > (256u << 10)) break;  // a report of a huge state: the first ones
    fields += std::string(fields.empty() ? "" : ",") + "{\"part\":" + view::json_string(describe(f.path)) +
              ",\"path\":" + view::json_string(f.path) + ",\"a\":" + view::json_string(f.a) +
              ",\"b\":" + view::json_string(f.b) + "}";
  }
  return "{\"tick\":" + std::to_string(divergence->tick) + ",\"note\":" + view::json_string(divergence->report.note) +
         ",\"fields\":[" + fields + "]}";
}

std::string hello_json(const ViewHello& h) {
  std::string files;
  for (const std::string& file : h.files) files += (files.empty() ? "" : ",") + view::json_string(file);
  std::string keyframes;
  for (const std::uint64_t tick : h.keyframes) keyframes += (keyframes.empty() ? "" : ",") + std::to_string(tick);
  std::string json = "{\"type\":\"hello\",\"mode\":" + view::json_string(h.mode) +
                     ",\"simulation\":" + view::json_string(h.simulation) + ",\"files\":[" + files +
                     "],\"worlds\":" + std::to_string(h.worlds) + ",\"start_tick\":" + std::to_string(h.start_tick) +
                     ",\"last_tick\":" + std::to_string(h.last_tick) + ",\"tick_rate_hz\":" + std::to_string(h.tick_rate_hz) +
                     ",\"players\":" + std::to_string(h.players) + ",\"input_bytes\":" + std::to_string(h.input_bytes) +
                     ",\"input_layout\":" + view::json_string(h.input_layout) + ",\"keyframes\":[" + keyframes +
                     "],\"hash_ranges\":" + h.hash_ranges + ",\"truncated\":" + (h.truncated ? "true" : "false") +
                     ",\"drawable\":" + (h.drawable ? "true" : "false") + ",\"divergence\":" + h.divergence;
  if (h.live) {
    json += ",\"local_player\":" + (h.local_player ? std::to_string(*h.local_player) : std::string("null"));
  }
  return json + "}";
}

void mark_differing_shapes(const DrawList& draw_a, const DrawList& draw_b, const std::set<std::string>& parts,
                           std::vector<std::uint8_t>& differs) {
  const std::vector<Shape>& a = draw_a.shapes;
  const std::vector<Shape>& b = draw_b.shapes;
  differs.assign(std::max(a.size(), b.size()), 0);
  for (std::size_t i = 0; i < differs.size(); ++i) {
    const bool both = i < a.size() && i < b.size();
    differs[i] = !both || a[i].x0 != b[i].x0 || a[i].y0 != b[i].y0 || a[i].x1 != b[i].x1 || a[i].y1 != b[i].y1 ||
                 a[i].radius != b[i].radius;
    if (differs[i] == 0 && !parts.empty() && both && !a[i].part.empty()) {
      differs[i] = parts.contains(std::string(a[i].part) + " " + std::to_string(a[i].id));
    }
  }
}

CLI::App* add_view_options(CLI::App& app, ViewOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "view", "Watch a replay in a web browser: play, pause, step, scrub; two replays, or the groups of a desync "
              "evidence bundle, are overlaid with what differs highlighted");
  cmd->add_option("files", options.paths, "A replay, two replays, or an evidence bundle")
      ->expected(1, 2);
  options.participant_option =
      cmd->add_option("--participant", options.participant,
                      "Of an evidence bundle: show only this participant (#N as `lockstep info BUNDLE` lists) over the "
                      "host's group (default: the first with evidence of every other group)")
          ->check(whole_number(0, replay::k_max_bundle_participants - 1));
  cmd->add_option("--static", options.static_dir,
                  "Write the page and lockstep's WebAssembly engine into this new folder and exit: served by any static web "
                  "server or opened from disk, it verifies and plays a replay the person opens, with no lockstep server");
  cmd->add_option("--port", options.port,
                  "TCP port to serve the page on (default " + std::to_string(options.port) + "; 0: any free port)")
      ->check(whole_number(0, k_max_port));
  cmd->add_option("--listen", options.listen,
                  "Address to listen on (default " + options.listen +
                      ": this machine only; 0.0.0.0 shows it to the network)");
  cmd->add_flag("--force", options.force, "Open replays whose simulation compatibility id differs from this build's");
  add_max_state_option(cmd, options.max_state_mb);
  cmd->footer("The server runs until Ctrl-C (exit 0). The page takes ?tick=N to open at a tick, &paused=1, &speed=S "
              "(0.25 to 8) and &interp=0 (no interpolation between ticks); a --static page takes ?replay=URL (same site) "
              "to open a replay.");
  return cmd;
}

bool write_static_view_folder(const ViewOptions& options) {
  if (options.static_dir.empty()) {
    if (options.paths.empty()) throw CommandError{"view needs a replay, two replays or a bundle (or --static DIR)"};
    return false;
  }
  if (!options.paths.empty()) {
    throw CommandError{"--static writes a page that opens its replays itself: give it no file (then open "
                       "DIR/index.html?replay=FILE from a server, or choose the file in the page)"};
  }
  Result<StaticViewWritten> written = write_static_view(options.static_dir);
  if (!written) throw CommandError{written.error().message};
  std::printf("view: wrote %zu files (%s bytes) to %s: serve it with any static web server, or open %s/index.html\n",
              written->files, with_commas(written->bytes).c_str(), options.static_dir.c_str(), options.static_dir.c_str());
  return true;
}

ViewedFiles viewed_files(const ViewOptions& options) {
  if (!ViewServer::is_address(options.listen)) {
    throw CommandError{"--listen '" + options.listen + "' is not an IPv4 or IPv6 address"};
  }
  if (options.paths.size() == 1 && replay::looks_like_bundle(options.paths[0])) return ViewedFiles::bundle;
  if (options.participant_option->count() > 0) {
    throw CommandError{"--participant picks a participant of an evidence bundle; '" + options.paths[0] + "' is none"};
  }
  return ViewedFiles::replays;
}

namespace {

/// Answers what the pages sent since the last poll.
void answer(ViewServer& server, const std::vector<ViewEvent>& events, const std::string& hello, const FramesFn& frames,
            view::FrameBatchWriter& batch) {
  for (const ViewEvent& event : events) {
    if (event.kind == ViewEvent::Kind::opened) server.send_text(event.page, hello);
    if (event.kind != ViewEvent::Kind::request) continue;
    if (const auto* request = std::get_if<view::FramesRequest>(&event.request)) {
      if (Status made = frames(*request, batch); !made) {
        server.send_text(event.page, "{\"type\":\"error\",\"message\":" + view::json_string(made.error().message) + "}");
      } else {
        server.send_binary(event.page, batch.bytes());
      }
    } else {
      server.send_text(event.page, "{\"type\":\"error\",\"message\":\"keys play a live session (lockstep play), not a replay\"}");
    }
  }
}

}  // namespace

void serve_view(std::uint64_t first_tick, std::uint64_t last_tick, const std::string& hello, const FramesFn& frames,
                const ViewOptions& options, int* exit_code) {
  Result<std::unique_ptr<ViewServer>> started = ViewServer::start(ViewServerConfig{options.listen, options.port});
  if (!started) throw CommandError{started.error().message, k_exit_network};
  ViewServer& server = *started.value();
  std::printf("view: ticks %llu to %llu; open %s in a browser (Ctrl-C stops)\n", static_cast<unsigned long long>(first_tick),
              static_cast<unsigned long long>(last_tick), server.url().c_str());
  std::fflush(stdout);
  catch_stop_signals();
  std::vector<ViewEvent> events;
  view::FrameBatchWriter batch;
  while (stop_signal() == 0) {
    events.clear();
    server.poll(std::chrono::milliseconds(200), events);
    answer(server, events, hello, frames, batch);
  }
  const ViewServerStats stats = server.stats();
  std::printf("view: stopped; %llu page%s opened, %llu closed for bad messages, %llu closed for not reading, %llu "
              "connections refused, %llu requests from other sites refused\n",
              static_cast<unsigned long long>(stats.pages_opened), stats.pages_opened == 1 ? "" : "s",
              static_cast<unsigned long long>(stats.bad_messages), static_cast<unsigned long long>(stats.slow_pages_closed),
              static_cast<unsigned long long>(stats.refused_connections),
              static_cast<unsigned long long>(stats.foreign_requests));
  *exit_code = k_exit_ok;
}

}  // namespace lockstep::cli::detail
