#include <simsync/mujoco/mujoco_world.hpp>

#include <simsync/core/error.hpp>

#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

namespace simsync::mujoco {

namespace {

// The shortest text that reads back as the same double: what a user would
// write in the model (0.002, not 0.0020000000000000000416).
std::string shortest(double value)
{
    char text[32];
    const auto result = std::to_chars(text, text + sizeof text, value);
    return {text, result.ptr};
}

struct ModelDeleter {
    void operator()(mjModel* m) const noexcept { mj_deleteModel(m); }
};
struct DataDeleter {
    void operator()(mjData* d) const noexcept { mj_deleteData(d); }
};
struct VfsDeleter {
    void operator()(mjVFS* vfs) const noexcept
    {
        mj_deleteVFS(vfs);
        delete vfs;
    }
};

std::unique_ptr<mjModel, ModelDeleter> load(const std::string& path, const mjVFS* vfs, const std::string& source)
{
    char error[1000] = "";
    std::unique_ptr<mjModel, ModelDeleter> model(mj_loadXML(path.c_str(), vfs, error, sizeof error));
    if (!model) {
        throw Error(errc::invalid_argument, "MujocoWorld: cannot load the model '" + source + "': " +
                                                (error[0] != '\0' ? std::string(error) : "MuJoCo gave no reason"));
    }
    return model;
}

} // namespace

struct MujocoWorld::Impl {
    std::string source;
    std::unique_ptr<mjModel, ModelDeleter> model;
    std::unique_ptr<mjData, DataDeleter> data;
    // The model's timestep as loaded, and the same in simsync time: step()
    // compares the model's current value with it (one double compare), so a
    // timestep changed through model() is refused instead of silently
    // advancing MuJoCo by something else than the handler's step.
    double timestep_seconds = 0;
    SimDuration timestep{0};
    std::uint64_t steps = 0;

    void init(std::unique_ptr<mjModel, ModelDeleter> loaded)
    {
        model = std::move(loaded);
        timestep_seconds = model->opt.timestep;
        const double ns = std::round(timestep_seconds * 1e9);
        // Integer nanoseconds on simsync's side, MuJoCo's double on the other:
        // they agree only if the double is exactly what the integer reads back as.
        if (!(timestep_seconds > 0) || ns > 1e18 || static_cast<double>(static_cast<std::int64_t>(ns)) / 1e9 != timestep_seconds) {
            throw Error(errc::invalid_argument, "MujocoWorld: the model '" + source + "' has opt.timestep " +
                                                    shortest(timestep_seconds) +
                                                    " s, which is not a positive whole number of nanoseconds "
                                                    "(simsync time is integer nanoseconds; e.g. 0.002 is)");
        }
        timestep = SimDuration{static_cast<std::int64_t>(ns)};
        data.reset(mj_makeData(model.get()));
        if (!data) throw Error(errc::invalid_argument, "MujocoWorld: mj_makeData failed for the model '" + source + "'");
    }

    std::string mismatch(SimDuration handler_step) const
    {
        return "MujocoWorld '" + source + "': the handler's step is " + format_seconds(handler_step) +
               " s but the model's opt.timestep is " + shortest(timestep_seconds) +
               " s; they must agree (one step is one mj_step): build the handler with .step = world.timestep(), "
               "or set <option timestep=\"" + shortest(static_cast<double>(handler_step.count()) / 1e9) +
               "\"/> in the model";
    }
};

MujocoWorld::MujocoWorld(const MjcfFile& file) : impl_(std::make_unique<Impl>())
{
    impl_->source = file.path;
    if (file.path.empty()) throw Error(errc::invalid_argument, "MujocoWorld: the model file path is empty");
    impl_->init(load(file.path, nullptr, file.path));
}

MujocoWorld::MujocoWorld(const MjcfText& text) : impl_(std::make_unique<Impl>())
{
    impl_->source = text.name;
    if (text.name.empty() || text.name.find('/') != std::string::npos) {
        throw Error(errc::invalid_argument, "MujocoWorld: MjcfText::name must be a file name without '/', got '" +
                                                text.name + "'");
    }
    // MuJoCo reads a model from memory through its virtual file system: one
    // file holding the text. mjVFS is large (2000 names of 1000 bytes): heap.
    std::unique_ptr<mjVFS, VfsDeleter> vfs(new mjVFS);
    mj_defaultVFS(vfs.get());
    if (text.xml.size() > static_cast<std::size_t>(INT32_MAX) ||
        mj_makeEmptyFileVFS(vfs.get(), text.name.c_str(), static_cast<int>(text.xml.size())) != 0) {
        throw Error(errc::invalid_argument, "MujocoWorld: cannot hold the model '" + text.name + "' in memory");
    }
    const int index = mj_findFileVFS(vfs.get(), text.name.c_str());
    std::memcpy(vfs->filedata[index], text.xml.data(), text.xml.size());
    impl_->init(load(text.name, vfs.get(), text.name));
}

MujocoWorld::~MujocoWorld() = default;

void MujocoWorld::step(SimDuration dt)
{
    Impl& s = *impl_;
    if (dt != s.timestep) throw Error(errc::invalid_argument, s.mismatch(dt));
    if (s.model->opt.timestep != s.timestep_seconds) {
        throw Error(errc::invalid_argument, "MujocoWorld '" + s.source + "': the model's opt.timestep was changed to " +
                                                shortest(s.model->opt.timestep) + " s after load (it was " +
                                                shortest(s.timestep_seconds) +
                                                " s, the handler's step); one step must stay one handler step");
    }
    mj_step(s.model.get(), s.data.get());
    ++s.steps;
}

SimDuration MujocoWorld::timestep() const noexcept { return impl_->timestep; }

void MujocoWorld::check_step(SimDuration handler_step) const
{
    if (handler_step != impl_->timestep) throw Error(errc::invalid_argument, impl_->mismatch(handler_step));
}

const mjModel& MujocoWorld::model() const noexcept { return *impl_->model; }
mjModel& MujocoWorld::model() noexcept { return *impl_->model; }
const mjData& MujocoWorld::data() const noexcept { return *impl_->data; }
mjData& MujocoWorld::data() noexcept { return *impl_->data; }
const std::string& MujocoWorld::source() const noexcept { return impl_->source; }

std::optional<int> MujocoWorld::find_body(std::string_view name) const
{
    const int id = mj_name2id(impl_->model.get(), mjOBJ_BODY, std::string(name).c_str());
    if (id < 0) return std::nullopt;
    return id;
}

int MujocoWorld::body_id(std::string_view name) const
{
    if (auto id = find_body(name)) return *id;
    throw Error(errc::invalid_argument, "MujocoWorld '" + impl_->source + "': no body named '" + std::string(name) + "'");
}

void MujocoWorld::hash_state(TrajectoryHash& hash) const
{
    const mjModel& m = *impl_->model;
    const mjData& d = *impl_->data;
    hash.add_bytes(d.qpos, sizeof(mjtNum) * static_cast<std::size_t>(m.nq));
    hash.add_bytes(d.qvel, sizeof(mjtNum) * static_cast<std::size_t>(m.nv));
    hash.add_bytes(d.act, sizeof(mjtNum) * static_cast<std::size_t>(m.na));
}

std::uint64_t MujocoWorld::state_hash() const
{
    TrajectoryHash hash;
    hash_state(hash);
    return hash.value();
}

std::uint64_t MujocoWorld::steps() const noexcept { return impl_->steps; }

SimTime MujocoWorld::time() const noexcept
{
    return SimTime{SimDuration{static_cast<std::int64_t>(impl_->steps) * impl_->timestep.count()}};
}

const MujocoWorld& view(const Access& access) { return access.world_as<const MujocoWorld>(); }

MujocoWorld& edit(const Access& access)
{
    if (access && access.mode() != AccessMode::exclusive) {
        throw Error(errc::invalid_argument, "simsync::mujoco::edit: a shared access may only read the world "
                                            "(view); writing needs an exclusive access");
    }
    return access.world_as<MujocoWorld>();
}

std::string version() { return mj_versionString(); }

} // namespace simsync::mujoco
