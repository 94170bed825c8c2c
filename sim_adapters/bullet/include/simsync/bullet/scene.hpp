#pragma once
/// @file
/// A plain description of a rigid-body scene (ground plane, boxes, spheres), a
/// builder for it, and the embedded default scene. No Bullet types here.
///
/// A scene is read from a scenario's YAML `world:` section by scene_from_config
/// (scene_config.hpp), through the project's config loader.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace simsync::bullet {

/// A 3-vector in metres, m/s, newtons, ... (world frame, z up by convention).
struct Vec3 {
    double x = 0;
    double y = 0;
    double z = 0;
    friend bool operator==(const Vec3&, const Vec3&) = default;
};

/// A unit quaternion (x, y, z, w); the identity by default.
struct Quaternion {
    double x = 0;
    double y = 0;
    double z = 0;
    double w = 1;
    friend bool operator==(const Quaternion&, const Quaternion&) = default;

    /// Rotation by `radians` about the z axis.
    static Quaternion from_yaw(double radians);
};

/// Position and orientation of a body's centre of mass in the world frame.
struct Pose {
    Vec3 position{};
    Quaternion orientation{};
    friend bool operator==(const Pose&, const Pose&) = default;
};

enum class Shape { box, sphere };
const char* to_string(Shape shape) noexcept;

/// One rigid body of a scene.
struct BodyDescription {
    /// Unique within the scene; accessors look bodies up by it.
    std::string name;
    Shape shape = Shape::box;
    /// Box only: half the edge lengths, each > 0.
    Vec3 half_extents{0.5, 0.5, 0.5};
    /// Sphere only: > 0.
    double radius = 0.5;
    /// kg; > 0 for a dynamic body, 0 for a static one.
    double mass = 1.0;
    /// Initial pose; the orientation is normalised (it must not be zero).
    Pose pose{};
    Vec3 linear_velocity{};
    Vec3 angular_velocity{};
    double friction = 0.5;    ///< >= 0
    double restitution = 0.0; ///< in [0, 1]
    friend bool operator==(const BodyDescription&, const BodyDescription&) = default;
};

/// An infinite static plane `dot(normal, p) == offset`.
struct GroundPlane {
    Vec3 normal{0, 0, 1}; ///< need not be unit length; must not be zero
    double offset = 0;
    double friction = 0.8;    ///< >= 0
    double restitution = 0.0; ///< in [0, 1]
    friend bool operator==(const GroundPlane&, const GroundPlane&) = default;
};

/// Everything needed to build a BulletWorld. Plain data with defaults: fill it in
/// code, with SceneBuilder, or from YAML with scene_from_config.
struct SceneDescription {
    Vec3 gravity{0, 0, -9.81};
    /// Unset: no ground.
    std::optional<GroundPlane> ground = GroundPlane{};
    /// In this order; a body's index in BulletWorld is its index here.
    std::vector<BodyDescription> bodies;
    /// Sequential-impulse solver iterations per step; > 0.
    int solver_iterations = 10;
    /// Let bodies at rest go to sleep (Bullet's deactivation): cheaper, and still
    /// deterministic; writes through BulletWorld wake the body they touch.
    bool allow_sleeping = true;
    friend bool operator==(const SceneDescription&, const SceneDescription&) = default;
};

/// Checks a scene. @throws simsync::Error (invalid_argument) naming the first bad
/// field, e.g. `bodies[3] ("box_3").mass must be >= 0, got -1`.
void validate(const SceneDescription& scene);

/// Builds a SceneDescription step by step; build() validates it.
///
/// Copy/move: both (plain value). Thread safety: distinct objects: safe; shared
/// objects: unsafe.
///
/// @code
/// auto scene = simsync::bullet::SceneBuilder{}
///                  .gravity({0, 0, -9.81})
///                  .box("crate", {0.25, 0.25, 0.25}, 2.0, {.position = {0, 0, 1}})
///                  .sphere("ball", 0.1, 0.5, {.position = {1, 0, 2}})
///                  .build();
/// @endcode
class SceneBuilder {
public:
    SceneBuilder& gravity(Vec3 gravity);
    SceneBuilder& ground(GroundPlane plane = {});
    SceneBuilder& no_ground();
    SceneBuilder& solver_iterations(int iterations);
    SceneBuilder& allow_sleeping(bool allow);
    SceneBuilder& box(std::string name, Vec3 half_extents, double mass, Pose pose = {});
    SceneBuilder& sphere(std::string name, double radius, double mass, Pose pose = {});
    /// Any body, fully described.
    SceneBuilder& body(BodyDescription body);
    /// @throws simsync::Error (invalid_argument) as validate().
    SceneDescription build() const;

private:
    SceneDescription scene_;
};

/// The embedded default scene: a ground plane and 100 boxes (0.5 m cubes, 1 kg)
/// in four stacks of 25, each layer slightly offset and turned so the stacks
/// collapse onto the plane within the first seconds. Bodies are named
/// `box_0` ... `box_99`, stack by stack, bottom up.
SceneDescription default_scene();

} // namespace simsync::bullet
