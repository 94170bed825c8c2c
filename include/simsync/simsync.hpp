#pragma once
/// @file
/// Umbrella header: includes every public simsync header and nothing else, except
/// core/asio.hpp (the one that includes Boost: include it where asynchronous accessors are used).

#include <simsync/accessors/clock_publisher.hpp>
#include <simsync/accessors/clock_sink.hpp>
#include <simsync/accessors/clock_udp.hpp>
#include <simsync/accessors/lateness.hpp>
#include <simsync/accessors/pacer.hpp>
#include <simsync/accessors/pacing_schedule.hpp>
#include <simsync/accessors/periodic_timer.hpp>
#include <simsync/accessors/rate_window.hpp>
#include <simsync/accessors/start_signal.hpp>
#include <simsync/clock/event_loop.hpp>
#include <simsync/clock/time_scale.hpp>
#include <simsync/clock/time_source.hpp>
#include <simsync/clock/wall_clock.hpp>
#include <simsync/config/config.hpp>
#include <simsync/core/accessor.hpp>
#include <simsync/core/error.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/core/schedule.hpp>
#include <simsync/core/time.hpp>
#include <simsync/core/trajectory_hash.hpp>
#include <simsync/core/world.hpp>
#include <simsync/operator/operator_commands.hpp>
