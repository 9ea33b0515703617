#pragma once
/// A 2D vector of doubles in pixels (or pixels per second, …): +x right, +y down, as on a screen.

#include "lockstep/engine/float_determinism.hpp"

namespace lockstep {

/// Plain value; every operation is one IEEE add, subtract or multiply per component, so results
/// are the same bits on every compiler and architecture.
struct Vec2 {
  double x = 0.0;
  double y = 0.0;

  friend constexpr Vec2 operator+(Vec2 a, Vec2 b) { return {a.x + b.x, a.y + b.y}; }
  friend constexpr Vec2 operator-(Vec2 a, Vec2 b) { return {a.x - b.x, a.y - b.y}; }
  friend constexpr Vec2 operator*(Vec2 a, double s) { return {a.x * s, a.y * s}; }
  friend constexpr Vec2 operator*(double s, Vec2 a) { return {a.x * s, a.y * s}; }
  friend constexpr bool operator==(Vec2 a, Vec2 b) = default;
};

}  // namespace lockstep

// The operators above are one operation each; an expression a user builds from them (`p + v * dt`)
// is the user's code, compiled under the user's flags (docs/DETERMINISM.md). `dot` is a
// multiply-add of the engine's own, so it is kept unfused here.
LOCKSTEP_NO_CONTRACTION_BEGIN
namespace lockstep {

/// Dot product.
constexpr double dot(Vec2 a, Vec2 b) {
  LOCKSTEP_NO_CONTRACTION_HERE
  return a.x * b.x + a.y * b.y;
}

}  // namespace lockstep
LOCKSTEP_NO_CONTRACTION_END
