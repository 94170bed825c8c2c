// The payloads of simsync-mujoco-host's remote controller (arm_wire.hpp): the
// ctrl computed from a decoded observation is the in-process control()'s, bit
// for bit, along a run of the arm; a payload of another model's sizes is
// refused by name.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "arm_controller.hpp"
#include "arm_wire.hpp"
#include "embedded_model.hpp"

#include <simsync/mujoco/mujoco.hpp>

#include <cstring>
#include <vector>

namespace {

namespace host = simsync::examples::host;
namespace mh = simsync::examples::mujoco_host;
using simsync::mujoco::MujocoWorld;

MujocoWorld arm() { return MujocoWorld(simsync::mujoco::MjcfText{mh::kEmbeddedModel, "arm.xml"}); }

} // namespace

TEST_CASE("MujocoHost.ArmWire.RemoteCtrlIsTheInProcessControlBitForBit")
{
    MujocoWorld host_world(simsync::mujoco::MjcfText{mh::kEmbeddedModel, "arm.xml"});
    MujocoWorld controller_world(simsync::mujoco::MjcfText{mh::kEmbeddedModel, "arm.xml"}); // its scratch mjData
    const mjModel& m = host_world.model();
    const host::WireFormat format = mh::arm_wire(m);
    REQUIRE(m.nu > 0);
    CHECK(format.observation_values == static_cast<std::size_t>(1 + m.nq + m.nv));
    CHECK(format.command_values == static_cast<std::size_t>(m.nu));
    const simsync::SimTime end{std::chrono::seconds(2)};
    int ticks = 0;
    for (int k = 0; k < 2000; ++k) {
        if (k % 10 == 0) {
            const simsync::SimTime t{std::chrono::milliseconds(k)};
            // Host -> controller.
            const std::vector<std::uint8_t> sent = host::encode(
                format, host::ObservationFrame{.granted = t, .end = end, .final = false, .flags = 0,
                                               .values = mh::arm_observation(m, host_world.data())});
            CHECK(sent.size() == format.observation_size());
            const auto observation = host::decode_observation(format, sent);
            REQUIRE(observation);
            // Controller -> host.
            const std::vector<double> ctrl =
                mh::arm_command(controller_world.model(), controller_world.data(), observation.value->values);
            const std::vector<std::uint8_t> back = host::encode(format, host::CommandFrame{t, ctrl});
            const host::CommandVerdict verdict = host::accept_command(format, t, false, back);
            REQUIRE(verdict.command);
            // The in-process controller on the host's own data.
            mh::control(m, host_world.data());
            REQUIRE(verdict.command->values.size() == static_cast<std::size_t>(m.nu));
            CHECK(std::memcmp(verdict.command->values.data(), host_world.data().ctrl, sizeof(double) * m.nu) == 0);
            ++ticks;
        }
        host_world.step(host_world.timestep());
    }
    CHECK(ticks == 200);
    // The run moved the arm, so the comparison covered more than the rest state.
    CHECK(host_world.data().qvel[0] != 0.0);
}

TEST_CASE("MujocoHost.ArmWire.AnotherModelsSizesAreRefusedAsWrongSize")
{
    MujocoWorld world = arm();
    const host::WireFormat format = mh::arm_wire(world.model());
    host::WireFormat other = format;
    other.observation_values += 1; // one more joint coordinate
    other.command_values += 1;     // one more actuator
    const std::vector<std::uint8_t> observation = host::encode(
        other, host::ObservationFrame{.granted = {}, .end = {}, .final = false, .flags = 0,
                                      .values = std::vector<double>(other.observation_values, 0.5)});
    const auto decoded = host::decode_observation(format, observation);
    REQUIRE_FALSE(decoded);
    CHECK(decoded.error == host::WireError::wrong_size);
    const std::vector<std::uint8_t> command =
        host::encode(other, host::CommandFrame{{}, std::vector<double>(other.command_values, 0.5)});
    const host::CommandVerdict verdict = host::accept_command(format, {}, false, command);
    CHECK_FALSE(verdict.command);
    REQUIRE(verdict.refused);
    CHECK(*verdict.refused == host::WireError::wrong_size);
    // The Bullet host's payload (another magic) is named as foreign.
    host::WireFormat bullet = format;
    bullet.magic = {'S', 'S', 'B', 'C'};
    const auto foreign = host::decode_observation(
        format, host::encode(bullet, host::ObservationFrame{.granted = {}, .end = {}, .final = false, .flags = 0,
                                                            .values = std::vector<double>(format.observation_values)}));
    CHECK(foreign.error == host::WireError::bad_magic);
}
