#include "lockstep/net/reconnect_key.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lockstep/engine/runner.hpp"
#include "lockstep/replay/regular_file.hpp"

namespace lockstep::net {
namespace {

constexpr const char* k_first_line = "lockstep reconnect key 1";

/// "name <value>" with exactly that name, the value 16 lowercase hex digits.
bool hex_line(const std::string& line, const std::string& name, std::uint64_t& out) {
  if (line.size() != name.size() + 17 || line.compare(0, name.size() + 1, name + " ") != 0) return false;
  out = 0;
  for (std::size_t i = name.size() + 1; i < line.size(); ++i) {
    const char c = line[i];
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return false;
    out = (out << 4) | static_cast<std::uint64_t>(digit);
  }
  return true;
}

}  // namespace

Result<Reclaim> read_reconnect_key(const std::string& path) {
  Result<std::vector<std::byte>> bytes = replay::read_regular_file(path, 1024);
  if (!bytes) return bytes.error();
  const std::string text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  std::istringstream in(text);
  std::string first, session, slot, key;
  std::getline(in, first);
  std::getline(in, session);
  std::getline(in, slot);
  std::getline(in, key);
  // Four whole lines (a file cut short loses its last newline) and nothing after.
  const bool ends = in && in.peek() == std::char_traits<char>::eof() && text.back() == '\n';
  Reclaim r;
  std::uint64_t slot_number = 0;
  const bool slot_ok = slot.size() >= 6 && slot.size() <= 8 && slot.compare(0, 5, "slot ") == 0 &&
                       std::all_of(slot.begin() + 5, slot.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                       (slot_number = std::stoull(slot.substr(5))) < k_max_session_players;
  if (first != k_first_line || !hex_line(session, "session", r.session) || !slot_ok || !hex_line(key, "key", r.key) ||
      r.key == 0 || !ends) {
    return fail("'", path, "' is not a lockstep reconnect key");
  }
  r.slot = static_cast<std::uint8_t>(slot_number);
  return r;
}

Status write_reconnect_key(const std::string& path, const Reclaim& r) {
  namespace fs = std::filesystem;
  const std::string temporary = path + ".partial";
  std::error_code error;
  {
    // Readable by its owner alone before the key is in it.
    std::ofstream(temporary, std::ios::trunc).close();
    fs::permissions(temporary, fs::perms::owner_read | fs::perms::owner_write, error);
    if (error) return fail("cannot write the reconnect key to '", path, "': ", error.message());
    std::ofstream out(temporary, std::ios::trunc);
    out << k_first_line << "\nsession " << hash_hex(r.session) << "\nslot " << static_cast<unsigned>(r.slot) << "\nkey "
        << hash_hex(r.key) << "\n";
    if (!out.flush()) return fail("cannot write the reconnect key to '", path, "'");
  }
  fs::rename(temporary, path, error);
  if (error) return fail("cannot write the reconnect key to '", path, "': ", error.message());
  return {};
}

}  // namespace lockstep::net
