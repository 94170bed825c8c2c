#pragma once
/// @file
/// Umbrella header of the web console adapter (simsync::web): includes its
/// public headers and nothing else.

#include <simsync/web/console.hpp>
#include <simsync/web/scenario.hpp>
#include <simsync/web/scene.hpp>
#include <simsync/web/timeline.hpp>
