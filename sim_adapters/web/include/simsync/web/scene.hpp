#pragma once
/// @file
/// What the web console draws: a small, engine-neutral list of shapes that a host
/// fills from its world inside a shared access, so every picture is one
/// consistent instant of the simulation.

#include <simsync/core/world.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace simsync::web {

/// A point or extent in metres, world frame, z up.
struct Vec3 {
    double x = 0;
    double y = 0;
    double z = 0;
};

/// A unit quaternion (x, y, z, w); the identity by default.
struct Quaternion {
    double x = 0;
    double y = 0;
    double z = 0;
    double w = 1;
};

enum class ShapeKind { sphere, box };
const char* to_string(ShapeKind kind) noexcept;

/// One body to draw.
struct Shape {
    /// Stable from frame to frame (the page follows a body by it).
    std::uint32_t id = 0;
    ShapeKind kind = ShapeKind::box;
    /// Centre of the shape.
    Vec3 position{};
    Quaternion orientation{};
    /// Full extents: a box's edge lengths along its own x, y, z; a sphere's
    /// diameter in `x` (y and z unused).
    Vec3 size{1, 1, 1};
    /// 0xRRGGBB.
    std::uint32_t colour = 0x7f8c99;
};

/// An axis-aligned box in the world frame.
struct Bounds {
    Vec3 min{};
    Vec3 max{};
};

/// Where the page's camera starts (the operator turns it with the mouse): it
/// looks at the centre of the bounds from this direction.
struct CameraHint {
    /// Angle about the z axis, from +x towards +y, of the camera's position seen
    /// from the centre: -90 looks along +y (x to the right, z up).
    double azimuth_deg = -60;
    /// Angle above the x-y plane.
    double elevation_deg = 25;
};

/// One picture of the world.
///
/// Copy/move: both (plain value). Thread safety: distinct objects: safe. Shared
/// objects: unsafe.
struct SceneFrame {
    std::vector<Shape> shapes;
    /// Camera hint: the region worth looking at, which the page frames. Unset: the
    /// page frames the shapes of the first picture it gets.
    std::optional<Bounds> bounds;
    /// Draw a ground grid at this height (z). Unset: no ground.
    std::optional<double> ground_z;
    /// Unset: the page's default direction (CameraHint{}).
    std::optional<CameraHint> camera;
};

/// What a host implements to show its world on the web console.
///
/// The console calls `draw` on its own sampling thread (a few times a second),
/// while it holds a *shared* access to the world at the current instant, granted
/// by the handler like any other access: the world is not stepped and nobody
/// writes to it during the call, and other shared readers may read at the same
/// time. So `draw` must only read (`const` members of the engine), must not block,
/// and should be quick (it delays exclusive accessors at that instant by its
/// duration): copy positions, nothing more. `frame` is the previous picture,
/// cleared of its shapes: reuse its capacity.
///
/// Copy/move: an interface; implementations decide.
/// Thread safety: `draw` is called from one thread at a time (the console's
/// sampler); an implementation shared between consoles must allow concurrent
/// const calls.
class SceneSource {
public:
    virtual ~SceneSource() = default;
    /// Fills `frame` from `world`. May throw; the console then shows no picture
    /// for that instant and reports the message on the page.
    virtual void draw(const World& world, SceneFrame& frame) const = 0;
};

} // namespace simsync::web
