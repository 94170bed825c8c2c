// Wall clocks, the event loop, time scale, time sources, the real-time pacer,
// the clock publisher (callback and UDP sinks), the periodic timer and
// scenario files.
#include "common.hpp"

namespace simsync::python {
namespace {

py::object message_data(const ClockMessage& m)
{
    return data_module().attr("ClockMessage")(m.sequence, m.time.time_since_epoch().count(), ns(m.sim_time), m.paused);
}

WallClockSource& clock_arg(py::handle clock)
{
    if (clock.is_none()) return real_wall_clock();
    try {
        return py::cast<ManualWallClock&>(clock);
    } catch (const py::cast_error&) {
        invalid_argument("clock must be a simsync.ManualWallClock or None (the real clock), got " +
                         std::string(py::str(py::repr(clock))));
    }
}

struct PyLoop {
    py::object clock;
    std::unique_ptr<EventLoop> loop;
    ~PyLoop()
    {
        without_gil([&] { loop.reset(); });
    }
};

Executor executor_arg(py::handle loop)
{
    if (loop.is_none()) return {};
    return py::cast<PyLoop&>(loop).loop->executor();
}

struct PyScale {
    py::object clock;
    std::unique_ptr<TimeScale> scale;
};

struct PySource {
    py::object keep; // the handler or scale it reads
    std::unique_ptr<TimeSource> source;
};

struct PyPacer {
    py::object handler, scale, loop;
    std::unique_ptr<RealTimePacer> pacer;
    ~PyPacer()
    {
        without_gil([&] { pacer.reset(); });
    }
};

struct PyPublisher {
    py::object handler, source, loop;
    std::vector<PythonRef> callbacks;
    std::unique_ptr<ClockPublisher> publisher;
    ~PyPublisher()
    {
        without_gil([&] { publisher.reset(); });
    }
};

// Calls a timer's Python callback with a TimerTick; a simulated tick's Access is
// lent for the call. GIL held.
void call_tick(const PythonRef& callback, const TimerTick& tick, const py::object& world)
{
    py::object lent = py::none();
    if (tick.access != nullptr) lent = lend_access(*tick.access, world, py::none());
    py::object data = data_module().attr("TimerTick")(tick.index, tick.real_time.time_since_epoch().count(),
                                                     ns(tick.sim_time), tick.skipped, lent);
    try {
        callback.get()(data);
    } catch (...) {
        if (!lent.is_none()) end_loan(lent);
        throw;
    }
    if (!lent.is_none()) end_loan(lent);
}

struct PyTimer {
    py::object handler, loop;
    PythonRef callback;
    std::unique_ptr<PeriodicTimer> timer;
    ~PyTimer()
    {
        without_gil([&] { timer.reset(); });
    }
};

py::dict pacer_stats(const PacerStats& s)
{
    py::dict d;
    d["grants"] = s.grants;
    d["on_time"] = s.on_time;
    d["late"] = s.late;
    d["unpaced"] = s.unpaced;
    d["reanchors"] = s.reanchors;
    d["dropped_ns"] = ns(s.dropped);
    d["achieved_factor"] = s.achieved_factor ? py::object(py::float_(*s.achieved_factor)) : py::none();
    d["target_factor"] = s.target_factor;
    d["waited_ns"] = ns(s.waited);
    d["elapsed_ns"] = ns(s.elapsed);
    d["last_release"] = ns(s.last_release);
    return d;
}

py::dict scenario_data(const ScenarioConfig& c)
{
    py::dict handler;
    handler["step"] = ns(c.handler.step);
    handler["rounding"] = to_string(c.handler.rounding);
    handler["start_paused"] = c.handler.start_paused;
    handler["step_thread"] = c.handler.step_thread == StepThread::any ? "any" : "host";
    handler["stall_timeout_ns"] = ns(c.handler.stall_timeout);
    py::list accessors;
    for (const AccessorConfig& a : c.accessors) {
        py::dict d;
        d["name"] = a.name;
        d["schedule"] = a.schedule.describe();
        d["period"] = ns(a.schedule.nominal_period());
        d["offset"] = ns(a.schedule.offset());
        d["kind"] = to_string(a.kind);
        d["mode"] = to_string(a.mode);
        d["priority"] = a.priority;
        d["role"] = a.role;
        accessors.append(d);
    }
    py::list sinks;
    for (const ClockSinkConfig& s : c.clock.sinks) {
        if (const auto* udp = std::get_if<UdpSinkConfig>(&s)) {
            sinks.append(py::dict(py::arg("kind") = "udp", py::arg("host") = udp->host, py::arg("port") = udp->port));
        } else {
            sinks.append(py::dict(py::arg("kind") = std::get<ExtensionSinkConfig>(s).kind));
        }
    }
    py::dict clock;
    clock["enabled"] = c.clock.enabled;
    clock["schedule"] = c.clock.schedule.describe();
    clock["period"] = ns(c.clock.schedule.nominal_period());
    clock["sinks"] = sinks;
    py::dict pacer;
    pacer["enabled"] = c.pacer.enabled;
    pacer["period"] = ns(c.pacer.period);
    pacer["catch_up_limit_ns"] = ns(c.pacer.catch_up_limit);
    py::list timers;
    for (const TimerConfig& t : c.timers) {
        timers.append(py::dict(py::arg("name") = t.name, py::arg("clock") = to_string(t.clock),
                               py::arg("period") = ns(t.period), py::arg("offset") = ns(t.offset),
                               py::arg("wait_for_start") = t.wait_for_start));
    }
    py::dict out;
    out["handler"] = handler;
    out["time_source"] = c.time_source;
    out["time_scale"] = c.time_scale;
    out["world_type"] = c.world_type;
    out["accessors"] = accessors;
    out["clock"] = clock;
    out["pacer"] = pacer;
    out["timers"] = timers;
    py::list sections;
    for (const auto& [key, node] : c.sections) sections.append(key);
    out["sections"] = sections;
    return out;
}

} // namespace

ClockPublisher& clock_publisher_ref(py::handle publisher)
{
    try {
        return *py::cast<PyPublisher&>(publisher).publisher;
    } catch (const py::cast_error&) {
        invalid_argument("expected a simsync.ClockPublisher, got " + std::string(py::str(py::repr(publisher))));
    }
}

void bind_clocks(py::module_& m)
{
    // Enums first: they are default arguments below.
    py::enum_<CatchUp>(m, "CatchUp")
        .value("none", CatchUp::none)
        .value("bounded", CatchUp::bounded)
        .value("full", CatchUp::full);
    py::enum_<TimerClock>(m, "TimerClock").value("real", TimerClock::real).value("simulated", TimerClock::simulated);
    py::class_<ManualWallClock>(m, "ManualWallClock",
                                "A wall clock that moves only when told (advance), for tests of the pacer, the "
                                "clock publisher's paused messages and real-time timers without a real sleep. "
                                "Thread-safe.")
        .def(py::init<>())
        .def(
            "advance",
            [](ManualWallClock& c, py::handle d) {
                const auto by = std::chrono::nanoseconds{int_ns(d, "d")};
                without_gil([&] { c.advance(by); });
            },
            py::arg("d"), "Moves the clock forward by d ns and fires what waits for it.")
        .def_property_readonly(
            "steady_now", [](const ManualWallClock& c) { return ns(c.steady_now().time_since_epoch()); })
        .def_property_readonly("sleeps", &ManualWallClock::sleeps);

    py::class_<PyLoop>(m, "EventLoop",
                       "One thread running the jobs and wall-clock timers of the accessors that live on wall time "
                       "(pacer, clock publisher, real-time timers); share one among them. Close the components "
                       "that use it first.")
        .def(py::init([](py::object clock) {
                 auto l = std::make_unique<PyLoop>();
                 l->clock = clock;
                 l->loop = std::make_unique<EventLoop>(clock_arg(clock), clock.is_none()
                                                                             ? EventLoop::ManualTime::advanced_by_test
                                                                             : EventLoop::ManualTime::jumps_to_deadlines);
                 return l;
             }),
             py::kw_only(), py::arg("clock") = py::none(),
             "clock: None (the real clock) or a ManualWallClock (the loop then moves it to each timer's deadline).");

    py::class_<PyScale>(m, "TimeScale",
                        "Simulated seconds per wall second: one value any thread may read and change while the "
                        "simulation runs. Raises InvalidArgument unless finite and in [1e-6, 1e6].")
        .def(py::init([](double initial, py::object clock) {
                 auto s = std::make_unique<PyScale>();
                 s->clock = clock;
                 s->scale = std::make_unique<TimeScale>(initial, clock_arg(clock));
                 return s;
             }),
             py::arg("initial") = 1.0, py::kw_only(), py::arg("clock") = py::none())
        .def_property(
            "value", [](const PyScale& s) { return s.scale->value(); },
            [](PyScale& s, double v) { without_gil([&] { s.scale->set(v); }); }, "The current scale; settable.")
        .def("set", [](PyScale& s, double v) { without_gil([&] { s.scale->set(v); }); }, py::arg("scale"))
        .def_property_readonly("generation", [](const PyScale& s) { return s.scale->generation(); })
        .def_property_readonly(
            "scaled_elapsed", [](const PyScale& s) { return ns(s.scale->scaled_elapsed()); },
            "Scaled wall time since construction (ns); never runs backwards.");

    py::class_<PySource>(m, "TimeSource",
                         "A thread-safe source of 'the time' that never runs backwards; make one by name with "
                         "make_time_source.")
        .def("now", [](const PySource& s) { return s.source->now().time_since_epoch().count(); },
             "The current reading (ns since the source's epoch). Any thread.")
        .def(
            "set",
            [](PySource& s, py::handle t) {
                auto* external = dynamic_cast<ExternalTimeSource*>(s.source.get());
                if (!external) invalid_state("only an 'external' time source can be set");
                external->set(SourceTime{SourceClock::duration{int_ns(t, "t")}});
            },
            py::arg("t"), "external sources only: sets the time (ns); raises InvalidArgument if it goes backwards.");

    m.def(
        "make_time_source",
        [](const std::string& name, py::object handler, py::object scale) {
            TimeSourceContext context;
            auto s = std::make_unique<PySource>();
            if (!handler.is_none()) context.handler = &handler_ref(handler);
            if (!scale.is_none()) context.time_scale = py::cast<PyScale&>(scale).scale.get();
            s->keep = py::make_tuple(handler, scale);
            s->source = make_time_source(name, context);
            return s;
        },
        py::arg("name"), py::kw_only(), py::arg("handler") = py::none(), py::arg("time_scale") = py::none(),
        R"(Makes a built-in time source by name: "sim" (stepped time from 0; needs handler),
"simulation" (wall clock scaled by the time scale, from 0; needs time_scale), "system"
(UNIX epoch, scaled; needs time_scale), "ros" (system time, not scaled), "external"
(set from outside: TimeSource.set). Raises InvalidArgument naming the known names.)");

    py::class_<PyPacer>(m, "RealTimePacer", R"(Paces simulated time against the wall clock: a lockstep accessor at its period that,
granted at T, waits until anchor_wall + (T - anchor_sim) / scale (an absolute deadline) and
releases. catch_up: "none" (re-anchor, never burst), "bounded" (catch up at most
max_catch_up seconds), "full". It re-anchors on pause, resume, steps and scale changes.
Owns no thread: it lives on the event loop (its own if loop is None). Stop it (stop(),
or dropping it) before the handler.)")
        .def(py::init([](py::object handler, py::object scale, py::handle period, py::handle catch_up,
                         py::handle max_catch_up, py::object loop, const std::string& name) {
                 auto p = std::make_unique<PyPacer>();
                 PacerConfig config;
                 config.name = name;
                 config.period = SimDuration{int_ns(period, "period")};
                 config.catch_up = enum_arg<CatchUp>(catch_up, "catch_up");
                 config.max_catch_up = timeout_arg(max_catch_up, "max_catch_up");
                 SimSyncHandler& h = handler_ref(handler);
                 const TimeScale& s = *py::cast<PyScale&>(scale).scale;
                 const Executor executor = executor_arg(loop);
                 p->handler = handler;
                 p->scale = scale;
                 p->loop = loop;
                 p->pacer = without_gil([&] { return std::make_unique<RealTimePacer>(h, s, config, executor); });
                 return p;
             }),
             py::arg("handler"), py::arg("scale"), py::kw_only(), py::arg("period") = 10'000'000,
             py::arg("catch_up") = CatchUp::bounded, py::arg("max_catch_up") = 0.1, py::arg("loop") = py::none(),
             py::arg("name") = "pacer")
        .def("stop", [](PyPacer& p) { without_gil([&] { p.pacer->stop(); }); })
        .def_property_readonly("running", [](const PyPacer& p) { return p.pacer->running(); })
        .def(
            "stats", [](const PyPacer& p) { return pacer_stats(without_gil([&] { return p.pacer->stats(); })); },
            "A dict: grants, on_time, late, unpaced, reanchors, dropped_ns, achieved_factor (over the rate "
            "window, None until known), target_factor, waited_ns, elapsed_ns, last_release.");

    py::class_<PyPublisher>(m, "ClockPublisher", R"(Publishes the time: a lockstep inline system granted every period of simulated time
(or at rate_hz), reading the time source during the access and publishing a
simsync.ClockMessage to every sink on the stepping thread; while paused it repeats the
frozen time from the event loop every paused_period seconds (0: not at all). A sink
added after the first message gets the last one at once.)")
        .def(py::init([](py::object handler, py::object source, py::handle period, py::handle rate_hz,
                         py::handle paused_period, const std::string& name, int priority, py::object loop) {
                 auto p = std::make_unique<PyPublisher>();
                 ClockPublisherConfig config;
                 config.name = name;
                 config.priority = priority;
                 if (!rate_hz.is_none()) {
                     config.schedule = PeriodicSchedule::from_rate(int_ns(rate_hz, "rate_hz"));
                 } else {
                     config.schedule = PeriodicSchedule::from_period(SimDuration{int_ns(period, "period")});
                 }
                 config.paused_period = timeout_arg(paused_period, "paused_period");
                 SimSyncHandler& h = handler_ref(handler);
                 const TimeSource& s = *py::cast<PySource&>(source).source;
                 const Executor executor = executor_arg(loop);
                 p->handler = handler;
                 p->source = source;
                 p->loop = loop;
                 p->publisher = std::make_unique<ClockPublisher>(h, s, config, executor);
                 return p;
             }),
             py::arg("handler"), py::arg("source"), py::kw_only(), py::arg("period") = 10'000'000,
             py::arg("rate_hz") = py::none(), py::arg("paused_period") = 0, py::arg("name") = "clock",
             py::arg("priority") = 0, py::arg("loop") = py::none())
        .def(
            "add_callback",
            [](PyPublisher& p, py::object callback) {
                if (!PyCallable_Check(callback.ptr())) invalid_argument("callback must be callable");
                PythonRef ref(callback);
                p.callbacks.push_back(ref);
                without_gil([&] {
                    p.publisher->add_callback([ref](const ClockMessage& message) {
                        if (!Py_IsInitialized()) return;
                        py::gil_scoped_acquire gil;
                        call_unraisable(ref, message_data(message));
                    });
                });
            },
            py::arg("callback"),
            "callback(message) on the stepping thread (or the loop's, while paused), GIL taken for the call.")
        .def(
            "add_udp_sink",
            [](PyPublisher& p, const std::string& host, int port) {
                if (port <= 0 || port > 65535) invalid_argument("port must be in 1..65535, got " + std::to_string(port));
                auto sink = std::make_unique<UdpClockSink>(host, static_cast<std::uint16_t>(port));
                without_gil([&] { p.publisher->add_sink(std::move(sink)); });
            },
            py::arg("host"), py::arg("port"),
            "Sends every message as one UDP datagram (the format of include/simsync/accessors/clock_udp.hpp) to host:port.")
        .def("start", [](PyPublisher& p) { without_gil([&] { p.publisher->start(); }); })
        .def("stop", [](PyPublisher& p) { without_gil([&] { p.publisher->stop(); }); })
        .def_property_readonly("running", [](const PyPublisher& p) { return p.publisher->running(); })
        .def_property_readonly("published", [](const PyPublisher& p) { return p.publisher->published(); })
        .def_property_readonly("sink_failures", [](const PyPublisher& p) { return p.publisher->sink_failures(); })
        .def(
            "last_message",
            [](const PyPublisher& p) -> py::object {
                auto message = p.publisher->last_message();
                return message ? message_data(*message) : py::none();
            });

    py::class_<PyTimer>(m, "PeriodicTimer", R"(Calls a function periodically, on real or simulated time.

clock="simulated": a lockstep accessor at offset + n * period (needs handler); the
callback runs with the access held. clock="real": fires at UNIX-epoch instants offset +
n * period (timers on different machines fire together); missed periods are skipped and
counted. start(callback) blocks the calling thread (GIL released between calls);
start_async(callback) runs on the event loop. callback(tick) gets a simsync.TimerTick,
with the GIL taken for the call.)")
        .def(py::init([](py::handle period, py::handle offset, py::handle clock, py::object handler,
                         const std::string& name, int priority, py::object loop) {
                 auto t = std::make_unique<PyTimer>();
                 PeriodicTimerConfig config;
                 config.name = name;
                 config.period = std::chrono::nanoseconds{int_ns(period, "period")};
                 config.offset = std::chrono::nanoseconds{int_ns(offset, "offset")};
                 config.clock = enum_arg<TimerClock>(clock, "clock");
                 config.priority = priority;
                 TimerContext context;
                 if (!handler.is_none()) context.handler = &handler_ref(handler);
                 context.executor = executor_arg(loop);
                 t->handler = handler;
                 t->loop = loop;
                 t->timer = std::make_unique<PeriodicTimer>(config, context);
                 return t;
             }),
             py::kw_only(), py::arg("period"), py::arg("offset") = 0, py::arg("clock") = TimerClock::real,
             py::arg("handler") = py::none(), py::arg("name") = "timer", py::arg("priority") = 0,
             py::arg("loop") = py::none())
        .def(
            "start",
            [](PyTimer& t, py::object callback) {
                PythonRef ref(callback);
                t.callback = ref;
                PythonRef world(t.handler.is_none() ? py::object(py::none()) : py::object(t.handler.attr("world")));
                without_gil([&] {
                    t.timer->start([ref, world](const TimerTick& tick) {
                        py::gil_scoped_acquire gil;
                        call_tick(ref, tick, world.get());
                    });
                });
            },
            py::arg("callback"), "Runs the timer on this thread until stop(); the callback's exceptions propagate.")
        .def(
            "start_async",
            [](PyTimer& t, py::object callback) {
                PythonRef ref(callback);
                t.callback = ref;
                PythonRef world(t.handler.is_none() ? py::object(py::none()) : py::object(t.handler.attr("world")));
                without_gil([&] {
                    t.timer->start_async([ref, world](const TimerTick& tick) {
                        py::gil_scoped_acquire gil;
                        try {
                            call_tick(ref, tick, world.get());
                        } catch (py::error_already_set& e) {
                            throw std::runtime_error(std::string("timer callback raised ") + e.what());
                        }
                    });
                });
            },
            py::arg("callback"), "Runs the timer on its event loop; returns at once. stop() re-raises a callback's error.")
        .def("stop", [](PyTimer& t) { without_gil([&] { t.timer->stop(); }); })
        .def_property_readonly("running", [](const PyTimer& t) { return t.timer->running(); })
        .def_property_readonly("calls", [](const PyTimer& t) { return t.timer->calls(); })
        .def_property_readonly("skipped", [](const PyTimer& t) { return t.timer->skipped(); });

    m.def(
        "load_scenario_file", [](const std::string& path) { return scenario_data(load_scenario_file(path)); },
        py::arg("path"),
        "Loads a scenario YAML file (docs: the config reference) as plain data (dicts and lists, times in ns). "
        "Raises ConfigError with file, line, column and key.");
    m.def(
        "load_scenario_string",
        [](const std::string& text, const std::string& name) { return scenario_data(load_scenario_string(text, name)); },
        py::arg("text"), py::arg("name") = "<config>", "As load_scenario_file, from a string.");
}

} // namespace simsync::python
