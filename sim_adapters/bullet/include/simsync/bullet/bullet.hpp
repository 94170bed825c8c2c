#pragma once
/// @file
/// The Bullet adapter of simsync (target simsync::bullet): includes its headers.

#include <simsync/bullet/bullet_world.hpp>
#include <simsync/bullet/scene.hpp>
#include <simsync/bullet/scene_config.hpp>
#include <simsync/bullet/trajectory_hash.hpp>
