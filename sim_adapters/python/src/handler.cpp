// simsync.Handler: the one object per simulation, its events and snapshots.
#include "common.hpp"

namespace simsync::python {
namespace {

py::object optional_time(const std::optional<SimTime>& t) { return t ? py::object(py::int_(ns(*t))) : py::none(); }

py::object event_data(const HandlerEvent& e)
{
    return data_module().attr("HandlerEvent")(to_string(e.kind), e.generation, ns(e.at), optional_time(e.pause_at));
}

py::object diagnostic_data(const Diagnostic& d)
{
    return data_module().attr("Diagnostic")(to_string(d.kind), ns(d.at), d.waiting_for, ns(d.for_how_long), d.accessor,
                                            d.reason ? py::object(py::str(d.reason.message())) : py::none(),
                                            d.message);
}

py::object snapshot_data(const Snapshot& s)
{
    py::object status = data_module().attr("AccessorStatus");
    py::list accessors;
    for (const AccessorStatus& a : s.accessors) {
        accessors.append(status(a.name, to_string(a.kind), to_string(a.mode), a.priority, a.registered,
                                to_string(a.activity), ns(a.time), ns(a.for_how_long), a.grants));
    }
    return data_module().attr("Snapshot")(ns(s.now), to_string(s.state), s.steps, s.grants, optional_time(s.pause_at),
                                          accessors, s.waiting_for, ns(s.waiting_for_how_long));
}

struct PySubscription {
    Subscription subscription;
    PySubscription() = default;
    PySubscription(const PySubscription&) = delete;
    PySubscription& operator=(const PySubscription&) = delete;
    ~PySubscription() { close(); }
    // Unsubscribing waits for a callback running on another thread, which may
    // be waiting for the GIL.
    void close() { without_gil([&] { subscription.reset(); }); }
};

} // namespace

SimSyncHandler& handler_ref(py::handle handler)
{
    try {
        return py::cast<PyHandler&>(handler).get();
    } catch (const py::cast_error&) {
        invalid_argument("handler must be a simsync.Handler, got " + std::string(py::str(py::repr(handler))));
    }
}

void bind_handler(py::module_& m)
{
    py::enum_<StepThread>(m, "StepThread", "Which thread runs World.step.")
        .value("any", StepThread::any,
               "the thread that makes a request steps the world for whichever request is next (no handoff for a "
               "lone accessor)")
        .value("host", StepThread::host, "only the thread in Handler.run() steps (engines bound to one thread)");
    py::enum_<HandlerState>(m, "HandlerState")
        .value("running", HandlerState::running)
        .value("paused", HandlerState::paused)
        .value("stopped", HandlerState::stopped);

    py::class_<PySubscription>(m, "Subscription",
                               "A subscription to handler events; close() (or leaving its with block, or dropping "
                               "it) unsubscribes. Once close() returns, the callback is not running and will not "
                               "be called again; closing from inside the callback is allowed.")
        .def("close", &PySubscription::close)
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](PySubscription& s, py::args) { s.close(); })
        .def("__bool__", [](const PySubscription& s) { return static_cast<bool>(s.subscription); });

    py::class_<PyHandler>(m, "Handler", R"(The one object per simulation: owns simulated time and grants timestamped access to the world.

``Handler(world, step=simsync.ms(1), rounding="nearest", start_paused=False,
step_thread="any", stall_timeout=5.0, diagnostics=None)``

A thread (or asyncio task, or inline system) asks for access at the time it wants;
the handler rounds that time to the step grid ``k * step``, steps the world to it and
grants the access; the caller works on the world and releases it.

Grant rule: when nobody holds an exclusive access and the earliest pending request is
at T: T == now is granted; T > now, not paused and not beyond any lockstep accessor's
bound: the world is stepped (T - now) / step times and the request granted; otherwise
it waits. At one instant the order is by priority, then registration order, never
arrival order. Same config and same lockstep accessors: the same sequence of grants,
whatever the thread timing.

Thread safety: every method is safe from any thread, at any time; the calls that wait
release the GIL. ``stall_timeout`` (seconds, 0 turns the watchdog off): report a stall
when time has not advanced that long while somebody waits for it; ``diagnostics``:
a callable given a simsync.Diagnostic, on the watchdog or reporting thread (default:
one line on stderr). Closing (close(), the end of a with block, or the last reference)
stops the handler and waits for the current holders to release.)")
        .def(py::init([](py::object world, py::handle step, py::handle rounding, bool start_paused,
                         py::handle step_thread, py::handle stall_timeout, py::object diagnostics) {
                 auto h = std::make_unique<PyHandler>();
                 World& w = world_ref(world);
                 HandlerConfig config;
                 config.step = SimDuration{int_ns(step, "step")};
                 config.rounding = enum_arg<Rounding>(rounding, "rounding");
                 config.start_paused = start_paused;
                 config.step_thread = enum_arg<StepThread>(step_thread, "step_thread");
                 config.stall_timeout = timeout_arg(stall_timeout, "stall_timeout");
                 if (!diagnostics.is_none()) {
                     if (!PyCallable_Check(diagnostics.ptr())) invalid_argument("diagnostics must be callable or None");
                     PythonRef callback(diagnostics);
                     h->diagnostics = callback;
                     config.diagnostics = [callback](const Diagnostic& d) {
                         if (!Py_IsInitialized()) return;
                         py::gil_scoped_acquire gil;
                         call_unraisable(callback, diagnostic_data(d));
                     };
                 }
                 h->world = world;
                 h->handler = std::make_unique<SimSyncHandler>(w, std::move(config));
                 return h;
             }),
             py::arg("world"), py::kw_only(), py::arg("step") = 1'000'000, py::arg("rounding") = Rounding::nearest,
             py::arg("start_paused") = false, py::arg("step_thread") = StepThread::any,
             py::arg("stall_timeout") = 5.0, py::arg("diagnostics") = py::none())
        .def(
            "register_accessor",
            [](py::object self, const std::string& name, py::handle kind, py::handle mode, int priority,
               py::handle first_request, py::handle lookahead) {
                AccessorOptions options;
                options.kind = enum_arg<AccessorKind>(kind, "kind");
                options.mode = enum_arg<AccessMode>(mode, "mode");
                options.priority = priority;
                if (!first_request.is_none()) options.first_request = sim_time_arg(first_request, "first_request");
                options.lookahead = SimDuration{int_ns(lookahead, "lookahead")};
                return make_accessor(self, name, options);
            },
            py::arg("name"), py::kw_only(), py::arg("kind") = AccessorKind::lockstep,
            py::arg("mode") = AccessMode::exclusive, py::arg("priority") = 0, py::arg("first_request") = py::none(),
            py::arg("lookahead") = 0,
            R"(Registers an accessor; names are unique among registered accessors.

kind: "lockstep" (time never passes an instant at which it could still ask) or
"free" (best effort); mode: "exclusive" (may write) or "shared" (read-only, held
together at one instant); priority: order at one instant, higher first, then
registration order; first_request (ns, lockstep): it holds time there until it asks;
lookahead (ns, lockstep): a plain release holds time at granted + lookahead.
The accessor takes part from the current time on (registration waits for a step in
progress). Raises DuplicateName, or InvalidArgument (empty name, negative lookahead,
first_request before now) naming the field.)")
        .def_property_readonly(
            "now", [](const PyHandler& h) { return ns(h.get().now()); },
            "The current simulated time (ns). Lock-free, any thread.")
        .def_property_readonly(
            "step_size", [](const PyHandler& h) { return ns(h.get().step_size()); }, "The step dt (ns).")
        .def_property_readonly("rounding", [](const PyHandler& h) { return h.get().rounding(); })
        .def_property_readonly(
            "steps", [](const PyHandler& h) { return h.get().steps(); }, "Number of World.step calls (== now / step).")
        .def_property_readonly("state", [](const PyHandler& h) { return h.get().state(); })
        .def_property_readonly(
            "run_generation", [](const PyHandler& h) { return h.get().run_generation(); },
            "Counts pause, resume, step, run_until, stop and reached targets (each is an event).")
        .def_property_readonly(
            "world", [](const PyHandler& h) { return h.world; },
            "The world object given at construction (reach its state through an access).")
        .def(
            "pause", [](PyHandler& h) { without_gil([&] { h.get().pause(); }); },
            "Stops the advance of time; requests at the current instant are still served. Returns once time has "
            "stopped (a step in progress completes first).")
        .def(
            "resume", [](PyHandler& h) { without_gil([&] { h.get().resume(); }); },
            "Lets time advance again (clears any run_until / step target).")
        .def(
            "step",
            [](PyHandler& h, std::int64_t n) {
                if (n < 0) invalid_argument("n must be >= 0, got " + std::to_string(n));
                without_gil([&] { h.get().step(static_cast<std::uint64_t>(n)); });
            },
            py::arg("n") = 1, "Advances n steps from now (or from the pending pause target), then pauses.")
        .def(
            "run_until",
            [](PyHandler& h, py::handle t) {
                const SimTime at = sim_time_arg(t, "t");
                without_gil([&] { h.get().run_until(at); });
            },
            py::arg("t"), "Runs and pauses at t (rounded down to the grid); at now if t is not after now.")
        .def(
            "stop", [](PyHandler& h) { without_gil([&] { h.get().stop(); }); },
            "Stops for good: every waiting and later request is refused with Refusal.stopped; holders finish "
            "their accesses. Idempotent.")
        .def(
            "run", [](PyHandler& h) { without_gil([&] { h.get().run(); }); },
            "step_thread='host': steps the world on this thread whenever a grant needs it, until stop(). "
            "Raises InvalidState if called twice at once or by a thread that holds an access.")
        .def(
            "wait_until_paused",
            [](PyHandler& h, py::handle timeout) {
                const WallTime deadline = timeout.is_none() ? WallTime::max()
                                                            : deadline_after(timeout_arg(timeout, "timeout"));
                return without_gil([&] { return h.get().wait_until_paused(deadline); });
            },
            py::arg("timeout") = py::none(),
            "Blocks until paused with nobody holding an access and no step in progress, or stopped, or timeout "
            "(seconds) passes. Returns False on timeout.")
        .def(
            "snapshot",
            [](const PyHandler& h) {
                Snapshot s = without_gil([&] { return h.get().snapshot(); });
                return snapshot_data(s);
            },
            "A simsync.Snapshot: every accessor, its kind, what it holds or waits for and since when, and who "
            "time is waiting for.")
        .def(
            "revoke",
            [](PyHandler& h, const std::string& name) { return without_gil([&] { return h.get().revoke(name); }); },
            py::arg("name"),
            "Operator action: removes the registration of `name`; a waiting request is refused (not_registered), "
            "a held access ends at once (its Access turns falsy, revoked is True). False if no such accessor.")
        .def(
            "subscribe",
            [](PyHandler& h, py::object callback) {
                if (!PyCallable_Check(callback.ptr())) invalid_argument("callback must be callable");
                PythonRef ref(callback);
                auto s = std::make_unique<PySubscription>();
                s->subscription = h.get().subscribe([ref](const HandlerEvent& e) {
                    if (!Py_IsInitialized()) return;
                    py::gil_scoped_acquire gil;
                    call_unraisable(ref, event_data(e));
                });
                return s;
            },
            py::arg("callback"),
            R"(Calls ``callback(event)`` (a simsync.HandlerEvent) for every later change of how time runs,
one at a time, in generation order, on the thread that made the change (or the one
delivering events then; for target_reached the thread that stepped), with the GIL
taken for the call. It may call any method of the handler. An exception it raises is
reported as unraisable and ignored. Returns a Subscription.)")
        .def(
            "failure",
            [](const PyHandler& h) -> py::object {
                std::exception_ptr p = h.get().failure();
                if (!p) return py::none();
                try {
                    std::rethrow_exception(p);
                } catch (const std::exception& e) {
                    return py::module_::import("builtins").attr("RuntimeError")(e.what());
                } catch (...) {
                    return py::module_::import("builtins").attr("RuntimeError")("unknown exception");
                }
            },
            "The exception (a RuntimeError with the original message) the world's step or an inline system "
            "raised, if the handler stopped because of one; else None.")
        .def(
            "close", [](PyHandler& h) { without_gil([&] { h.handler.reset(); }); },
            "Stops the handler and destroys it (waits for current holders to release). Later calls raise "
            "InvalidState.")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](PyHandler& h, py::args) {
            if (h.handler) without_gil([&] { h.handler->stop(); });
        });
}

} // namespace simsync::python
