// The source tree's shape, held (issue 40): no source file of the library, the command line or the
// tools over 600 lines, and no function over 80. Functions are found as a reader finds them: a line
// that opens a brace after a parameter list and is not a control statement or a lambda, to its
// matching brace. The finder is tested on text made to fail first.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

constexpr std::size_t k_max_file_lines = 600;
constexpr std::size_t k_max_function_lines = 80;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string trimmed(const std::string& s) {
  const std::size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") + 1 - first);
}

/// Whether `line` opens a function's body: it ends with `{` after a parameter list, and is not a
/// control statement, a type, a lambda or an initialiser.
bool opens_function(const std::string& line) {
  static const std::regex control(R"(^\s*\}?\s*(if|for|while|switch|else|do|try|catch|namespace|struct|class|enum|union|extern)\b)");
  static const std::regex lambda(R"(\]\s*\(.*\)\s*(mutable\s*)?(->\s*[\w:<>]+\s*)?\{$)");
  const std::string s = trimmed(line);
  if (s.empty() || s.back() != '{') return false;
  if (s.find('(') == std::string::npos && s.rfind(')', 0) != 0) return false;
  if (std::regex_search(line, control) || std::regex_search(s, lambda)) return false;
  return s.rfind("//", 0) != 0 && s.rfind('*', 0) != 0 && s.rfind('[', 0) != 0 && s.rfind('=', 0) != 0 &&
         s.find("= [") == std::string::npos;
}

struct LongFunction {
  std::size_t line = 0;  ///< 1-based
  std::size_t length = 0;
};

/// The functions of `text` longer than `limit` lines.
std::vector<LongFunction> long_functions(const std::string& text, std::size_t limit) {
  const std::vector<std::string> lines = lines_of(text);
  std::vector<LongFunction> found;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!opens_function(lines[i])) continue;
    long depth = 0;
    std::size_t j = i;
    for (; j < lines.size(); ++j) {
      for (const char c : lines[j]) depth += c == '{' ? 1 : c == '}' ? -1 : 0;
      if (depth <= 0) break;
    }
    if (j - i + 1 > limit) found.push_back({i + 1, j - i + 1});
  }
  return found;
}

std::string function_of(std::size_t body_lines) {
  std::string text = "int f(int x) {\n";
  for (std::size_t i = 0; i < body_lines; ++i) text += "  x += 1;\n";
  return text + "  return x;\n}\n";
}

std::vector<fs::path> sources() {
  const fs::path root = fs::path(LOCKSTEP_TEST_DATA_DIR).parent_path();
  std::vector<fs::path> files;
  for (const char* folder : {"engine", "replay", "net", "cli", "tools"}) {
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(root / folder)) {
      const std::string ext = e.path().extension().string();
      if (e.is_regular_file() && (ext == ".cpp" || ext == ".hpp")) files.push_back(e.path());
    }
  }
  return files;
}

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("the function finder finds a long function and passes over control blocks, lambdas and types") {
  CHECK(long_functions(function_of(77), 80).empty());  // 80 lines with its braces and return
  const std::vector<LongFunction> long_one = long_functions("// a file\n" + function_of(80), 80);
  REQUIRE(long_one.size() == 1);
  CHECK(long_one[0].line == 2);
  CHECK(long_one[0].length == 83);
  CHECK(opens_function("  void Session::pace(Instant now) {"));
  CHECK(opens_function("    ) const {"));  // the end of a parameter list on lines of its own
  CHECK_FALSE(opens_function("  if (ready) {"));
  CHECK_FALSE(opens_function("  } else if (late) {"));
  CHECK_FALSE(opens_function("  for (int i = 0; i < n; ++i) {"));
  CHECK_FALSE(opens_function("  const auto timed = [this](auto&& step) {"));
  CHECK_FALSE(opens_function("  std::visit([&](auto& r) {"));
  CHECK_FALSE(opens_function("struct Frame {"));
}

TEST_CASE("no source file of engine, replay, net, cli or tools is over 600 lines, and no function over 80") {
  const std::vector<fs::path> files = sources();
  REQUIRE(files.size() > 100);
  for (const fs::path& file : files) {
    const std::string text = read(file);
    INFO(file.string());
    CHECK(lines_of(text).size() <= k_max_file_lines);
    for (const LongFunction& f : long_functions(text, k_max_function_lines)) {
      FAIL_CHECK("a function of " << f.length << " lines at line " << f.line);
    }
  }
}
