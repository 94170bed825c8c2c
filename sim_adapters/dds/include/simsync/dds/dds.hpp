#pragma once
/// @file
/// Everything of the Cyclone DDS adapter (simsync::dds): domains and participants,
/// QoS, ROS 2 `/clock` (a clock sink and a follower), remote participants (the
/// host's Bridge, the participant's RemoteAccessor, their messages), and its
/// scenario keys.

#include <simsync/dds/domain.hpp>
#include <simsync/dds/bridge.hpp>
#include <simsync/dds/qos.hpp>
#include <simsync/dds/remote_accessor.hpp>
#include <simsync/dds/remote_messages.hpp>
#include <simsync/dds/ros2_clock.hpp>
#include <simsync/dds/scenario.hpp>
