#pragma once
/// What a simulation's state looks like, for the viewer (`lockstep view`, `play`, `--view`): a
/// list of shapes in world units with a bounding box. A simulation offers it through the optional
/// hook `static void Hooks<S>::draw(const S& sim, DrawList& out)` (hooks.hpp); one without it
/// still gets the viewer's timeline, hashes and inputs, with nothing drawn.
///
/// Drawing reads the state and never changes it: nothing here takes part in a step or a hash.

#include <cstdint>
#include <string_view>
#include <vector>

namespace lockstep::cli {

/// How the page draws a shape (each kind has its own colour and style).
enum class ShapeKind : std::uint8_t {
  body = 1,         ///< a moving circle: (x0, y0) centre, radius
  fixed_body = 2,   ///< a circle that never moves (an anchor, a peg)
  player = 3,       ///< a circle a player's input pushes (`player` says whose)
  spring = 4,       ///< a segment from (x0, y0) to (x1, y1)
  rope = 5,         ///< a segment, drawn as rope
  wall = 6,         ///< a rectangle from (x0, y0) to (x1, y1)
};
inline constexpr std::uint8_t k_last_shape_kind = static_cast<std::uint8_t>(ShapeKind::wall);

/// One shape. `part` and `id` name the part of the state it draws the way the simulation's
/// field report does (`describe_field`): part "body", id 18 is "body 18". The viewer highlights
/// a shape whose name the field report of a divergence lists.
struct Shape {
  ShapeKind kind = ShapeKind::body;
  std::string_view part;  ///< a string with static storage ("body"); empty: named by nothing
  std::uint32_t id = 0;
  double x0 = 0.0, y0 = 0.0;
  double x1 = 0.0, y1 = 0.0;
  double radius = 0.0;
  std::uint32_t player = k_no_player;  ///< the slot whose input moves it, if any
  static constexpr std::uint32_t k_no_player = 0xFFFFFFFFu;
};

/// The shapes of one state and the box the page fits to its canvas.
struct DrawList {
  double min_x = 0.0, min_y = 0.0;
  double max_x = 0.0, max_y = 0.0;
  bool y_down = true;  ///< +y points down the screen (the built-in world's pixels)
  std::vector<Shape> shapes;

  void clear() {
    shapes.clear();
    min_x = min_y = max_x = max_y = 0.0;
  }
  void circle(ShapeKind kind, std::string_view part, std::uint32_t id, double x, double y, double radius,
              std::uint32_t player = Shape::k_no_player) {
    shapes.push_back(Shape{kind, part, id, x, y, x, y, radius, player});
  }
  void segment(ShapeKind kind, std::string_view part, std::uint32_t id, double x0, double y0, double x1, double y1) {
    shapes.push_back(Shape{kind, part, id, x0, y0, x1, y1, 0.0});
  }
  void rectangle(ShapeKind kind, std::string_view part, std::uint32_t id, double x0, double y0, double x1, double y1) {
    shapes.push_back(Shape{kind, part, id, x0, y0, x1, y1, 0.0});
  }
};

}  // namespace lockstep::cli
