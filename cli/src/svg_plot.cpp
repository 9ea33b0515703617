#include "svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include "lockstep/cli/detail/text.hpp"

namespace lockstep::cli {
namespace {

constexpr double k_width = 800.0;
constexpr double k_height = 500.0;
constexpr double k_left = 80.0;
constexpr double k_right = 180.0;  // room for the legend
constexpr double k_top = 50.0;
constexpr double k_bottom = 60.0;

std::string label(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

/// Where the plot's data lies, in plot units (log10 of y on a log axis), padded so that no line
/// touches the frame.
struct Frame {
  double x_min = std::numeric_limits<double>::infinity();
  double x_max = -std::numeric_limits<double>::infinity();
  double y_min = std::numeric_limits<double>::infinity();
  double y_max = -std::numeric_limits<double>::infinity();
  bool log_y = false;
  double plot_w = k_width - k_left - k_right;
  double plot_h = k_height - k_top - k_bottom;

  [[nodiscard]] double y_of(double y) const { return log_y ? std::log10(std::max(y, 1e-300)) : y; }
  [[nodiscard]] double px(double x) const { return k_left + (x - x_min) / (x_max - x_min) * plot_w; }
  [[nodiscard]] double py(double y) const { return k_top + (y_max - y) / (y_max - y_min) * plot_h; }
};

Frame frame_of(const PlotSpec& spec, const std::vector<PlotSeries>& series) {
  Frame f;
  f.log_y = spec.log_y;
  for (const PlotSeries& s : series) {
    for (double x : s.x) {
      f.x_min = std::min(f.x_min, x);
      f.x_max = std::max(f.x_max, x);
    }
    for (double y : s.y) {
      if (!std::isfinite(y)) continue;
      f.y_min = std::min(f.y_min, f.y_of(y));
      f.y_max = std::max(f.y_max, f.y_of(y));
    }
  }
  if (!(f.x_min < f.x_max)) f.x_max = f.x_min + 1.0;
  if (!(f.y_min < f.y_max)) {
    f.y_min -= 0.5;
    f.y_max += 0.5;
  }
  const double pad = (f.y_max - f.y_min) * 0.05;
  f.y_min -= pad;
  f.y_max += pad;
  return f;
}

void write_axes(std::ofstream& out, const PlotSpec& spec, const Frame& f) {
  using detail::one_decimal;
  const double plot_w = f.plot_w;
  const double plot_h = f.plot_h;
  out << "<line x1=\"" << k_left << "\" y1=\"" << k_top + plot_h << "\" x2=\"" << k_left + plot_w
      << "\" y2=\"" << k_top + plot_h << "\" stroke=\"black\"/>\n";
  out << "<line x1=\"" << k_left << "\" y1=\"" << k_top << "\" x2=\"" << k_left << "\" y2=\""
      << k_top + plot_h << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    const double x = f.x_min + (f.x_max - f.x_min) * i / 5.0;
    const double y = f.y_min + (f.y_max - f.y_min) * i / 5.0;
    out << "<line x1=\"" << one_decimal(f.px(x)) << "\" y1=\"" << one_decimal(k_top + plot_h) << "\" x2=\""
        << one_decimal(f.px(x)) << "\" y2=\"" << one_decimal(k_top + plot_h + 5) << "\" stroke=\"black\"/>\n";
    out << "<text x=\"" << one_decimal(f.px(x)) << "\" y=\"" << one_decimal(k_top + plot_h + 20)
        << "\" text-anchor=\"middle\">" << label(x) << "</text>\n";
    out << "<line x1=\"" << one_decimal(k_left - 5) << "\" y1=\"" << one_decimal(f.py(y)) << "\" x2=\"" << k_left
        << "\" y2=\"" << one_decimal(f.py(y)) << "\" stroke=\"black\"/>\n";
    out << "<text x=\"" << one_decimal(k_left - 8) << "\" y=\"" << one_decimal(f.py(y) + 4)
        << "\" text-anchor=\"end\">" << label(spec.log_y ? std::pow(10.0, y) : y) << "</text>\n";
  }
  out << "<text x=\"" << one_decimal(k_left + plot_w / 2) << "\" y=\"" << one_decimal(k_height - 15)
      << "\" text-anchor=\"middle\">" << escape(spec.x_label) << "</text>\n";
  out << "<text transform=\"translate(20," << one_decimal(k_top + plot_h / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape(spec.y_label)
      << (spec.log_y ? " (log scale)" : "") << "</text>\n";
}

/// A series' polyline (at most about 2,000 points) and its line in the legend.
void write_series(std::ofstream& out, const PlotSeries& line, std::size_t index, const Frame& f) {
  using detail::one_decimal;
  out << "<polyline fill=\"none\" stroke=\"" << line.colour << "\" stroke-width=\"1.5\" points=\"";
  const std::size_t n = std::min(line.x.size(), line.y.size());
  const std::size_t stride = std::max<std::size_t>(1, n / 2000);
  for (std::size_t i = 0; i < n; i += stride) {
    if (!std::isfinite(line.y[i])) break;
    const double y = std::clamp(f.y_of(line.y[i]), f.y_min, f.y_max);
    out << one_decimal(f.px(line.x[i])) << ',' << one_decimal(f.py(y)) << ' ';
  }
  out << "\"/>\n";
  const double ly = k_top + 20.0 + 22.0 * static_cast<double>(index);
  const double lx = k_left + f.plot_w + 20.0;
  out << "<line x1=\"" << one_decimal(lx) << "\" y1=\"" << one_decimal(ly) << "\" x2=\"" << one_decimal(lx + 25)
      << "\" y2=\"" << one_decimal(ly) << "\" stroke=\"" << line.colour << "\" stroke-width=\"3\"/>\n";
  out << "<text x=\"" << one_decimal(lx + 32) << "\" y=\"" << one_decimal(ly + 4) << "\">" << escape(line.name)
      << "</text>\n";
}

}  // namespace

bool write_svg_plot(const std::string& path, const PlotSpec& spec,
                    const std::vector<PlotSeries>& series) {
  const Frame frame = frame_of(spec, series);
  std::ofstream out(path);
  if (!out) return false;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << k_width << "\" height=\""
      << k_height << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  out << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out << "<text x=\"" << k_width / 2 << "\" y=\"25\" text-anchor=\"middle\" font-size=\"16\">"
      << escape(spec.title) << "</text>\n";
  write_axes(out, spec, frame);
  for (std::size_t s = 0; s < series.size(); ++s) write_series(out, series[s], s, frame);
  out << "</svg>\n";
  return static_cast<bool>(out);
}

}  // namespace lockstep::cli
