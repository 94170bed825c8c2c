#include <simsync/bullet/scene.hpp>

#include <simsync/core/error.hpp>

#include <cmath>
#include <cstdio>
#include <set>
#include <string_view>

namespace simsync::bullet {

namespace {

std::string number(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
    return buffer;
}

[[noreturn]] void fail(const std::string& field, const std::string& what)
{
    throw Error(errc::invalid_argument, "scene: " + field + " " + what);
}

void check_finite(const std::string& field, double value)
{
    if (!std::isfinite(value)) fail(field, "must be finite, got " + number(value));
}

void check_finite(const std::string& field, const Vec3& v)
{
    check_finite(field + ".x", v.x);
    check_finite(field + ".y", v.y);
    check_finite(field + ".z", v.z);
}

void check_positive(const std::string& field, double value)
{
    check_finite(field, value);
    if (!(value > 0)) fail(field, "must be > 0, got " + number(value));
}

void check_friction_restitution(const std::string& prefix, double friction, double restitution)
{
    check_finite(prefix + ".friction", friction);
    if (friction < 0) fail(prefix + ".friction", "must be >= 0, got " + number(friction));
    check_finite(prefix + ".restitution", restitution);
    if (restitution < 0 || restitution > 1) {
        fail(prefix + ".restitution", "must be in [0, 1], got " + number(restitution));
    }
}

} // namespace

Quaternion Quaternion::from_yaw(double radians)
{
    return {0, 0, std::sin(radians / 2), std::cos(radians / 2)};
}

const char* to_string(Shape shape) noexcept
{
    switch (shape) {
    case Shape::box: return "box";
    case Shape::sphere: return "sphere";
    }
    return "?";
}

void validate(const SceneDescription& scene)
{
    check_finite("gravity", scene.gravity);
    if (scene.solver_iterations <= 0) {
        fail("solver_iterations", "must be > 0, got " + std::to_string(scene.solver_iterations));
    }
    if (scene.ground) {
        const GroundPlane& g = *scene.ground;
        check_finite("ground.normal", g.normal);
        if (g.normal == Vec3{}) fail("ground.normal", "must not be zero");
        check_finite("ground.offset", g.offset);
        check_friction_restitution("ground", g.friction, g.restitution);
    }
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < scene.bodies.size(); ++i) {
        const BodyDescription& b = scene.bodies[i];
        const std::string field = "bodies[" + std::to_string(i) + "] (\"" + b.name + "\")";
        if (b.name.empty()) fail("bodies[" + std::to_string(i) + "].name", "must not be empty");
        if (!names.insert(b.name).second) fail(field + ".name", "is a duplicate");
        switch (b.shape) {
        case Shape::box:
            check_positive(field + ".half_extents.x", b.half_extents.x);
            check_positive(field + ".half_extents.y", b.half_extents.y);
            check_positive(field + ".half_extents.z", b.half_extents.z);
            break;
        case Shape::sphere: check_positive(field + ".radius", b.radius); break;
        default: fail(field + ".shape", "is not box or sphere");
        }
        check_finite(field + ".mass", b.mass);
        if (b.mass < 0) fail(field + ".mass", "must be >= 0, got " + number(b.mass));
        check_finite(field + ".pose.position", b.pose.position);
        const Quaternion& q = b.pose.orientation;
        check_finite(field + ".pose.orientation.x", q.x);
        check_finite(field + ".pose.orientation.y", q.y);
        check_finite(field + ".pose.orientation.z", q.z);
        check_finite(field + ".pose.orientation.w", q.w);
        if (q.x == 0 && q.y == 0 && q.z == 0 && q.w == 0) {
            fail(field + ".pose.orientation", "must not be the zero quaternion");
        }
        check_finite(field + ".linear_velocity", b.linear_velocity);
        check_finite(field + ".angular_velocity", b.angular_velocity);
        check_friction_restitution(field, b.friction, b.restitution);
    }
}

SceneBuilder& SceneBuilder::gravity(Vec3 gravity)
{
    scene_.gravity = gravity;
    return *this;
}

SceneBuilder& SceneBuilder::ground(GroundPlane plane)
{
    scene_.ground = plane;
    return *this;
}

SceneBuilder& SceneBuilder::no_ground()
{
    scene_.ground.reset();
    return *this;
}

SceneBuilder& SceneBuilder::solver_iterations(int iterations)
{
    scene_.solver_iterations = iterations;
    return *this;
}

SceneBuilder& SceneBuilder::allow_sleeping(bool allow)
{
    scene_.allow_sleeping = allow;
    return *this;
}

SceneBuilder& SceneBuilder::box(std::string name, Vec3 half_extents, double mass, Pose pose)
{
    BodyDescription b;
    b.name = std::move(name);
    b.shape = Shape::box;
    b.half_extents = half_extents;
    b.mass = mass;
    b.pose = pose;
    return body(std::move(b));
}

SceneBuilder& SceneBuilder::sphere(std::string name, double radius, double mass, Pose pose)
{
    BodyDescription b;
    b.name = std::move(name);
    b.shape = Shape::sphere;
    b.radius = radius;
    b.mass = mass;
    b.pose = pose;
    return body(std::move(b));
}

SceneBuilder& SceneBuilder::body(BodyDescription body)
{
    scene_.bodies.push_back(std::move(body));
    return *this;
}

SceneDescription SceneBuilder::build() const
{
    validate(scene_);
    return scene_;
}

SceneDescription default_scene()
{
    constexpr int kStacks = 4;
    constexpr int kLayers = 25;
    constexpr double kHalf = 0.25;
    constexpr double kGap = 0.02;
    constexpr double kDrop = 0.3;
    const Vec3 centres[kStacks] = {{-1.5, -1.5, 0}, {1.5, -1.5, 0}, {-1.5, 1.5, 0}, {1.5, 1.5, 0}};

    SceneBuilder builder;
    builder.gravity({0, 0, -9.81}).ground({});
    for (int s = 0; s < kStacks; ++s) {
        for (int layer = 0; layer < kLayers; ++layer) {
            // A small sideways drift and twist per layer makes each tall stack lean
            // and collapse: the run exercises contacts, not just resting boxes.
            const double drift = 0.03 * layer * ((s % 2 == 0) ? 1.0 : -1.0);
            const Pose pose{
                .position = {centres[s].x + drift, centres[s].y + 0.5 * drift,
                             kDrop + kHalf + layer * (2 * kHalf + kGap)},
                .orientation = Quaternion::from_yaw(0.07 * layer + 0.3 * s)};
            builder.box("box_" + std::to_string(s * kLayers + layer), {kHalf, kHalf, kHalf}, 1.0, pose);
        }
    }
    return builder.build();
}

} // namespace simsync::bullet
