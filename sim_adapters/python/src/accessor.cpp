// simsync.Accessor and simsync.Access: blocking requests (GIL released,
// Ctrl-C withdraws), try requests, the fused release-and-request, asyncio
// requests (completed through the running loop) and inline systems.
#include "common.hpp"

#include <pythread.h>

#include <array>
#include <condition_variable>

namespace simsync::python {
namespace {

namespace asio = boost::asio;

struct PyAccessor {
    py::object handler;
    py::object world;
    Accessor accessor;
    // Installation of the cancellation handler (inside a request's initiation)
    // and emission (cancel(), Ctrl-C, a cancelled task) are serialised here.
    std::recursive_mutex signal_mutex;
    asio::cancellation_signal signal;
    // The stop source of a blocking request made off the main thread.
    std::stop_source stop{std::nostopstate};

    PyAccessor() = default;
    PyAccessor(const PyAccessor&) = delete;
    PyAccessor& operator=(const PyAccessor&) = delete;
    ~PyAccessor()
    {
        without_gil([&] { accessor = Accessor(); }); // deregisters
    }
    Accessor& get() { return accessor; }
    void cancel()
    {
        without_gil([&] {
            std::lock_guard<std::recursive_mutex> guard(signal_mutex);
            signal.emit(asio::cancellation_type::terminal);
            if (stop.stop_possible()) stop.request_stop();
        });
    }
};

unsigned long g_main_thread = 0;
bool on_main_thread() { return PyThread_get_thread_ident() == g_main_thread; }

// The result of one blocking request, filled by its inline completion on
// whichever thread grants or refuses it.
struct Waiter {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    std::error_code error;
    Access access;
    // The requesting thread: a completion that runs on it (granted inline during
    // the initiation, or refused inline by the withdrawal) needs no lock, as
    // nobody else reads the Waiter and that thread is not waiting on `cv`.
    unsigned long owner = PyThread_get_thread_ident();
    bool done_inline = false; // written and read by the owner only
};

// The completion of a blocking request: C++ only, no Python, so it may run
// on any simsync thread without the GIL. The Waiter lives on the requesting
// thread's stack (no allocation per grant): that thread never leaves before
// `done`, and the notification is made under the lock, so the Waiter cannot
// be gone before the completion is done with it.
auto fill(Waiter& waiter)
{
    return [&waiter](std::error_code error, Access access) {
        if (PyThread_get_thread_ident() == waiter.owner) {
            waiter.error = error;
            waiter.access = std::move(access);
            waiter.done = true;
            waiter.done_inline = true;
            return;
        }
        std::lock_guard<std::mutex> guard(waiter.mutex);
        waiter.error = error;
        waiter.access = std::move(access);
        waiter.done = true;
        waiter.cv.notify_all();
    };
}

// The per-grant calls skip pybind11's generic casts where they can: those
// look the C++ type up in a hash map keyed by its type_info name on every
// call (about a fifth of a Python grant). The type's record is looked up once;
// an object of exactly that Python type is unwrapped directly, anything else
// (a Python subclass) goes through py::cast as before.
template <class T>
py::detail::type_info* type_record()
{
    static py::detail::type_info* const record = py::detail::get_type_info(typeid(T), true);
    return record;
}
template <class T>
T& unwrap(py::handle object)
{
    py::detail::type_info* record = type_record<T>();
    if (Py_TYPE(object.ptr()) == record->type) {
        auto* instance = reinterpret_cast<py::detail::instance*>(object.ptr());
        if (void* value = instance->get_value_and_holder(record).value_ptr()) return *static_cast<T*>(value);
    }
    return py::cast<T&>(object);
}

PyAccessor& accessor_of(py::handle self) { return unwrap<PyAccessor>(self); }
PyAccess& access_of(py::handle object)
{
    try {
        return unwrap<PyAccess>(object);
    } catch (const py::cast_error&) {
        invalid_argument("access must be a simsync.Access, got " + std::string(py::str(py::repr(object))));
    }
}

// A new simsync.Access owning `access`: what py::cast of the unique_ptr does
// (pybind11's class_::init_instance: move the holder in), without its two
// type look-ups and without entering the instance in pybind11's registry of
// instances (a hash map insertion per grant, an erasure per release). The
// registry only serves to find the Python object of a C++ pointer that is
// cast to Python again; a PyAccess never is (every Access is made here, a new
// object each time), and pybind11 deregisters at deallocation only what was
// registered (value_and_holder::instance_registered()).
//
// For the same reason the instance is allocated and freed without pybind11's
// look-up of the Python type's C++ types (a hash map find in make_new_instance
// and another in its deallocation): simsync.Access is one C++ type whose holder
// fits the instance (pybind11's "simple layout", checked once on the first
// Access made the ordinary way); a Python subclass of it takes pybind11's path.
using AccessHolder = std::unique_ptr<PyAccess>;
destructor g_pybind11_access_dealloc = nullptr;

void access_dealloc(PyObject* self)
{
    PyTypeObject* type = Py_TYPE(self);
    py::detail::type_info* record = type_record<PyAccess>();
    auto* instance = reinterpret_cast<py::detail::instance*>(self);
    if (type != record->type || PyType_HasFeature(type, Py_TPFLAGS_HAVE_GC) || !instance->simple_layout ||
        instance->simple_instance_registered || instance->weakrefs != nullptr || instance->has_patients ||
        (!instance->simple_holder_constructed && instance->simple_value_holder[0] != nullptr)) {
        g_pybind11_access_dealloc(self);
        return;
    }
    // What pybind11's clear_instance and class_<PyAccess>::dealloc do for it.
    if (instance->simple_holder_constructed) {
        py::error_scope scope; // the destructor may call Python; keep a pending exception
        reinterpret_cast<AccessHolder*>(&instance->simple_value_holder[1])->~AccessHolder();
        instance->simple_holder_constructed = false;
    }
    instance->simple_value_holder[0] = nullptr;
    type->tp_free(self);
    Py_DECREF(type);
}

py::detail::instance* new_access_instance(py::detail::type_info* record)
{
    static const bool simple = [record] {
        auto probe = py::reinterpret_steal<py::object>(py::detail::make_new_instance(record->type));
        const bool is_simple = reinterpret_cast<py::detail::instance*>(probe.ptr())->simple_layout;
        if (is_simple) {
            g_pybind11_access_dealloc = record->type->tp_dealloc;
            record->type->tp_dealloc = access_dealloc;
        }
        return is_simple;
    }();
    if (!simple) return reinterpret_cast<py::detail::instance*>(py::detail::make_new_instance(record->type));
    // make_new_instance with the simple layout's allocate_layout().
    PyObject* self = record->type->tp_alloc(record->type, 0);
    if (self == nullptr) throw py::error_already_set();
    auto* instance = reinterpret_cast<py::detail::instance*>(self);
    instance->simple_layout = true;
    instance->simple_value_holder[0] = nullptr;
    instance->simple_holder_constructed = false;
    instance->simple_instance_registered = false;
    instance->owned = true;
    return instance;
}

py::object wrap_access(std::unique_ptr<PyAccess> access)
{
    using Holder = AccessHolder;
    py::detail::type_info* record = type_record<PyAccess>();
    auto object = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(new_access_instance(record)));
    auto* instance = reinterpret_cast<py::detail::instance*>(object.ptr());
    instance->owned = true;
    py::detail::value_and_holder v_h = instance->get_value_and_holder(record);
    v_h.value_ptr() = access.get();
    new (std::addressof(v_h.holder<Holder>())) Holder(std::move(access));
    v_h.set_holder_constructed();
    return object;
}

// Takes the owned access of `held` (for a fused release-and-request), after
// the checks whose failure must leave it held.
Access take_held(py::handle self, py::handle held_object, SimTime next)
{
    if (held_object.is_none()) return Access{};
    PyAccess& held = access_of(held_object);
    if (!held.accessor.is(self) && !held.accessor.is_none()) {
        invalid_argument("access was granted to another accessor ('" +
                         py::cast<std::string>(held.accessor.attr("name")) + "')");
    }
    if (held.cell->borrowed) {
        invalid_argument("an inline system's access is released by returning its next time, not passed on");
    }
    if (held.cell->held() && next < SimTime{SimDuration{held.granted}}) {
        invalid_argument("next = " + format_seconds(next) + " s is before the granted time " +
                         format_seconds(SimTime{SimDuration{held.granted}}) + " s");
    }
    return std::move(held.cell->owned);
}

// A blocking request. Off the main thread: C++'s blocking request, GIL
// released. On the main thread (and for a timed release_and_request, which
// C++ has no blocking form of): the request is started asynchronously with an
// inline completion, then this thread waits for it without the GIL, waking
// every 50 ms (main thread) to run Python's signal handlers: a Ctrl-C (any
// handler that raises) withdraws the request (a grant that won the race is
// released) and the exception propagates.
py::object blocking_request(py::object self, SimTime t, py::handle timeout, py::handle held_object)
{
    PyAccessor& a = accessor_of(self);
    Accessor& accessor = a.get();
    const bool main = on_main_thread();
    const WallTime deadline = timeout.is_none() ? WallTime::max() : deadline_after(timeout_arg(timeout, "timeout"));
    Access held = take_held(self, held_object, t);
    if (!main && !(held && !timeout.is_none())) {
        // Off the main thread no signal handler can run: the C++ blocking request
        // itself, whose waiting thread may step the world for others. cancel()
        // withdraws it through its stop token.
        std::stop_token token;
        {
            std::lock_guard<std::recursive_mutex> guard(a.signal_mutex);
            a.stop = std::stop_source();
            token = a.stop.get_token();
        }
        Access result;
        try {
            result = without_gil([&] {
                if (held) return accessor.release_and_request(std::move(held), t, token);
                if (!timeout.is_none()) return accessor.request_access_until(t, deadline, token);
                return accessor.request_access(t, token);
            });
        } catch (...) {
            if (held) access_of(held_object).cell->owned = std::move(held); // still held, as C++ promises
            throw;
        }
        const std::error_code error = result.error();
        return make_access(std::move(result), error, a.world, self, t);
    }
    Waiter waiter;
    std::optional<py::error_already_set> interrupted;
    bool timed_out = false;
    {
        py::gil_scoped_release release;
        {
            std::lock_guard<std::recursive_mutex> guard(a.signal_mutex);
            auto handler = asio::bind_cancellation_slot(a.signal.slot(), run_inline(fill(waiter)));
            if (held) {
                accessor.async_release_and_request(std::move(held), t, std::move(handler));
            } else {
                accessor.async_request_access(t, std::move(handler));
            }
        }
        if (!waiter.done_inline) { // granted or refused at once: nothing to wait for
            WaitOutcome outcome = wait_or_withdraw(waiter, deadline, main, [&] { a.cancel(); });
            timed_out = outcome.timed_out;
            interrupted = std::move(outcome.interrupted);
            if (interrupted && waiter.access) waiter.access.release();
        }
    }
    if (interrupted) throw std::move(*interrupted);
    std::error_code error = waiter.error;
    if (timed_out && error == make_error_code(errc::cancelled)) error = make_error_code(errc::timed_out);
    return make_access(std::move(waiter.access), error, a.world, self, t);
}

// The state an asyncio completion carries to the stepping thread; its Python
// references are dropped there with the GIL, never by the core without it.
struct AsyncState {
    py::object loop, deliver, future, world, accessor;
    unsigned long loop_thread = 0; // the thread that started the request: the loop's
    void clear()
    {
        loop = deliver = future = world = accessor = py::object();
    }
    ~AsyncState()
    {
        if (loop && Py_IsInitialized()) {
            py::gil_scoped_acquire gil;
            clear();
        }
    }
};

// The running loop of the calling thread (a coroutine of it is calling). The
// loop that delivered `held` if it runs on this thread now (BaseEventLoop
// records its thread in _thread_id while it runs: then it is this thread's
// running loop), else asyncio.get_running_loop().
py::object running_loop(py::handle held_object, unsigned long thread)
{
    if (!held_object.is_none()) {
        PyAccess& held = access_of(held_object);
        if (held.loop) {
            py::object id = py::getattr(held.loop, "_thread_id", py::none());
            if (PyLong_Check(id.ptr()) && PyLong_AsUnsignedLong(id.ptr()) == thread) return held.loop;
            PyErr_Clear();
        }
    }
    static py::object* const get_running_loop =
        new py::object(py::module_::import("asyncio").attr("get_running_loop")); // leaked: outlives the module
    return (*get_running_loop)();
}

// Starts an asyncio request (released `held` first, if given) and returns the
// future it resolves: `future_type(loop=loop)` (simsync._asyncio's future,
// whose cancel() withdraws the request).
py::object start_async(py::object self, SimTime t, py::object future_type, py::object deliver,
                       py::handle held_object)
{
    PyAccessor& a = accessor_of(self);
    Accessor& accessor = a.get();
    const unsigned long thread = PyThread_get_thread_ident();
    py::object loop = running_loop(held_object, thread);
    // future_type(loop=loop): asyncio.Future's own __init__ (no Python frame);
    // its _accessor slot says whom cancel() withdraws.
    py::object future = future_type(py::arg("loop") = loop);
    if (PyObject_SetAttrString(future.ptr(), "_accessor", self.ptr()) != 0) throw py::error_already_set();
    Access held = take_held(self, held_object, t);
    auto state = std::make_shared<AsyncState>();
    state->loop = loop;
    state->deliver = std::move(deliver);
    state->future = future;
    state->world = a.world;
    state->accessor = self;
    state->loop_thread = thread;
    auto complete = [state, t](std::error_code error, Access access) {
        if (!Py_IsInitialized()) return;
        py::gil_scoped_acquire gil;
        try {
            py::object result = make_access(std::move(access), error, state->world, state->accessor, t);
            if (error == std::error_code{}) unwrap<PyAccess>(result).loop = state->loop;
            if (PyThread_get_thread_ident() == state->loop_thread) {
                // On the loop's own thread (a release or request made by a task of
                // this loop granted it): resolving the future schedules the task
                // through the loop, without a wake-up of its selector. What
                // _deliver does, without its Python frame: a future cancelled
                // meanwhile gives the grant back.
                py::object done = state->future.attr("done")();
                if (done.ptr() == Py_True) {
                    unwrap<PyAccess>(result).release_held();
                } else {
                    state->future.attr("set_result")(result);
                }
            } else {
                state->loop.attr("call_soon_threadsafe")(state->deliver, state->future, result);
            }
        } catch (py::error_already_set& e) {
            e.discard_as_unraisable(state->deliver); // the loop is closed: the access is released here
        }
        state->clear();
    };
    {
        py::gil_scoped_release release;
        std::lock_guard<std::recursive_mutex> guard(a.signal_mutex);
        auto handler = asio::bind_cancellation_slot(a.signal.slot(), run_inline(std::move(complete)));
        if (held) {
            accessor.async_release_and_request(std::move(held), t, std::move(handler));
        } else {
            accessor.async_request_access(t, std::move(handler));
        }
    }
    return future;
}

struct SystemState {
    py::object function, world, accessor;
    void clear() { function = world = accessor = py::object(); }
    ~SystemState()
    {
        if (function && Py_IsInitialized()) {
            py::gil_scoped_acquire gil;
            clear();
        }
    }
};

void run_system(py::object self, SimTime first, py::object function)
{
    PyAccessor& a = accessor_of(self);
    if (!PyCallable_Check(function.ptr())) invalid_argument("system must be callable");
    auto state = std::make_shared<SystemState>();
    state->function = std::move(function);
    state->world = a.world;
    state->accessor = self;
    Accessor::System system = [state](Access& access) -> std::optional<SimTime> {
        if (!Py_IsInitialized()) return std::nullopt;
        py::gil_scoped_acquire gil;
        if (!access) { // the last call: says why it ended
            try {
                state->function(make_access(Access{}, access.error(), state->world, state->accessor));
            } catch (py::error_already_set& e) {
                e.discard_as_unraisable(state->function);
            }
            state->clear();
            return std::nullopt;
        }
        py::object lent = lend_access(access, state->world, state->accessor);
        py::object result;
        try {
            result = state->function(lent);
        } catch (py::error_already_set& e) {
            end_loan(lent);
            std::string what = e.what();
            state->clear();
            throw std::runtime_error("inline system raised " + what);
        }
        end_loan(lent);
        if (result.is_none()) {
            state->clear();
            return std::nullopt;
        }
        return sim_time_arg(result, "the inline system's next time");
    };
    Accessor& accessor = a.get();
    without_gil([&] { accessor.run_system(first, std::move(system)); });
}

// ---------------------------------------------------------------- per-grant entry points
// request and release_and_request are plain CPython fastcall methods rather
// than pybind11 functions: pybind11's dispatcher (overload resolution,
// keyword matching, a casting loop per argument) cost about as much as the
// C++ grant itself. Same arguments, errors and exceptions as before.

// The C++ exception being handled as a Python exception, as pybind11's
// dispatcher translates it (module-local translators, then global ones).
PyObject* raise_current_exception()
{
    try {
        throw;
    } catch (py::error_already_set& e) {
        e.restore();
#ifdef __GLIBCXX__
    } catch (abi::__forced_unwind&) {
        throw;
#endif
    } catch (...) {
        if (py::detail::apply_exception_translators(py::detail::get_local_internals().registered_exception_translators)) {
            return nullptr;
        }
        if (py::detail::apply_exception_translators(py::detail::get_internals().registered_exception_translators)) {
            return nullptr;
        }
        PyErr_SetString(PyExc_SystemError, "Exception escaped from default exception translator!");
    }
    return nullptr;
}

// Matches `names` (positional or keyword) followed by the keyword-only
// `timeout` into `values` (nullptr: not given). False with a TypeError set.
template <std::size_t N>
bool parse_request_args(const char* function, const std::array<const char*, N>& names, PyObject* const* args,
                        Py_ssize_t nargs, PyObject* kwnames, std::array<PyObject*, N + 1>& values)
{
    if (nargs > static_cast<Py_ssize_t>(N)) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zu positional argument%s but %zd were given", function, N,
                     N == 1 ? "" : "s", nargs);
        return false;
    }
    for (Py_ssize_t k = 0; k < nargs; ++k) values[static_cast<std::size_t>(k)] = args[k];
    const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < keywords; ++k) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, k);
        std::size_t slot = N + 1;
        for (std::size_t i = 0; i <= N; ++i) {
            if (PyUnicode_CompareWithASCIIString(key, i < N ? names[i] : "timeout") == 0) slot = i;
        }
        if (slot > N) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", function, key);
            return false;
        }
        if (values[slot] != nullptr) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'", function, key);
            return false;
        }
        values[slot] = args[nargs + k];
    }
    for (std::size_t i = 0; i < N; ++i) {
        if (values[i] == nullptr) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", function, names[i]);
            return false;
        }
    }
    return true;
}

PyObject* request_method(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames)
{
    std::array<PyObject*, 2> values{};
    if (!parse_request_args<1>("request", {"t"}, args, nargs, kwnames, values)) return nullptr;
    try {
        py::handle timeout = values[1] ? values[1] : Py_None;
        return blocking_request(py::reinterpret_borrow<py::object>(self), sim_time_arg(values[0], "t"), timeout,
                                py::none())
            .release()
            .ptr();
    } catch (...) {
        return raise_current_exception();
    }
}

PyObject* release_and_request_method(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames)
{
    std::array<PyObject*, 3> values{};
    if (!parse_request_args<2>("release_and_request", {"access", "next"}, args, nargs, kwnames, values)) {
        return nullptr;
    }
    try {
        py::handle timeout = values[2] ? values[2] : Py_None;
        return blocking_request(py::reinterpret_borrow<py::object>(self), sim_time_arg(values[1], "next"), timeout,
                                values[0])
            .release()
            .ptr();
    } catch (...) {
        return raise_current_exception();
    }
}

// _start_async(t, future_type, deliver, held=None): private, positional only.
PyObject* start_async_method(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs < 3 || nargs > 4) {
        PyErr_Format(PyExc_TypeError, "_start_async() takes 3 or 4 arguments (%zd given)", nargs);
        return nullptr;
    }
    try {
        return start_async(py::reinterpret_borrow<py::object>(self), sim_time_arg(args[0], "t"),
                           py::reinterpret_borrow<py::object>(args[1]), py::reinterpret_borrow<py::object>(args[2]),
                           nargs == 4 ? py::handle(args[3]) : py::handle(Py_None))
            .release()
            .ptr();
    } catch (...) {
        return raise_current_exception();
    }
}

PyMethodDef g_start_async_def{
    "_start_async", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&start_async_method)), METH_FASTCALL,
    "Starts an asyncio request (simsync._asyncio): returns the future it resolves. Not API."};
PyMethodDef g_request_def{
    "request", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&request_method)),
    METH_FASTCALL | METH_KEYWORDS,
    R"(request($self, t, *, timeout=None)
--

Blocks (GIL released) until the access at t (ns) is granted or refused; returns an Access.

``timeout`` (seconds): give up with Refusal.timed_out (a lockstep accessor then keeps
holding time at t, as in C++). On the main thread Ctrl-C (any signal handler that
raises) withdraws the request and raises KeyboardInterrupt; ``cancel()`` from another
thread withdraws it with Refusal.cancelled. Raises Busy if a request of this accessor
is pending or its access is held.)"};
PyMethodDef g_release_and_request_def{
    "release_and_request", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&release_and_request_method)),
    METH_FASTCALL | METH_KEYWORDS,
    R"(release_and_request($self, access, next, *, timeout=None)
--

Releases ``access`` and asks for ``next`` in one operation (no gap in which time can slip
past), then waits as request() does. ``access`` may be None (a plain request).
Raises InvalidArgument if access belongs to another accessor or next is before its
granted time (it is then still held).)"};

void add_method(py::handle type, PyMethodDef& def)
{
    auto descriptor =
        py::reinterpret_steal<py::object>(PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(type.ptr()), &def));
    if (!descriptor) throw py::error_already_set();
    py::setattr(type, def.ml_name, descriptor);
}

} // namespace

// ---------------------------------------------------------------- PyAccess

PyAccess::~PyAccess()
{
    if (cell && !cell->borrowed && cell->owned) {
        Access owned = std::move(cell->owned);
        without_gil([&] { owned.release(); });
    }
}

void PyAccess::release_held()
{
    if (cell->borrowed) {
        without_gil([&] { cell->borrowed->release(); });
        return;
    }
    Access owned = std::move(cell->owned);
    without_gil([&] { owned.release(); });
}

py::object make_access(Access access, std::error_code error, py::object world, py::object accessor,
                       std::optional<SimTime> requested)
{
    auto a = std::make_unique<PyAccess>();
    a->error = error;
    a->requested = ns(requested ? *requested : access.requested_time());
    a->granted = ns(access.granted_time());
    a->mode = access.mode();
    a->sequence = access.sequence();
    a->world = access ? std::move(world) : py::none();
    a->accessor = std::move(accessor);
    a->cell->owned = std::move(access);
    return wrap_access(std::move(a));
}

py::object lend_access(Access& access, py::object world, py::object accessor)
{
    auto a = std::make_unique<PyAccess>();
    a->error = access.error();
    a->requested = ns(access.requested_time());
    a->granted = ns(access.granted_time());
    a->mode = access.mode();
    a->sequence = access.sequence();
    a->world = std::move(world);
    a->accessor = std::move(accessor);
    a->cell->borrowed = &access;
    a->cell->lent = true;
    return wrap_access(std::move(a));
}

void end_loan(py::handle access)
{
    PyAccess& a = py::cast<PyAccess&>(access);
    a.cell->borrowed = nullptr;
}

py::object make_accessor(py::object handler, const std::string& name, AccessorOptions options)
{
    auto& h = py::cast<PyHandler&>(handler);
    SimSyncHandler& core = h.get();
    auto a = std::make_unique<PyAccessor>();
    a->handler = handler;
    a->world = h.world;
    a->accessor = without_gil([&] { return core.register_accessor(name, options); });
    return py::cast(std::move(a));
}

void bind_accessor(py::module_& m)
{
    g_main_thread = py::cast<unsigned long>(py::module_::import("threading").attr("main_thread")().attr("ident"));

    py::enum_<AccessorKind>(m, "AccessorKind", "Whether an accessor holds simulated time back between its accesses.")
        .value("lockstep", AccessorKind::lockstep,
               "time never moves past an instant at which it could still ask (deterministic)")
        .value("free", AccessorKind::free,
               "best effort: holds time only while it holds an access or has a request pending");
    py::enum_<AccessMode>(m, "AccessMode", "What an access allows.")
        .value("exclusive", AccessMode::exclusive, "alone with the world; may write (the default)")
        .value("shared", AccessMode::shared, "read-only; several shared accesses at one instant run at once");

    py::class_<PyAccess>(m, "Access", R"(A granted access to the world at one simulated instant, or why none was granted.

Truthy while it holds a granted access: the handler then does not step the world and,
for an exclusive access, grants nobody else. Falsy if refused (``refusal`` says why:
a simsync.Refusal), after release, and after an operator's revoke (``revoked``).
Use it as a context manager: leaving the block releases it, also on an exception.
``access.world`` is the world as this access sees it (views of the built-in worlds
raise InvalidState once the access is released). An access belongs to the thread (or
task) that requested it; it may be released on another.)")
        .def("__bool__", [](const PyAccess& a) { return a.cell->held(); })
        .def_property_readonly(
            "held", [](const PyAccess& a) { return a.cell->held(); }, "True while the access is held.")
        .def_property_readonly(
            "refusal", [](const PyAccess& a) { return refusal_of(a.error); },
            "None if the access was granted, else the simsync.Refusal (time_passed, stopped, timed_out, "
            "not_registered, would_block, world_failed, cancelled).")
        .def_property_readonly(
            "granted_time", [](const PyAccess& a) { return a.granted; },
            "The grid instant (ns) of the grant: the simulation's current time while it is held.")
        .def_property_readonly(
            "requested_time", [](const PyAccess& a) { return a.requested; }, "The time asked for (ns), before rounding.")
        .def_property_readonly("mode", [](const PyAccess& a) { return a.mode; })
        .def_property_readonly(
            "sequence", [](const PyAccess& a) { return a.sequence; },
            "Position of this grant in the handler's total order of grants (0, 1, 2, ...).")
        .def_property_readonly(
            "revoked",
            [](const PyAccess& a) {
                Access* access = const_cast<AccessCell&>(*a.cell).get();
                return access != nullptr && access->revoked();
            },
            "True if an operator revoked the accessor while the access was held: stop touching the world.")
        .def_property_readonly(
            "world",
            [](const PyAccess& a) {
                if (!a.cell->held()) {
                    invalid_state(a.error ? "no access was granted (refused: " + a.error.message() + ")"
                                          : std::string("the access is released: the world is not reachable "
                                                        "through it"));
                }
                return world_view(a.world, a.cell);
            },
            "The world as this access sees it. Raises InvalidState if no access is held.")
        .def(
            "release",
            [](PyAccess& a, py::handle next) {
                if (next.is_none()) {
                    a.release_held();
                    return;
                }
                const SimTime t = sim_time_arg(next, "next");
                Access* access = a.cell->get();
                if (access == nullptr || !*access) return;
                without_gil([&] { access->release(t); });
                if (!a.cell->borrowed) a.cell->owned = Access{};
            },
            py::arg("next") = py::none(),
            R"(Releases the access (no-op if not held).

``release()``: a lockstep accessor then holds time at granted + lookahead until its
next request. ``release(next)``: atomically declares its next request time, so time
cannot slip past it. Raises InvalidArgument if next is before the granted time (the
access is then still held).)")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](PyAccess& a, py::args) {
            if (!a.cell->borrowed) a.release_held();
            return false;
        })
        .def("__repr__", [](const PyAccess& a) {
            if (a.error) return "<simsync.Access refused: " + a.error.message() + ">";
            return "<simsync.Access granted_time=" + std::to_string(a.granted) + " sequence=" +
                   std::to_string(a.sequence) + (a.cell->held() ? "" : " released") + ">";
        });

    m.def(
        "_cpp_blocking_grants",
        [](py::object handler, const std::string& name, std::int64_t n, std::int64_t first) {
            // The C++ baseline of bench/python_bench.py: n grants of a blocking
            // C++ accessor (release_and_request) on the same handler, GIL released.
            SimSyncHandler& h = py::cast<PyHandler&>(handler).get();
            return without_gil([&] {
                Accessor a = h.register_accessor(name, {.first_request = SimTime{SimDuration{first}}});
                const SimDuration dt = h.step_size();
                SimTime t{SimDuration{first}};
                const auto start = WallClock::now();
                Access access = a.request_access(t);
                for (std::int64_t k = 1; k < n && access; ++k) {
                    t += dt;
                    access = a.release_and_request(std::move(access), t);
                }
                const auto elapsed = WallClock::now() - start;
                access.release(kSimTimeMax);
                return ns(elapsed);
            });
        },
        py::arg("handler"), py::arg("name"), py::arg("n"), py::arg("first") = 0,
        "Benchmark baseline (not API): n blocking C++ grants on the handler; wall ns elapsed.");

    py::class_<PyAccessor>(m, "Accessor", R"(A registered participant of the simulation (Handler.register_accessor).

Ways to wait for an access, mixed freely in one handler under the same grant rule:
a blocking request on a thread (``request``, ``request(t, timeout=...)``,
``try_request``, ``release_and_request``), an asyncio request (``await
request_async(t)``), or an inline system (``run_system``) called on the stepping
thread. One request at a time per accessor (a second one raises Busy).

Requests at a time t (int ns): t is rounded to the grid; a rounded time before now is
refused with Refusal.time_passed (exactly now is granted); the call waits until the
handler has stepped the world to it and it is this accessor's turn (priority, then
registration order). Closing (close(), or the last reference) deregisters it; an
Access it was granted stays held until released.)")
        .def_property_readonly("name", [](PyAccessor& a) { return a.accessor.name(); })
        .def_property_readonly(
            "registered", [](PyAccessor& a) { return a.accessor.registered(); },
            "False after deregister() or an operator's revoke.")
        .def_property_readonly("handler", [](const PyAccessor& a) { return a.handler; })
        .def_property(
            "kind", [](PyAccessor& a) { return without_gil([&] { return a.get().kind(); }); },
            [](PyAccessor& a, py::handle kind) {
                const AccessorKind k = enum_arg<AccessorKind>(kind, "kind");
                without_gil([&] { a.get().set_kind(k); });
            },
            "lockstep or free; settable while the simulation runs (becoming lockstep while idle holds time at now).")
        .def(
            "try_request",
            [](py::object self, py::handle t) {
                PyAccessor& a = accessor_of(self);
                const SimTime at = sim_time_arg(t, "t");
                Access access = without_gil([&] { return a.get().try_request_access(at); });
                const std::error_code error = access.error();
                return make_access(std::move(access), error, a.world, self, at);
            },
            py::arg("t"),
            "Grants only if that needs no waiting for another thread (this thread may step the world to t); "
            "otherwise a falsy Access with Refusal.would_block.")
        .def("cancel", &PyAccessor::cancel,
             "Withdraws this accessor's pending request, if any (it ends with Refusal.cancelled). Any thread.")
        .def(
            "run_system",
            [](py::object self, py::handle first, py::object system) {
                run_system(self, sim_time_arg(first, "first"), system);
            },
            py::arg("first"), py::arg("system"),
            R"(Makes this accessor a persistent inline system from ``first`` (ns) on.

``system(access)`` is called on the thread that steps the world, right after the step
that reaches each instant it asks for, with the GIL held for the call only; it
returns the next time (ns) it asks for, or None to end. Its access is then released
and the next request made in one operation. It ends with None, or with one last call
whose Access is falsy and says why (stopped, not_registered, world_failed,
time_passed). An exception from it, or a next time before the granted one, stops the
handler (Handler.failure()). Keep no reference to the Access: it is valid for the
call only. Returns at once; the first call may come before it returns.)")
        .def(
            "deregister", [](PyAccessor& a) { without_gil([&] { a.accessor.deregister(); }); },
            "Deregisters now: a waiting request is refused (not_registered), a lockstep bound is lifted, the name "
            "is free again. A held access stays held until released.")
        .def(
            "close", [](PyAccessor& a) { without_gil([&] { a.accessor.deregister(); }); }, "Same as deregister().")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](PyAccessor& a, py::args) { without_gil([&] { a.accessor.deregister(); }); })
        .def("__repr__", [](PyAccessor& a) { return "<simsync.Accessor '" + a.accessor.name() + "'>"; });
    add_method(m.attr("Accessor"), g_request_def);
    add_method(m.attr("Accessor"), g_release_and_request_def);
    add_method(m.attr("Accessor"), g_start_async_def);
}

} // namespace simsync::python
