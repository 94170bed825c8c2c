#pragma once
/// @file
/// The trajectory hash under its Bullet adapter name: the hash itself is the
/// core's (simsync/core/trajectory_hash.hpp), shared by every engine adapter.

#include <simsync/core/trajectory_hash.hpp>

namespace simsync::bullet {

using simsync::TrajectoryHash;
using simsync::to_hex;

} // namespace simsync::bullet
