#pragma once
/// @file
/// Umbrella header: includes every public simsync header and nothing else.

#include <simsync/accessor.hpp>
#include <simsync/clock_publisher.hpp>
#include <simsync/clock_sink.hpp>
#include <simsync/clock_udp.hpp>
#include <simsync/config.hpp>
#include <simsync/error.hpp>
#include <simsync/event_loop.hpp>
#include <simsync/handler.hpp>
#include <simsync/lateness.hpp>
#include <simsync/operator_commands.hpp>
#include <simsync/pacer.hpp>
#include <simsync/pacing_schedule.hpp>
#include <simsync/periodic_timer.hpp>
#include <simsync/rate_window.hpp>
#include <simsync/schedule.hpp>
#include <simsync/start_signal.hpp>
#include <simsync/time.hpp>
#include <simsync/time_scale.hpp>
#include <simsync/time_source.hpp>
#include <simsync/trajectory_hash.hpp>
#include <simsync/wall_clock.hpp>
#include <simsync/world.hpp>
