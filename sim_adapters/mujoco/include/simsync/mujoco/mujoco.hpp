#pragma once
/// @file
/// Umbrella header of the MuJoCo adapter (simsync::mujoco).
#include <simsync/mujoco/mujoco_world.hpp>
