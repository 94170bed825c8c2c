#pragma once
/// @file
/// Umbrella header: includes every public simsync header and nothing else.

#include <simsync/accessor.hpp>
#include <simsync/error.hpp>
#include <simsync/handler.hpp>
#include <simsync/time.hpp>
#include <simsync/world.hpp>
#include <simsync/wall_clock.hpp>
#include <simsync/time_scale.hpp>
#include <simsync/time_source.hpp>
#include <simsync/clock_publisher.hpp>
