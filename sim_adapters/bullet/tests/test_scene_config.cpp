// Scenes from YAML: a description survives writing and reading back, a scenario
// file's world section builds the scene it says, and every error names the file,
// line, column and key.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <simsync/bullet/bullet.hpp>
#include <simsync/config/config.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sb = simsync::bullet;

namespace {

sb::SceneDescription read_world(const std::string& yaml)
{
    return sb::scene_from_config(simsync::ConfigNode::parse(yaml, "scene.yaml").at("world"));
}

} // namespace

TEST_CASE("SceneConfig.RoundTrip.DefaultSceneIsReadBackEqual")
{
    const sb::SceneDescription scene = sb::default_scene();
    const std::string yaml = sb::scene_to_yaml(scene);
    CHECK(read_world(yaml) == scene);
    // And the preset names the same scene in one line.
    CHECK(read_world("world: {type: bullet, preset: default}") == scene);
}

TEST_CASE("SceneConfig.RoundTrip.EveryFieldSurvives")
{
    sb::BodyDescription ball;
    ball.name = "odd \"name\" \\ with: yaml";
    ball.shape = sb::Shape::sphere;
    ball.radius = 0.1 / 3;
    ball.mass = 0.7;
    ball.pose = {.position = {1.0 / 3, -2.5e-7, 12345.678901234567}, .orientation = {0.1, 0.2, 0.3, 0.9}};
    ball.linear_velocity = {0.1, -0.2, 0.3};
    ball.angular_velocity = {-1e-3, 2e3, 0};
    ball.friction = 0.25;
    ball.restitution = 0.75;
    const sb::SceneDescription scene = sb::SceneBuilder{}
                                           .gravity({0.5, -1.0 / 7, -9.80665})
                                           .no_ground()
                                           .solver_iterations(17)
                                           .allow_sleeping(false)
                                           .box("anchor", {1, 2, 3}, 0.0, {.position = {0, 0, -3}})
                                           .body(ball)
                                           .build();
    CHECK(read_world(sb::scene_to_yaml(scene)) == scene);

    sb::SceneDescription grounded = scene;
    grounded.ground = sb::GroundPlane{.normal = {0, 0.1, 1}, .offset = -0.5, .friction = 0.3, .restitution = 0.2};
    CHECK(read_world(sb::scene_to_yaml(grounded)) == grounded);
}

simsync::ScenarioExtensions bullet_extensions()
{
    simsync::ScenarioExtensions extensions;
    sb::register_world_type(extensions);
    return extensions;
}

TEST_CASE("SceneConfig.Scenario.WorldSectionBuildsTheScene")
{
    const simsync::ScenarioConfig cfg = simsync::load_scenario_string(R"(handler:
  step: 1ms
world:
  type: bullet
  gravity: [0, 0, -1.62]
  ground: {friction: 0.4}
  bodies:
    - {name: crate, shape: box, size: [0.5, 1, 2], mass: 2, position: [0, 0, 1], yaw: 0.5}
    - name: ball
      shape: sphere
      radius: 0.1
      position: [1, 0, 2]
)",
                                                                       "moon.yaml", bullet_extensions());
    REQUIRE(cfg.world);
    CHECK(cfg.world_type == "bullet");
    const sb::SceneDescription scene = sb::scene_from_config(*cfg.world);
    CHECK(scene.gravity == sb::Vec3{0, 0, -1.62});
    REQUIRE(scene.ground);
    CHECK(scene.ground->friction == 0.4);
    REQUIRE(scene.bodies.size() == 2);
    CHECK(scene.bodies[0].half_extents == sb::Vec3{0.25, 0.5, 1});
    CHECK(scene.bodies[0].mass == 2);
    CHECK(scene.bodies[0].pose.orientation == sb::Quaternion::from_yaw(0.5));
    CHECK(scene.bodies[1].shape == sb::Shape::sphere);
    CHECK(scene.bodies[1].radius == 0.1);
    CHECK(scene.bodies[1].mass == 1.0); // the default
    sb::BulletWorld world(scene);
    CHECK(world.body_index("ball") == 1);
}

TEST_CASE("SceneConfig.Errors.NameFileLineColumnAndKey")
{
    struct Row {
        const char* what;
        const char* yaml;
        int line;
        int column;
        const char* key;
        const char* message;
    };
    const Row rows[] = {
        {"unknown key in a body", R"(world:
  type: bullet
  bodies:
    - {name: a, shape: box, size: [1, 1, 1], mass: 1}
    - {name: b, shape: box, colour: red}
)",
         5, 29, "world.bodies[1].colour", "unknown key"},
        {"negative mass", R"(world:
  type: bullet
  bodies:
    - name: a
      shape: sphere
      mass: -1
)",
         6, 13, "world.bodies[0].mass", "expected a number >= 0"},
        {"duplicate name", R"(world:
  type: bullet
  bodies:
    - {name: a, shape: box, size: [1, 1, 1]}
    - {name: a, shape: sphere, radius: 1}
)",
         5, 14, "world.bodies[1].name", "duplicate body name 'a' (first in world.bodies[0].name)"},
        {"box with a radius", R"(world:
  type: bullet
  bodies: [{name: a, shape: box, radius: 1}]
)",
         3, 42, "world.bodies[0].radius", "a box has no radius"},
        {"vector of two", R"(world:
  type: bullet
  gravity: [0, -9.81]
)",
         3, 12, "world.gravity", "three numbers"},
        {"not bullet", R"(world:
  type: bouncing_balls
)",
         2, 9, "world.type", "reads world type 'bullet'"},
        // The first error in document order (before: the unknown key, checked first).
        {"bad size before an unknown key", R"(world:
  type: bullet
  bodies:
    - {name: a, shape: box, size: [1, 0, 1], colour: red}
)",
         4, 35, "world.bodies[0].size", "every edge length must be > 0"},
        {"unknown key before a bad size", R"(world:
  type: bullet
  bodies:
    - {name: a, colour: red, shape: box, size: [1, 0, 1]}
)",
         4, 17, "world.bodies[0].colour", "unknown key"},
        // No default extent (before: a box without size loaded as a 1 m cube, said nowhere).
        {"box without size", R"(world:
  type: bullet
  bodies:
    - {name: a, shape: box, mass: 1}
)",
         4, 7, "world.bodies[0]", "a box needs size (full edge lengths) or half_extents"},
        {"sphere without radius", R"(world:
  type: bullet
  bodies: [{name: a, shape: sphere}]
)",
         3, 12, "world.bodies[0]", "a sphere needs radius"},
        // A misspelt size is named, not the size it leaves missing.
        {"misspelt size", R"(world:
  type: bullet
  bodies:
    - {name: a, shape: box, sizes: [1, 1, 1]}
)",
         4, 29, "world.bodies[0].sizes", "unknown key"},
    };
    for (const Row& row : rows) {
        const std::string case_name = row.what;
        CAPTURE(case_name);
        try {
            read_world(row.yaml);
            FAIL("no error");
        } catch (const simsync::ConfigError& e) {
            const std::string message = e.what();
            CAPTURE(message);
            CHECK(e.file() == "scene.yaml");
            CHECK(e.line() == row.line);
            CHECK(e.column() == row.column);
            CHECK(e.key() == row.key);
            CHECK(std::string(e.what()).find(row.message) != std::string::npos);
        }
    }
}

TEST_CASE("SceneConfig.Scenario.RegisteredWorldTypeIsCheckedAtLoad")
{
    // Without the registration the core does not know the type at all.
    CHECK_THROWS_AS(simsync::load_scenario_string("world: {type: bullet}\n", "w.yaml"), simsync::ConfigError);
    // With it, a bad scene fails load_scenario itself, at its place.
    try {
        simsync::load_scenario_string("handler: {step: 1ms}\nworld:\n  type: bullet\n  bodies:\n    - {name: a, shape: sphere, radius: -2}\n",
                                      "w.yaml", bullet_extensions());
        FAIL("no error");
    } catch (const simsync::ConfigError& e) {
        CAPTURE(std::string(e.what()));
        CHECK(e.key() == "world.bodies[0].radius");
        CHECK(e.line() == 5);
        CHECK(e.column() == 40);
    }
    simsync::ScenarioExtensions twice = bullet_extensions();
    CHECK_THROWS_AS(sb::register_world_type(twice), simsync::Error);
}

namespace {

std::string read_text(const std::string& path)
{
    std::ifstream in(path);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The ```yaml blocks of a Markdown page, in order.
std::vector<std::string> yaml_blocks(const std::string& page)
{
    std::vector<std::string> blocks;
    for (std::size_t at = 0; (at = page.find("```yaml\n", at)) != std::string::npos;) {
        at += 8;
        const std::size_t end = page.find("```", at);
        REQUIRE(end != std::string::npos);
        blocks.push_back(page.substr(at, end - at));
        at = end + 3;
    }
    return blocks;
}

} // namespace

TEST_CASE("SceneConfig.Docs.TheReadmeYamlLoadsAndItsMoonScenarioIsTheFile")
{
    // Before: the README's copy of moon_scenario.yaml showed 2 bodies where the
    // file has 3; nothing compared them.
    const std::vector<std::string> blocks = yaml_blocks(read_text(SIMSYNC_BULLET_README));
    REQUIRE(blocks.size() >= 2);
    simsync::ScenarioExtensions extensions;
    sb::register_world_type(extensions);
    for (const std::string& yaml : blocks) {
        CAPTURE(yaml);
        CHECK_NOTHROW(simsync::load_scenario_string(yaml, "sim_adapters/bullet/README.md", extensions));
    }
    const std::string moon = read_text(SIMSYNC_MOON_SCENARIO);
    bool copied = false;
    for (const std::string& yaml : blocks) copied = copied || yaml == moon;
    CHECK_MESSAGE(copied, "the README has no block equal to examples/bullet_host/moon_scenario.yaml");
}
