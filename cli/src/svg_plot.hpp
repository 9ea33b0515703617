#pragma once
// A minimal line plot written as a standalone SVG file: axes with ticks, one labelled polyline
// per series, a legend. Enough for the labs; no dependency.

#include <string>
#include <vector>

namespace lockstep::cli {

struct PlotSeries {
  std::string name;
  std::string colour;       ///< any SVG colour
  std::vector<double> x;
  std::vector<double> y;
};

struct PlotSpec {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_y = false;       ///< logarithmic y axis (every y must be > 0)
};

/// Writes the plot; returns false if the file cannot be written.
bool write_svg_plot(const std::string& path, const PlotSpec& spec,
                    const std::vector<PlotSeries>& series);

}  // namespace lockstep::cli
