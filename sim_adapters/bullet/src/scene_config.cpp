#include <simsync/bullet/scene_config.hpp>

#include <simsync/core/error.hpp>

#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>

namespace simsync::bullet {

namespace {

Vec3 as_vec3(const ConfigNode& n)
{
    const std::vector<ConfigNode> e = n.elements();
    if (e.size() != 3) n.fail("expected a list of three numbers [x, y, z], got " + std::to_string(e.size()));
    return {e[0].as_double(), e[1].as_double(), e[2].as_double()};
}

Quaternion as_quaternion(const ConfigNode& n)
{
    const std::vector<ConfigNode> e = n.elements();
    if (e.size() != 4) n.fail("expected a quaternion [x, y, z, w], got " + std::to_string(e.size()) + " numbers");
    const Quaternion q{e[0].as_double(), e[1].as_double(), e[2].as_double(), e[3].as_double()};
    if (q.x == 0 && q.y == 0 && q.z == 0 && q.w == 0) n.fail("the zero quaternion is not a rotation");
    return q;
}

double positive(const ConfigNode& n)
{
    const double v = n.as_double();
    if (!(v > 0)) n.fail("expected a number > 0, got '" + n.as_string() + "'");
    return v;
}

double non_negative(const ConfigNode& n)
{
    const double v = n.as_double();
    if (!(v >= 0)) n.fail("expected a number >= 0, got '" + n.as_string() + "'");
    return v;
}

double unit_interval(const ConfigNode& n)
{
    const double v = n.as_double();
    if (!(v >= 0 && v <= 1)) n.fail("expected a number in [0, 1], got '" + n.as_string() + "'");
    return v;
}

GroundPlane ground_from(const ConfigNode& n)
{
    n.allow_only({"normal", "offset", "friction", "restitution"});
    GroundPlane g;
    if (auto v = n.find("normal")) {
        g.normal = as_vec3(*v);
        if (g.normal == Vec3{}) v->fail("the normal must not be zero");
    }
    if (auto v = n.find("offset")) g.offset = v->as_double();
    if (auto v = n.find("friction")) g.friction = non_negative(*v);
    if (auto v = n.find("restitution")) g.restitution = unit_interval(*v);
    return g;
}

// Every key is checked, and the error reported is the first in the document
// (FirstConfigError): an unknown key after a bad size names the size. A
// missing size or radius is only known once the body's keys are read, and a
// key spelled wrong is its likeliest cause, so it is reported when nothing
// else is wrong.
BodyDescription body_from(const ConfigNode& n)
{
    BodyDescription b;
    simsync::FirstConfigError first;
    first.check([&] {
        n.allow_only({"name", "shape", "size", "half_extents", "radius", "mass", "position", "orientation", "yaw",
                      "linear_velocity", "angular_velocity", "friction", "restitution"});
    });
    if (!n.is_map()) first.throw_if_any();
    first.check([&] {
        const ConfigNode name = n.at("name");
        b.name = name.as_string();
        if (b.name.empty()) name.fail("expected a non-empty name");
    });
    std::optional<Shape> shape;
    first.check([&] { shape = n.at("shape").as_choice({"box", "sphere"}) == "box" ? Shape::box : Shape::sphere; });
    const auto size = n.find("size");
    const auto half = n.find("half_extents");
    const auto radius = n.find("radius");
    if (shape == Shape::box) {
        b.shape = Shape::box;
        if (radius) first.check([&] { radius->fail("a box has no radius; give size or half_extents"); });
        if (size && half) first.check([&] { half->fail("give either size or half_extents, not both"); });
        if (size) {
            first.check([&] {
                const Vec3 v = as_vec3(*size);
                if (!(v.x > 0 && v.y > 0 && v.z > 0)) size->fail("every edge length must be > 0");
                b.half_extents = {v.x / 2, v.y / 2, v.z / 2};
            });
        }
        if (half && !size) {
            first.check([&] {
                b.half_extents = as_vec3(*half);
                const Vec3& h = b.half_extents;
                if (!(h.x > 0 && h.y > 0 && h.z > 0)) half->fail("every half extent must be > 0");
            });
        }
    } else if (shape == Shape::sphere) {
        b.shape = Shape::sphere;
        if (size) first.check([&] { size->fail("a sphere has no size; give radius"); });
        if (half) first.check([&] { half->fail("a sphere has no half_extents; give radius"); });
        if (radius) first.check([&] { b.radius = positive(*radius); });
    }
    if (auto v = n.find("mass")) first.check([&] { b.mass = non_negative(*v); });
    if (auto v = n.find("position")) first.check([&] { b.pose.position = as_vec3(*v); });
    const auto orientation = n.find("orientation");
    const auto yaw = n.find("yaw");
    if (orientation && yaw) first.check([&] { yaw->fail("give either orientation or yaw, not both"); });
    if (orientation) first.check([&] { b.pose.orientation = as_quaternion(*orientation); });
    if (yaw && !orientation) first.check([&] { b.pose.orientation = Quaternion::from_yaw(yaw->as_double()); });
    if (auto v = n.find("linear_velocity")) first.check([&] { b.linear_velocity = as_vec3(*v); });
    if (auto v = n.find("angular_velocity")) first.check([&] { b.angular_velocity = as_vec3(*v); });
    if (auto v = n.find("friction")) first.check([&] { b.friction = non_negative(*v); });
    if (auto v = n.find("restitution")) first.check([&] { b.restitution = unit_interval(*v); });
    first.throw_if_any();
    // No default extent: a box of unstated size is a mistake, not a 1 m cube.
    if (shape == Shape::box && !size && !half) n.fail("a box needs size (full edge lengths) or half_extents");
    if (shape == Shape::sphere && !radius) n.fail("a sphere needs radius");
    return b;
}

std::string num(double v)
{
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.17g", v);
    return buffer;
}

std::string vec(const Vec3& v) { return "[" + num(v.x) + ", " + num(v.y) + ", " + num(v.z) + "]"; }

// Names are written as double-quoted YAML strings so that any text survives.
std::string quoted(const std::string& s)
{
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

} // namespace

void register_world_type(ScenarioExtensions& extensions)
{
    extensions.add_world_type(kWorldType, [](const ConfigNode& world) { scene_from_config(world); });
}

SceneDescription scene_from_config(const ConfigNode& world)
{
    world.allow_only({"type", "preset", "gravity", "solver_iterations", "allow_sleeping", "ground", "bodies"});
    const ConfigNode type = world.at("type");
    if (type.as_string() != kWorldType) {
        type.fail(std::string("the Bullet adapter reads world type '") + kWorldType + "', got '" + type.as_string() +
                  "'");
    }

    SceneDescription scene;
    if (auto preset = world.find("preset")) {
        preset->as_choice({"default", "empty"});
        if (preset->as_string() == "default") scene = default_scene();
    } else {
        scene.bodies.clear();
    }
    if (auto v = world.find("gravity")) scene.gravity = as_vec3(*v);
    if (auto v = world.find("solver_iterations")) {
        const std::int64_t n = v->as_int();
        if (n <= 0 || n > 10'000) v->fail("expected 1..10000 iterations, got " + std::to_string(n));
        scene.solver_iterations = static_cast<int>(n);
    }
    if (auto v = world.find("allow_sleeping")) scene.allow_sleeping = v->as_bool();
    if (auto v = world.find("ground")) {
        if (v->is_map()) {
            scene.ground = ground_from(*v);
        } else {
            v->as_choice({"none"});
            scene.ground.reset();
        }
    }

    // Remember where each name came from, so a duplicate names both places.
    std::map<std::string, std::string> seen;
    for (const BodyDescription& b : scene.bodies) seen.emplace(b.name, "the default preset");
    if (auto list = world.find("bodies")) {
        for (const ConfigNode& n : list->elements()) {
            BodyDescription b = body_from(n);
            const ConfigNode name = n.at("name");
            const auto [it, fresh] = seen.emplace(b.name, name.path());
            if (!fresh) name.fail("duplicate body name '" + b.name + "' (first in " + it->second + ")");
            scene.bodies.push_back(std::move(b));
        }
    }

    // Everything validate() checks was checked above at its key; this is the
    // backstop that keeps the promise "the result always builds a world".
    try {
        validate(scene);
    } catch (const Error& e) {
        world.fail(e.what());
    }
    return scene;
}

std::string scene_to_yaml(const SceneDescription& scene)
{
    std::string y = "world:\n  type: bullet\n";
    y += "  gravity: " + vec(scene.gravity) + "\n";
    y += "  solver_iterations: " + std::to_string(scene.solver_iterations) + "\n";
    y += std::string("  allow_sleeping: ") + (scene.allow_sleeping ? "true" : "false") + "\n";
    if (scene.ground) {
        const GroundPlane& g = *scene.ground;
        y += "  ground: {normal: " + vec(g.normal) + ", offset: " + num(g.offset) + ", friction: " +
             num(g.friction) + ", restitution: " + num(g.restitution) + "}\n";
    } else {
        y += "  ground: none\n";
    }
    if (scene.bodies.empty()) return y;
    y += "  bodies:\n";
    for (const BodyDescription& b : scene.bodies) {
        y += "    - {name: " + quoted(b.name) + ", shape: " + to_string(b.shape);
        if (b.shape == Shape::box) {
            y += ", half_extents: " + vec(b.half_extents);
        } else {
            y += ", radius: " + num(b.radius);
        }
        const Quaternion& q = b.pose.orientation;
        y += ", mass: " + num(b.mass) + ", position: " + vec(b.pose.position) + ", orientation: [" + num(q.x) +
             ", " + num(q.y) + ", " + num(q.z) + ", " + num(q.w) + "]";
        y += ", linear_velocity: " + vec(b.linear_velocity) + ", angular_velocity: " + vec(b.angular_velocity);
        y += ", friction: " + num(b.friction) + ", restitution: " + num(b.restitution) + "}\n";
    }
    return y;
}

} // namespace simsync::bullet
