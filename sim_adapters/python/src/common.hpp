#pragma once
// Shared pieces of the Python binding: time conversion, the GIL rules, the
// Access cell that views of the world check, and the binders' entry points.
//
// GIL rules (the whole binding follows them):
//  - every call into simsync that may wait or step the world (requests,
//    releases, pause/step/run_until/stop, registration, destruction of a
//    handler, accessor or subscription) runs with the GIL released, so a
//    thread that steps the world for somebody else never waits for Python;
//  - Python code runs on a simsync thread (an inline system, an event
//    subscriber, a clock sink, a timer, a Python world's step) only with the
//    GIL acquired for the call, never with a simsync lock held (simsync calls
//    callbacks outside its locks);
//  - Python objects captured by C++ callbacks are dropped with the GIL
//    (python_ref below).

// The umbrella header leaves out core/asio.hpp (asynchronous grants: it pulls
// in Boost.Asio), which the asyncio bridge needs.
#include <simsync/core/asio.hpp>
#include <simsync/simsync.hpp>

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace simsync::python {

namespace py = pybind11;

// ------------------------------------------------------------------ time

/// A Python int (or anything with __index__, not bool, not float) as
/// nanoseconds; anything else raises simsync.InvalidArgument naming `field`.
std::int64_t int_ns(py::handle value, const char* field);
inline SimTime sim_time_arg(py::handle value, const char* field) { return SimTime{SimDuration{int_ns(value, field)}}; }
inline std::int64_t ns(SimTime t) { return t.time_since_epoch().count(); }
template <class Rep, class Period>
std::int64_t ns(std::chrono::duration<Rep, Period> d)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}
/// Optional wall-clock timeout in seconds (int or float, >= 0) as a duration.
WallClock::duration timeout_arg(py::handle seconds, const char* field);

/// Raises simsync.InvalidArgument (errc invalid_argument) with `message`.
[[noreturn]] void invalid_argument(const std::string& message);
[[noreturn]] void invalid_state(const std::string& message);

/// The package's data classes and error classes (simsync._errors, simsync._data).
py::object errors_module();
py::object data_module();

/// The Python enum member of a refusal (simsync.Refusal) or None for no error.
py::object refusal_of(std::error_code error);

// ------------------------------------------------------------------ GIL

/// Runs `f` without the GIL if the calling thread holds it.
template <class F>
decltype(auto) without_gil(F&& f)
{
    if (PyGILState_Check()) {
        py::gil_scoped_release release;
        return std::forward<F>(f)();
    }
    return std::forward<F>(f)();
}

/// A reference to a Python object that C++ callbacks may copy and drop on any
/// thread: the last drop takes the GIL (and leaks after the interpreter ended).
class PythonRef {
public:
    PythonRef() = default;
    explicit PythonRef(py::object object)
        : ref_(new py::object(std::move(object)), [](py::object* p) {
              if (!Py_IsInitialized()) return; // the interpreter is gone: leak, never crash
              py::gil_scoped_acquire gil;
              delete p;
          })
    {
    }
    const py::object& get() const { return *ref_; }
    explicit operator bool() const { return ref_ && *ref_; }

private:
    std::shared_ptr<py::object> ref_;
};

/// Calls `callable(args...)` with the GIL acquired; an exception it raises is
/// printed through sys.unraisablehook-like reporting (PyErr_WriteUnraisable),
/// never propagated into simsync (callbacks must not throw).
template <class... Args>
void call_unraisable(const PythonRef& callable, Args&&... args)
{
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    try {
        callable.get()(std::forward<Args>(args)...);
    } catch (py::error_already_set& e) {
        e.discard_as_unraisable(callable.get());
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
        PyErr_WriteUnraisable(callable.get().ptr());
    }
}

// ------------------------------------------------------------------ accesses

/// What an Access object and the views of the world it handed out share:
/// either an Access owned here, or, during an inline system's call, the
/// Access the handler lends to the system (valid for that call only).
struct AccessCell {
    Access owned;
    Access* borrowed = nullptr;
    bool lent = false; // was a borrowed access; after its call it is gone
    bool held() const { return borrowed ? static_cast<bool>(*borrowed) : (!lent && static_cast<bool>(owned)); }
    Access* get() { return borrowed ? borrowed : (lent ? nullptr : &owned); }
};

/// simsync.Access: a granted access, or a refusal (falsy, with `.refusal`).
struct PyAccess {
    std::shared_ptr<AccessCell> cell = std::make_shared<AccessCell>();
    py::object world;    // the handler's world object (for views); None if refused
    py::object accessor; // the Accessor it was granted to (None if refused)
    std::error_code error;
    std::int64_t requested = 0;
    std::int64_t granted = 0;
    AccessMode mode = AccessMode::exclusive;
    std::uint64_t sequence = 0;
    // The asyncio loop an asynchronous grant was delivered through (None
    // otherwise): the next release_and_request_async of its task finds its
    // loop here instead of asking asyncio (whose get_running_loop() makes a
    // getpid() system call).
    py::object loop;

    PyAccess() = default;
    PyAccess(const PyAccess&) = delete;
    PyAccess& operator=(const PyAccess&) = delete;
    ~PyAccess();
    void release_held();
};

/// Makes the Python Access for `access` (owned). GIL held.
/// `requested`: the time asked for (a refusal's Access may not carry it).
py::object make_access(Access access, std::error_code error, py::object world, py::object accessor,
                       std::optional<SimTime> requested = std::nullopt);
/// Makes the Python Access lent to an inline system for one call. GIL held.
py::object lend_access(Access& access, py::object world, py::object accessor);
/// Ends a lent Access: views and the object see it as released.
void end_loan(py::handle access);

/// The view of the world an Access hands out (`access.world`), by the world's
/// type: a checked view for the built-in worlds, the object itself for a
/// world written in Python.
py::object world_view(py::object world, const std::shared_ptr<AccessCell>& cell);

/// The world as a C++ reference from a Python object (a simsync.World).
World& world_ref(py::handle world);

// ------------------------------------------------------------------ binders
void bind_time_and_errors(py::module_& m);
void bind_worlds(py::module_& m);
void bind_handler(py::module_& m);
void bind_accessor(py::module_& m);
void bind_clocks(py::module_& m);
void bind_remote(py::module_& m); // remote.cpp, with the dds adapter only

/// The C++ handler behind a simsync.Handler object (kept alive by the caller).
class SimSyncHandler& handler_ref(py::handle handler);

/// The C++ publisher behind a simsync.ClockPublisher object (kept alive by the
/// caller), for sinks bound elsewhere (remote.cpp's ROS 2 sink).
class ClockPublisher& clock_publisher_ref(py::handle publisher);

} // namespace simsync::python

namespace simsync::python {

/// simsync.Handler: owns the C++ handler and keeps its world alive.
struct PyHandler {
    py::object world;
    PythonRef diagnostics;
    std::unique_ptr<SimSyncHandler> handler;
    PyHandler() = default;
    PyHandler(const PyHandler&) = delete;
    PyHandler& operator=(const PyHandler&) = delete;
    ~PyHandler()
    {
        // Destruction stops the handler and waits for holders and for the
        // watchdog, which may be waiting for the GIL in a diagnostics callback.
        without_gil([&] { handler.reset(); });
    }
    SimSyncHandler& get() const
    {
        if (!handler) invalid_state("the handler is closed");
        return *handler;
    }
};

/// An enum argument given as its Python enum member or its name ("lockstep").
template <class E>
E enum_arg(py::handle value, const char* field)
{
    py::object type = py::type::of<E>();
    if (py::isinstance<py::str>(value)) {
        py::dict members = type.attr("__members__");
        if (!members.contains(value)) {
            std::string names;
            for (auto item : members) names += (names.empty() ? "" : ", ") + std::string(py::str(item.first));
            invalid_argument(std::string(field) + " must be one of " + names + ", got '" +
                             std::string(py::str(value)) + "'");
        }
        return py::cast<E>(members[value]);
    }
    try {
        return py::cast<E>(value);
    } catch (const py::cast_error&) {
        invalid_argument(std::string(field) + " must be a " + std::string(py::str(type.attr("__name__"))) +
                         " or its name, got " + std::string(py::str(py::repr(value))));
    }
}

/// Makes a simsync.Accessor registered on `handler` (a simsync.Handler).
py::object make_accessor(py::object handler, const std::string& name, AccessorOptions options);

// Waits, the GIL released by the caller, until `waiter.done`. The request is
// withdrawn through `cancel` at `deadline` or, on the main thread, when a signal
// handler raised (Ctrl-C): checked every 50 ms, the GIL taken for the check only.
// Either way the wait goes on until the completion has run, so nothing of the
// request outlives the call. Blocking requests of local and remote accessors.
struct WaitOutcome {
    bool timed_out = false;
    std::optional<py::error_already_set> interrupted;
};
template <class Waiter, class Cancel>
WaitOutcome wait_or_withdraw(Waiter& waiter, WallTime deadline, bool main, Cancel&& cancel)
{
    WaitOutcome out;
    std::unique_lock<std::mutex> lock(waiter.mutex);
    while (!waiter.done) {
        WallTime wake = deadline;
        if (main) wake = std::min(wake, WallClock::now() + std::chrono::milliseconds(50));
        if (wake == WallTime::max()) {
            waiter.cv.wait(lock);
        } else {
            waiter.cv.wait_until(lock, wake);
        }
        if (waiter.done) break;
        bool withdraw = false;
        if (WallClock::now() >= deadline) {
            out.timed_out = true;
            withdraw = true;
        } else if (main) {
            lock.unlock();
            {
                py::gil_scoped_acquire gil;
                if (PyErr_CheckSignals() != 0) {
                    out.interrupted.emplace();
                    withdraw = true;
                }
            }
            lock.lock();
        }
        if (withdraw) {
            lock.unlock();
            cancel();
            lock.lock();
            waiter.cv.wait(lock, [&] { return waiter.done; });
        }
    }
    return out;
}

} // namespace simsync::python
