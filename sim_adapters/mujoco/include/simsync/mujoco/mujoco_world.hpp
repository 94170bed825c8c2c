#pragma once
/// @file
/// MujocoWorld: a MuJoCo model and its data behind simsync::World.

#include <simsync/core/accessor.hpp>
#include <simsync/core/time.hpp>
#include <simsync/core/trajectory_hash.hpp>
#include <simsync/core/world.hpp>

#include <mujoco/mujoco.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace simsync::mujoco {

/// An MJCF (or URDF) model file. Relative paths inside it (meshes, textures,
/// included files) are resolved from its directory, as MuJoCo does.
struct MjcfFile {
    std::string path;
};

/// An MJCF model as text. `name` is what messages call it; the model may not
/// refer to other files (there is no directory to resolve them from).
struct MjcfText {
    std::string xml;
    std::string name = "model.xml";
};

/// A MuJoCo model (mjModel) and its simulation state (mjData), stepped by a
/// SimSyncHandler.
///
/// **One call, one step.** `step(dt)` is exactly one `mj_step`, which advances
/// MuJoCo by the model's `opt.timestep`. The handler's step and the model's
/// timestep must therefore agree: `step` refuses any other `dt` (an Error naming
/// both values), and so does check_step(), which a host calls before it builds
/// the handler (or it builds it with `.step = world.timestep()`). simsync time
/// is integer nanoseconds, so a model whose timestep is not a whole number of
/// nanoseconds (e.g. 1/3 ms) is refused at load.
///
/// **What an access sees.** mjData is MuJoCo's own: qpos, qvel, act and time
/// are the state after the last step; the quantities mj_step derives from a
/// state (xpos, xquat, contacts, sensordata, ...) are those of the state one
/// step earlier, because mj_step computes them before it integrates (MuJoCo's
/// own convention). Nothing here recomputes them, so the trajectory is a plain
/// mj_step loop's, bit for bit: not even mj_kinematics is harmless, since it
/// normalises free and ball joint quaternions in qpos in place (MuJoCo 2.2.2;
/// with it after every step the host's arm.xml leaves the plain loop's
/// trajectory at step 346). A reader that needs the poses of the current state
/// computes them into an mjData of its own (mj_copyData, mj_kinematics).
///
/// **Reads and writes.** A shared access (sensors) reads through view(), which
/// gives a `const MujocoWorld&`: `const mjModel&`, `const mjData&`. An
/// exclusive access (controllers) writes through edit(), which refuses a shared
/// access: `mjData&` (ctrl, qfrc_applied, xfrc_applied, qpos, ...) and
/// `mjModel&` (gravity, gains, ...; `opt.timestep` must stay: step refuses a
/// changed one). What a controller writes acts from the next step on: ctrl and
/// applied forces persist in mjData until written again (MuJoCo does not clear
/// them), unlike Bullet's forces.
///
/// **Hash.** hash_state feeds the exact bytes (mjtNum, double) of qpos, qvel
/// and act (empty for models without stateful actuators) into a
/// TrajectoryHash: equal hashes mean bit-identical states.
///
/// **Errors.** Loading errors are simsync::Error (invalid_argument) naming the
/// model and MuJoCo's message. MuJoCo's warnings (e.g. an unstable simulation,
/// bad qacc: MuJoCo then resets the state) are counted in `data().warning` and
/// printed by MuJoCo's handler; fatal MuJoCo errors (mju_error) end the process
/// as MuJoCo's default handler does: this adapter does not replace the
/// process-wide handlers.
///
/// Copy/move: neither (the handler and accessors hold references to it).
/// Thread safety: as World: `step` by the handler alone, never during an
/// access; `const` members concurrently with each other; non-`const` members
/// alone. mj_step has no thread affinity, so `step` may run on whichever thread
/// the handler chooses (StepThread::any).
///
/// @code
/// simsync::mujoco::MujocoWorld world(simsync::mujoco::MjcfFile{"arm.xml"});
/// simsync::SimSyncHandler handler(world, {.step = world.timestep()});
/// auto controller = handler.register_accessor("controller");   // exclusive
/// simsync::Access a = controller.request_access(simsync::sim_time(10ms));
/// simsync::mujoco::edit(a).data().ctrl[0] = 0.5;
/// @endcode
class MujocoWorld final : public World {
public:
    /// Loads and compiles the model, makes its data at the model's initial state.
    /// @throws simsync::Error (invalid_argument): the file cannot be read or
    ///         compiled (MuJoCo's message, with its line), or its timestep is
    ///         not a positive whole number of nanoseconds.
    explicit MujocoWorld(const MjcfFile& file);
    explicit MujocoWorld(const MjcfText& text);
    ~MujocoWorld() override;
    MujocoWorld(const MujocoWorld&) = delete;
    MujocoWorld& operator=(const MujocoWorld&) = delete;

    /// One mj_step. Called by the handler only.
    /// @throws simsync::Error (invalid_argument) if `dt` is not the model's
    ///         timestep, or the model's opt.timestep was changed since load
    ///         (nothing is stepped then).
    void step(SimDuration dt) override;

    /// The model's opt.timestep, exactly, as simsync time: the handler's step.
    SimDuration timestep() const noexcept;
    /// @throws simsync::Error (invalid_argument) naming both values if
    ///         `handler_step` differs from timestep().
    void check_step(SimDuration handler_step) const;

    const mjModel& model() const noexcept;
    mjModel& model() noexcept;
    const mjData& data() const noexcept;
    mjData& data() noexcept;

    /// The file path, or MjcfText::name.
    const std::string& source() const noexcept;

    /// A body's id (0 is the world body). @throws simsync::Error
    /// (invalid_argument) if no body has that name.
    int body_id(std::string_view name) const;
    std::optional<int> find_body(std::string_view name) const;

    /// Feeds the exact bytes of qpos, qvel and act, in that order, into `hash`.
    void hash_state(TrajectoryHash& hash) const;
    /// FNV-1a of the current state alone (hash_state into a fresh hash).
    std::uint64_t state_hash() const;

    /// Number of `step` calls so far.
    std::uint64_t steps() const noexcept;
    /// steps() * timestep(): the world's clock in simsync time (mjData::time
    /// is MuJoCo's sum of doubles).
    SimTime time() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// The world of any access (shared or exclusive), read-only.
/// @throws simsync::Error (invalid_state) if no access is held; std::bad_cast
///         if the handler's world is not a MujocoWorld.
const MujocoWorld& view(const Access& access);
/// The world of an exclusive access, to write.
/// @throws simsync::Error (invalid_argument) for a shared access (readers run
///         concurrently: a write would race with them); as view() otherwise.
MujocoWorld& edit(const Access& access);

/// MuJoCo's version as MuJoCo reports it (mj_versionString).
std::string version();

} // namespace simsync::mujoco
