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

}  // namespace

bool write_svg_plot(const std::string& path, const PlotSpec& spec,
                    const std::vector<PlotSeries>& series) {
  double x_min = std::numeric_limits<double>::infinity();
  double x_max = -x_min;
  double y_min = x_min;
  double y_max = -x_min;
  auto y_of = [&spec](double y) { return spec.log_y ? std::log10(std::max(y, 1e-300)) : y; };
  for (const PlotSeries& s : series) {
    for (double x : s.x) {
      x_min = std::min(x_min, x);
      x_max = std::max(x_max, x);
    }
    for (double y : s.y) {
      if (!std::isfinite(y)) continue;
      y_min = std::min(y_min, y_of(y));
      y_max = std::max(y_max, y_of(y));
    }
  }
  if (!(x_min < x_max)) x_max = x_min + 1.0;
  if (!(y_min < y_max)) {
    y_min -= 0.5;
    y_max += 0.5;
  }
  const double pad = (y_max - y_min) * 0.05;
  y_min -= pad;
  y_max += pad;
  const double plot_w = k_width - k_left - k_right;
  const double plot_h = k_height - k_top - k_bottom;
  auto px = [&](double x) { return k_left + (x - x_min) / (x_max - x_min) * plot_w; };
  auto py = [&](double y) { return k_top + (y_max - y) / (y_max - y_min) * plot_h; };

  std::ofstream out(path);
  if (!out) return false;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << k_width << "\" height=\""
      << k_height << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  out << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out << "<text x=\"" << k_width / 2 << "\" y=\"25\" text-anchor=\"middle\" font-size=\"16\">"
      << escape(spec.title) << "</text>\n";
  // Axes and ticks.
  out << "<line x1=\"" << k_left << "\" y1=\"" << k_top + plot_h << "\" x2=\"" << k_left + plot_w
      << "\" y2=\"" << k_top + plot_h << "\" stroke=\"black\"/>\n";
  out << "<line x1=\"" << k_left << "\" y1=\"" << k_top << "\" x2=\"" << k_left << "\" y2=\""
      << k_top + plot_h << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    const double x = x_min + (x_max - x_min) * i / 5.0;
    const double y = y_min + (y_max - y_min) * i / 5.0;
    out << "<line x1=\"" << detail::one_decimal(px(x)) << "\" y1=\"" << detail::one_decimal(k_top + plot_h) << "\" x2=\""
        << detail::one_decimal(px(x)) << "\" y2=\"" << detail::one_decimal(k_top + plot_h + 5) << "\" stroke=\"black\"/>\n";
    out << "<text x=\"" << detail::one_decimal(px(x)) << "\" y=\"" << detail::one_decimal(k_top + plot_h + 20)
        << "\" text-anchor=\"middle\">" << label(x) << "</text>\n";
    out << "<line x1=\"" << detail::one_decimal(k_left - 5) << "\" y1=\"" << detail::one_decimal(py(y)) << "\" x2=\"" << k_left
        << "\" y2=\"" << detail::one_decimal(py(y)) << "\" stroke=\"black\"/>\n";
    out << "<text x=\"" << detail::one_decimal(k_left - 8) << "\" y=\"" << detail::one_decimal(py(y) + 4)
        << "\" text-anchor=\"end\">" << label(spec.log_y ? std::pow(10.0, y) : y) << "</text>\n";
  }
  out << "<text x=\"" << detail::one_decimal(k_left + plot_w / 2) << "\" y=\"" << detail::one_decimal(k_height - 15)
      << "\" text-anchor=\"middle\">" << escape(spec.x_label) << "</text>\n";
  out << "<text transform=\"translate(20," << detail::one_decimal(k_top + plot_h / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape(spec.y_label)
      << (spec.log_y ? " (log scale)" : "") << "</text>\n";
  // Series and legend.
  for (std::size_t s = 0; s < series.size(); ++s) {
    const PlotSeries& line = series[s];
    out << "<polyline fill=\"none\" stroke=\"" << line.colour << "\" stroke-width=\"1.5\" points=\"";
    const std::size_t n = std::min(line.x.size(), line.y.size());
    const std::size_t stride = std::max<std::size_t>(1, n / 2000);
    for (std::size_t i = 0; i < n; i += stride) {
      if (!std::isfinite(line.y[i])) break;
      const double y = std::clamp(y_of(line.y[i]), y_min, y_max);
      out << detail::one_decimal(px(line.x[i])) << ',' << detail::one_decimal(py(y)) << ' ';
    }
    out << "\"/>\n";
    const double ly = k_top + 20.0 + 22.0 * static_cast<double>(s);
    const double lx = k_left + plot_w + 20.0;
    out << "<line x1=\"" << detail::one_decimal(lx) << "\" y1=\"" << detail::one_decimal(ly) << "\" x2=\"" << detail::one_decimal(lx + 25)
        << "\" y2=\"" << detail::one_decimal(ly) << "\" stroke=\"" << line.colour << "\" stroke-width=\"3\"/>\n";
    out << "<text x=\"" << detail::one_decimal(lx + 32) << "\" y=\"" << detail::one_decimal(ly + 4) << "\">" << escape(line.name)
        << "</text>\n";
  }
  out << "</svg>\n";
  return static_cast<bool>(out);
}

}  // namespace lockstep::cli
