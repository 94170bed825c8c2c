// Worlds: the World base a Python class may derive from, the counting world,
// the MuJoCo world (when its adapter is built), and the views of them that an
// Access hands out.
#include "common.hpp"

#include <pybind11/numpy.h>

#ifdef SIMSYNC_PYTHON_MUJOCO
#include <simsync/mujoco/mujoco.hpp>
#endif
#ifdef SIMSYNC_PYTHON_BULLET
#include <simsync/bullet/bullet.hpp>
#endif

namespace simsync::python {
namespace {

// A World written in Python: the handler calls step(dt_ns) with the GIL taken
// for the call.
class PyWorld : public World {
public:
    void step(SimDuration dt) override
    {
        py::gil_scoped_acquire gil;
        py::function override = py::get_override(static_cast<const World*>(this), "step");
        if (!override) throw Error(errc::invalid_state, "simsync.World subclass does not define step(dt)");
        try {
            override(dt.count());
        } catch (py::error_already_set& e) {
            // Kept as text: the handler holds the exception beyond this call,
            // on threads that do not hold the GIL.
            throw std::runtime_error(std::string("World.step raised ") + e.what());
        }
    }
};

// Checks made by every view before it touches the world.
void check_held(const AccessCell& cell)
{
    if (!cell.held()) {
        invalid_state("the access this view of the world came from is released (or revoked): "
                      "the world is not reachable through it any more");
    }
}
void check_writable(AccessCell& cell, const char* field)
{
    check_held(cell);
    if (cell.get()->mode() != AccessMode::exclusive) {
        invalid_state(std::string("cannot write ") + field + " in a shared (read-only) access");
    }
}

struct CountingView {
    std::shared_ptr<AccessCell> cell;
    CountingWorld* world;
};

#ifdef SIMSYNC_PYTHON_MUJOCO
struct MujocoView {
    std::shared_ptr<AccessCell> cell;
    mujoco::MujocoWorld* world;
};

// A read-only copy of `n` doubles: never a view into mjData, so nothing
// obtained in an access can reach the world after it.
py::array_t<double> copy_of(const mjtNum* data, int n)
{
    py::array_t<double> out(static_cast<py::ssize_t>(n));
    std::copy(data, data + n, out.mutable_data());
    out.attr("setflags")(py::arg("write") = false);
    return out;
}

void assign(MujocoView& view, mjtNum* (*field)(mjData&), int (*size)(const mjModel&), const char* name,
            const py::handle& value)
{
    check_writable(*view.cell, name);
    auto array = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(value);
    if (!array) invalid_argument(std::string(name) + " must be a sequence of numbers");
    const int n = size(view.world->model());
    if (array.ndim() != 1 || array.shape(0) != n) {
        invalid_argument(std::string(name) + " must have shape (" + std::to_string(n) + ",), got " +
                         std::string(py::str(py::getattr(array, "shape"))));
    }
    std::copy(array.data(), array.data() + n, field(view.world->data()));
}
#endif

#ifdef SIMSYNC_PYTHON_BULLET
struct BulletView {
    std::shared_ptr<AccessCell> cell;
    bullet::BulletWorld* world;
};

bullet::Vec3 vec3_arg(py::handle value, const char* field)
{
    auto seq = py::reinterpret_borrow<py::object>(value);
    if (!py::isinstance<py::sequence>(seq) || py::len(seq) != 3) {
        invalid_argument(std::string(field) + " must be 3 numbers (x, y, z), got " + std::string(py::str(py::repr(value))));
    }
    py::sequence s = seq;
    return {py::cast<double>(s[0]), py::cast<double>(s[1]), py::cast<double>(s[2])};
}

bullet::BodyIndex body_arg(const bullet::BulletWorld& world, py::handle body)
{
    if (py::isinstance<py::str>(body)) return world.body_index(py::cast<std::string>(body));
    const std::int64_t index = int_ns(body, "body");
    if (index < 0 || static_cast<std::size_t>(index) >= world.body_count()) {
        invalid_argument("body index " + std::to_string(index) + " is out of range (" +
                         std::to_string(world.body_count()) + " bodies)");
    }
    return static_cast<bullet::BodyIndex>(index);
}

template <class F>
py::array_t<double> per_body(const bullet::BulletWorld& world, int columns, F&& fill)
{
    const auto n = static_cast<py::ssize_t>(world.body_count());
    py::array_t<double> out({n, static_cast<py::ssize_t>(columns)});
    auto rows = out.mutable_unchecked<2>();
    for (py::ssize_t i = 0; i < n; ++i) fill(static_cast<bullet::BodyIndex>(i), &rows(i, 0));
    out.attr("setflags")(py::arg("write") = false);
    return out;
}
#endif

} // namespace

World& world_ref(py::handle world)
{
    try {
        return py::cast<World&>(world);
    } catch (const py::cast_error&) {
        invalid_argument("world must be a simsync.World (CountingWorld, MujocoWorld or a subclass of World), got " +
                         std::string(py::str(py::repr(world))));
    }
}

py::object world_view(py::object world, const std::shared_ptr<AccessCell>& cell)
{
    World& w = world_ref(world);
    if (auto* counting = dynamic_cast<CountingWorld*>(&w)) return py::cast(CountingView{cell, counting});
#ifdef SIMSYNC_PYTHON_MUJOCO
    if (auto* mj = dynamic_cast<mujoco::MujocoWorld*>(&w)) return py::cast(MujocoView{cell, mj});
#endif
#ifdef SIMSYNC_PYTHON_BULLET
    if (auto* bw = dynamic_cast<bullet::BulletWorld*>(&w)) return py::cast(BulletView{cell, bw});
#endif
    return world; // a world written in Python: the object itself
}

void bind_worlds(py::module_& m)
{
    py::class_<World, PyWorld>(m, "World", R"(What a Handler steps. Derive from it in Python and define ``step(self, dt)``.

Call sequence (the handler guarantees it): ``step(dt)`` is called only by the handler,
always with its fixed dt (int ns); never two steps at once and never while an access
is held, so a step needs no locking. It runs on whichever thread makes the next grant
possible (or the host thread in Handler.run() with step_thread="host"), with the GIL
taken for the call. If it raises, the handler stops; pending requests are refused with
Refusal.world_failed and Handler.failure() tells why.)")
        .def(py::init<>());

    py::class_<CountingWorld, World>(m, "CountingWorld", R"(A trivial world: counts its steps and the time they add up to,
and carries one int ``value`` that accessors read (any access) and write (exclusive).

``steps`` and ``time`` may be read from any thread at any time (atomic counters);
``value`` only through ``access.world`` inside an access.)")
        .def(py::init<>())
        .def_property_readonly("steps", &CountingWorld::steps, "Number of step calls so far.")
        .def_property_readonly(
            "time", [](const CountingWorld& w) { return ns(w.time()); }, "Sum of the dt of all steps (ns).");

    py::class_<CountingView>(m, "CountingWorldView",
                             "The counting world as an Access sees it: valid only while that access is held "
                             "(afterwards every attribute raises InvalidState).")
        .def_property(
            "value",
            [](const CountingView& v) {
                check_held(*v.cell);
                return v.world->value;
            },
            [](CountingView& v, py::handle value) {
                check_writable(*v.cell, "value");
                v.world->value = int_ns(value, "value");
            },
            "The world's value: read in any access, written in an exclusive one.")
        .def_property_readonly("steps", [](const CountingView& v) {
            check_held(*v.cell);
            return v.world->steps();
        })
        .def_property_readonly("time", [](const CountingView& v) {
            check_held(*v.cell);
            return ns(v.world->time());
        });

#ifdef SIMSYNC_PYTHON_MUJOCO
    m.attr("HAVE_MUJOCO") = true;
    py::class_<mujoco::MujocoWorld, World>(m, "MujocoWorld", R"(A MuJoCo model as a simsync world (the mujoco adapter).

``MujocoWorld(xml=...)`` compiles MJCF text, ``MujocoWorld(path=...)`` loads a file.
One step is one mj_step: make the handler with ``step=world.timestep``. Raises
InvalidArgument if the model cannot be compiled (MuJoCo's message) or its timestep is
not a whole number of nanoseconds.

Inside an access, ``access.world`` is a MujocoWorldView whose arrays (qpos, qvel,
ctrl, act, sensordata) are read-only numpy *copies*: an array obtained in an access
never reaches the world after it. Write by assignment (``view.ctrl = [...]``), which
needs an exclusive access that is still held (InvalidState otherwise).)")
        .def(py::init([](std::optional<std::string> xml, std::optional<std::string> path) {
                 if (xml.has_value() == path.has_value()) invalid_argument("MujocoWorld: give exactly one of xml= and path=");
                 if (xml) return std::make_unique<mujoco::MujocoWorld>(mujoco::MjcfText{*xml});
                 return std::make_unique<mujoco::MujocoWorld>(mujoco::MjcfFile{*path});
             }),
             py::kw_only(), py::arg("xml") = py::none(), py::arg("path") = py::none())
        .def_property_readonly(
            "timestep", [](const mujoco::MujocoWorld& w) { return ns(w.timestep()); },
            "The model's opt.timestep in ns: the handler's step.")
        .def_property_readonly("steps", &mujoco::MujocoWorld::steps)
        .def_property_readonly("nq", [](const mujoco::MujocoWorld& w) { return w.model().nq; })
        .def_property_readonly("nv", [](const mujoco::MujocoWorld& w) { return w.model().nv; })
        .def_property_readonly("nu", [](const mujoco::MujocoWorld& w) { return w.model().nu; });

    auto getter = [](mjtNum* mjData::*field, int mjModel::*size) {
        return [field, size](const MujocoView& v) {
            check_held(*v.cell);
            return copy_of(v.world->data().*field, v.world->model().*size);
        };
    };
    py::class_<MujocoView>(m, "MujocoWorldView",
                           "A MuJoCo world as an Access sees it. Arrays are read-only copies; assignments write "
                           "the world (exclusive access only). Every member raises InvalidState once the access "
                           "is released.")
        .def_property(
            "qpos", getter(&mjData::qpos, &mjModel::nq),
            [](MujocoView& v, py::handle value) {
                assign(v, [](mjData& d) { return d.qpos; }, [](const mjModel& model) { return model.nq; }, "qpos", value);
            },
            "Joint positions (nq,).")
        .def_property(
            "qvel", getter(&mjData::qvel, &mjModel::nv),
            [](MujocoView& v, py::handle value) {
                assign(v, [](mjData& d) { return d.qvel; }, [](const mjModel& model) { return model.nv; }, "qvel", value);
            },
            "Joint velocities (nv,).")
        .def_property(
            "ctrl", getter(&mjData::ctrl, &mjModel::nu),
            [](MujocoView& v, py::handle value) {
                assign(v, [](mjData& d) { return d.ctrl; }, [](const mjModel& model) { return model.nu; }, "ctrl", value);
            },
            "Controls (nu,); they act from the next step on and persist until written again.")
        .def_property_readonly("act", getter(&mjData::act, &mjModel::na), "Actuator activations (na,).")
        .def_property_readonly("sensordata", getter(&mjData::sensordata, &mjModel::nsensordata),
                               "Sensor readings (nsensordata,).")
        .def_property_readonly(
            "time",
            [](const MujocoView& v) {
                check_held(*v.cell);
                return ns(v.world->time());
            },
            "The world's time (ns): the access's granted time.")
        .def_property_readonly(
            "state_hash",
            [](const MujocoView& v) {
                check_held(*v.cell);
                return v.world->state_hash();
            },
            "The trajectory hash of the current state (as the mujoco host prints it).");
#else
    m.attr("HAVE_MUJOCO") = false;
#endif

#ifdef SIMSYNC_PYTHON_BULLET
    m.attr("HAVE_BULLET") = true;
    py::class_<bullet::BulletWorld, World>(m, "BulletWorld", R"(A Bullet scene as a simsync world (the bullet adapter).

``BulletWorld(bodies, gravity=(0, 0, -9.81), ground=True)``; each body a dict: name,
shape ("box" or "sphere"), half_extents (x, y, z) or radius, mass (0: static), position
(x, y, z), yaw (radians), linear_velocity, angular_velocity, friction, restitution.
Raises InvalidArgument naming the body and field. Inside an access, ``access.world`` is
a BulletWorldView: per-body arrays are read-only copies; writes are its methods, which
need an exclusive access that is still held.)")
        .def(py::init([](py::list bodies, py::handle gravity, bool ground) {
                 bullet::SceneDescription scene;
                 scene.gravity = vec3_arg(gravity, "gravity");
                 if (!ground) scene.ground.reset();
                 for (py::handle item : bodies) {
                     py::dict d = py::reinterpret_borrow<py::dict>(item);
                     bullet::BodyDescription b;
                     b.name = py::cast<std::string>(d["name"]);
                     const std::string field = "bodies['" + b.name + "'].";
                     if (d.contains("shape")) {
                         const auto shape = py::cast<std::string>(d["shape"]);
                         if (shape == "box") b.shape = bullet::Shape::box;
                         else if (shape == "sphere") b.shape = bullet::Shape::sphere;
                         else invalid_argument(field + "shape must be box or sphere, got '" + shape + "'");
                     }
                     if (d.contains("half_extents")) b.half_extents = vec3_arg(d["half_extents"], (field + "half_extents").c_str());
                     if (d.contains("radius")) b.radius = py::cast<double>(d["radius"]);
                     if (d.contains("mass")) b.mass = py::cast<double>(d["mass"]);
                     if (d.contains("position")) b.pose.position = vec3_arg(d["position"], (field + "position").c_str());
                     if (d.contains("yaw")) b.pose.orientation = bullet::Quaternion::from_yaw(py::cast<double>(d["yaw"]));
                     if (d.contains("linear_velocity")) b.linear_velocity = vec3_arg(d["linear_velocity"], (field + "linear_velocity").c_str());
                     if (d.contains("angular_velocity")) b.angular_velocity = vec3_arg(d["angular_velocity"], (field + "angular_velocity").c_str());
                     if (d.contains("friction")) b.friction = py::cast<double>(d["friction"]);
                     if (d.contains("restitution")) b.restitution = py::cast<double>(d["restitution"]);
                     scene.bodies.push_back(std::move(b));
                 }
                 return std::make_unique<bullet::BulletWorld>(scene);
             }),
             py::arg("bodies"), py::kw_only(), py::arg("gravity") = py::make_tuple(0.0, 0.0, -9.81),
             py::arg("ground") = true)
        .def_property_readonly("steps", &bullet::BulletWorld::steps)
        .def_property_readonly("body_names", [](const bullet::BulletWorld& w) {
            std::vector<std::string> names;
            for (std::size_t i = 0; i < w.body_count(); ++i) names.push_back(w.body_name(i));
            return names;
        });

    py::class_<BulletView>(m, "BulletWorldView",
                           "A Bullet world as an Access sees it. Arrays (one row per body, in body_names order) are "
                           "read-only copies; every member raises InvalidState once the access is released.")
        .def_property_readonly("positions", [](const BulletView& v) {
            check_held(*v.cell);
            return per_body(*v.world, 3, [&](bullet::BodyIndex i, double* row) {
                const auto p = v.world->pose(i).position;
                row[0] = p.x, row[1] = p.y, row[2] = p.z;
            });
        }, "(n, 3) positions.")
        .def_property_readonly("orientations", [](const BulletView& v) {
            check_held(*v.cell);
            return per_body(*v.world, 4, [&](bullet::BodyIndex i, double* row) {
                const auto q = v.world->pose(i).orientation;
                row[0] = q.x, row[1] = q.y, row[2] = q.z, row[3] = q.w;
            });
        }, "(n, 4) quaternions (x, y, z, w).")
        .def_property_readonly("linear_velocities", [](const BulletView& v) {
            check_held(*v.cell);
            return per_body(*v.world, 3, [&](bullet::BodyIndex i, double* row) {
                const auto s = v.world->state(i).linear_velocity;
                row[0] = s.x, row[1] = s.y, row[2] = s.z;
            });
        }, "(n, 3) linear velocities.")
        .def_property_readonly("time", [](const BulletView& v) {
            check_held(*v.cell);
            return ns(v.world->time());
        })
        .def_property_readonly("state_hash", [](const BulletView& v) {
            check_held(*v.cell);
            return v.world->state_hash();
        }, "The trajectory hash of the current state (as the Bullet host prints it).")
        .def("apply_central_force", [](BulletView& v, py::handle body, py::handle force) {
            check_writable(*v.cell, "a force");
            v.world->apply_central_force(body_arg(*v.world, body), vec3_arg(force, "force"));
        }, py::arg("body"), py::arg("force"), "Until the next step (Bullet clears forces after each step).")
        .def("apply_central_impulse", [](BulletView& v, py::handle body, py::handle impulse) {
            check_writable(*v.cell, "an impulse");
            v.world->apply_central_impulse(body_arg(*v.world, body), vec3_arg(impulse, "impulse"));
        }, py::arg("body"), py::arg("impulse"))
        .def("set_linear_velocity", [](BulletView& v, py::handle body, py::handle velocity) {
            check_writable(*v.cell, "a velocity");
            v.world->set_linear_velocity(body_arg(*v.world, body), vec3_arg(velocity, "velocity"));
        }, py::arg("body"), py::arg("velocity"));
#else
    m.attr("HAVE_BULLET") = false;
#endif
}

} // namespace simsync::python
