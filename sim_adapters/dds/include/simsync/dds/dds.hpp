#pragma once
/// @file
/// Everything of the Cyclone DDS adapter (simsync::dds): domains and participants,
/// QoS, ROS 2 `/clock` (a clock sink and a follower), and its scenario keys.

#include <simsync/dds/domain.hpp>
#include <simsync/dds/qos.hpp>
#include <simsync/dds/ros2_clock.hpp>
#include <simsync/dds/scenario.hpp>
