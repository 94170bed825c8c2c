#pragma once
/// @file
/// Reading a SceneDescription from the `world:` section of a scenario YAML file
/// (through simsync::ConfigNode, so every error names file:line:column and the
/// key), and writing one back as YAML.
///
/// The section, with every key optional except `type`:
/// @code{.yaml}
/// world:
///   type: bullet
///   preset: default            # start from default_scene() (100 boxes); bodies below are appended
///   gravity: [0, 0, -9.81]
///   solver_iterations: 10
///   allow_sleeping: true
///   ground: {normal: [0, 0, 1], offset: 0, friction: 0.8, restitution: 0}   # or: ground: none
///   bodies:
///     - {name: crate, shape: box, size: [0.5, 0.5, 0.5], mass: 2, position: [0, 0, 1]}
///     - {name: ball, shape: sphere, radius: 0.1, mass: 0.5, position: [1, 0, 2], yaw: 0.3}
/// @endcode
/// A body: `name` (required, unique), `shape` (box | sphere, required), a box's
/// `size` (full edge lengths) or `half_extents` (one of them required: no
/// default size), a sphere's `radius` (required), `mass` (kg, 0 for static;
/// default 1), `position`, `orientation` ([x, y, z, w]) or `yaw` (radians about
/// z), `linear_velocity`, `angular_velocity`, `friction`, `restitution`. Vectors
/// are lists of three numbers. The error reported is the first in document
/// order (a missing size or radius: when nothing else is wrong).

#include <simsync/bullet/scene.hpp>
#include <simsync/config/config.hpp>

#include <string>

namespace simsync::bullet {

/// The world type name this adapter reads from a scenario (`world.type`).
inline constexpr const char* kWorldType = "bullet";

/// Fills a SceneDescription from a `world:` node whose `type` is `bullet`.
/// Unknown keys are errors (ConfigNode::allow_only), and so is anything
/// validate() would refuse: the result always builds a BulletWorld.
/// @throws simsync::ConfigError naming file:line:column and the key path
///         (e.g. `world.bodies[3].mass`), for every error.
SceneDescription scene_from_config(const ConfigNode& world);

/// Registers the `bullet` world type: load_scenario then checks a `world:`
/// section of type `bullet` with scene_from_config at load time, so a bad scene
/// is reported (file:line:column and key) before a program builds anything.
/// The program still builds the scene from ScenarioConfig::world.
/// @code
/// simsync::ScenarioExtensions extensions;
/// simsync::bullet::register_world_type(extensions);
/// const auto config = simsync::load_scenario_file(path, extensions);
/// const auto scene = config.world ? scene_from_config(*config.world) : default_scene();
/// @endcode
/// @throws simsync::Error (duplicate_name) if `bullet` is registered already.
void register_world_type(ScenarioExtensions& extensions);

/// The scene as the YAML text of a `world:` section (keys indented under
/// `world:`), which scene_from_config reads back into an equal description:
/// numbers are written with 17 significant digits, so doubles round-trip exactly.
std::string scene_to_yaml(const SceneDescription& scene);

} // namespace simsync::bullet
