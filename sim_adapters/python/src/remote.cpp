// simsync.RemoteAccessor and simsync.RemoteAccess (only with the dds adapter):
// an accessor of a host's handler in another process, over Cyclone DDS
// (simsync::dds::RemoteAccessor), payloads as bytes. Blocking requests wait
// with the GIL released; on the main thread Ctrl-C withdraws them, as for
// local accessors (accessor.cpp).
#include "common.hpp"

#include <simsync/dds/domain.hpp>
#include <simsync/dds/remote_accessor.hpp>
#include <simsync/dds/remote_asio.hpp>
#include <simsync/dds/ros2_clock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <pythread.h>

#include <condition_variable>
#include <cstdlib>
#include <cstdint>
#include <vector>

namespace simsync::python {
namespace {

namespace asio = boost::asio;
namespace sd = simsync::dds;

struct PyRemoteAccessor;

struct PyRemoteAccess {
    sd::RemoteAccess access;
    std::error_code error;
    std::int64_t requested = 0;
    std::int64_t granted = 0;
    std::uint64_t sequence = 0;
    py::bytes payload;
    py::object accessor; // the PyRemoteAccessor that asked (None if none)

    ~PyRemoteAccess()
    {
        if (access) without_gil([&] { access = sd::RemoteAccess{}; }); // releases it without commands
    }
};

struct PyRemoteAccessor {
    std::shared_ptr<sd::Participant> participant;
    std::unique_ptr<sd::RemoteAccessor> accessor;
    std::recursive_mutex signal_mutex;
    asio::cancellation_signal signal;

    // A RemoteAccess must not outlive the accessor's Participant: every
    // PyRemoteAccess keeps its PyRemoteAccessor alive, and the Participant
    // goes only with it (close() leaves the host but keeps it).
    ~PyRemoteAccessor()
    {
        without_gil([&] {
            accessor.reset();
            participant.reset();
        });
    }
    sd::RemoteAccessor& get()
    {
        if (!accessor) invalid_state("the RemoteAccessor is closed");
        return *accessor;
    }
    void close()
    {
        without_gil([&] { accessor.reset(); }); // deregisters at the host
    }
    void cancel()
    {
        without_gil([&] {
            std::lock_guard<std::recursive_mutex> guard(signal_mutex);
            signal.emit(asio::cancellation_type::terminal);
        });
    }
};

std::vector<std::uint8_t> bytes_arg(py::handle value, const char* field)
{
    if (value.is_none()) return {};
    if (!PyBytes_Check(value.ptr()) && !PyByteArray_Check(value.ptr()) && !PyMemoryView_Check(value.ptr())) {
        invalid_argument(std::string(field) + " must be bytes, got " + std::string(py::str(py::repr(value))));
    }
    const std::string s = py::bytes(py::reinterpret_borrow<py::object>(value));
    return {s.begin(), s.end()};
}

py::object make_remote_access(sd::RemoteAccess access, std::error_code error, py::object accessor, SimTime requested)
{
    auto a = std::make_unique<PyRemoteAccess>();
    a->error = error;
    a->requested = ns(requested);
    a->granted = ns(access.granted_time());
    a->sequence = access.sequence();
    const auto p = access.payload();
    a->payload = py::bytes(reinterpret_cast<const char*>(p.data()), p.size());
    a->accessor = std::move(accessor);
    a->access = std::move(access);
    return py::cast(std::move(a));
}

PyRemoteAccess& remote_access_of(py::handle object)
{
    try {
        return py::cast<PyRemoteAccess&>(object);
    } catch (const py::cast_error&) {
        invalid_argument("access must be a simsync.RemoteAccess, got " + std::string(py::str(py::repr(object))));
    }
}

unsigned long main_thread_ident()
{
    static const unsigned long ident =
        py::cast<unsigned long>(py::module_::import("threading").attr("main_thread")().attr("ident"));
    return ident;
}

struct RemoteWaiter {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    std::error_code error;
    sd::RemoteAccess access;
};

// A blocking request (or release_and_request when `held_object` is not None):
// started asynchronously with a C++-only completion, waited for without the
// GIL; on the main thread it wakes every 50 ms to run Python's signal
// handlers, and one that raises (Ctrl-C) withdraws the request (a grant that
// won the race is released) and its exception propagates. A timeout
// withdraws it with timed_out; cancel() with cancelled.
py::object remote_request(py::object self, SimTime t, py::handle timeout, py::handle held_object,
                          py::handle commands_object)
{
    PyRemoteAccessor& a = py::cast<PyRemoteAccessor&>(self);
    sd::RemoteAccessor& accessor = a.get();
    const bool main = PyThread_get_thread_ident() == main_thread_ident();
    const WallTime deadline = timeout.is_none() ? WallTime::max() : deadline_after(timeout_arg(timeout, "timeout"));
    std::vector<std::uint8_t> commands = bytes_arg(commands_object, "commands");
    PyRemoteAccess* held = nullptr;
    if (!held_object.is_none()) {
        held = &remote_access_of(held_object);
        if (!held->accessor.is(self) && !held->accessor.is_none()) {
            invalid_argument("access was granted to another RemoteAccessor ('" +
                             py::cast<std::string>(held->accessor.attr("name")) + "')");
        }
        // Checked here: async_release_and_request moves the access into its
        // initiation before it checks, so its refusal would lose it; these
        // leave it held, as the C++ blocking release_and_request promises.
        if (held->access && t < held->access.granted_time()) {
            invalid_argument("next = " + format_seconds(t) + " s is before the granted time " +
                             format_seconds(held->access.granted_time()) + " s");
        }
    }
    if (commands.size() > sd::remote::kMaxPayload) {
        invalid_argument("commands are " + std::to_string(commands.size()) + " bytes, above the " +
                         std::to_string(sd::remote::kMaxPayload) + " bytes of a remote payload");
    }
    auto waiter = std::make_shared<RemoteWaiter>();
    auto fill = [waiter](std::error_code error, sd::RemoteAccess access) {
        {
            std::lock_guard<std::mutex> guard(waiter->mutex);
            waiter->error = error;
            waiter->access = std::move(access);
            waiter->done = true;
        }
        waiter->cv.notify_all();
    };
    std::optional<py::error_already_set> interrupted;
    bool timed_out = false;
    {
        py::gil_scoped_release release;
        {
            std::lock_guard<std::recursive_mutex> guard(a.signal_mutex);
            auto handler = asio::bind_cancellation_slot(a.signal.slot(), std::move(fill));
            if (held != nullptr && held->access) {
                // Throws (invalid_argument, busy) with the access still held.
                accessor.async_release_and_request(std::move(held->access), t, std::move(commands),
                                                   std::move(handler));
            } else {
                accessor.async_request_access(t, std::move(handler));
            }
        }
        WaitOutcome outcome = wait_or_withdraw(*waiter, deadline, main, [&] { a.cancel(); });
        timed_out = outcome.timed_out;
        interrupted = std::move(outcome.interrupted);
        if (interrupted && waiter->access) waiter->access.release(waiter->access.granted_time());
    }
    if (interrupted) throw std::move(*interrupted);
    std::error_code error = waiter->error;
    if (timed_out && error == make_error_code(errc::cancelled)) error = make_error_code(errc::timed_out);
    return make_remote_access(std::move(waiter->access), error, self, t);
}

sd::DomainConfig domain_config(std::uint32_t domain, const std::string& network, const std::string& interface,
                               const std::vector<std::string>& peers, const std::string& tag, py::handle security)
{
    sd::DomainConfig config = sd::parse_network(network) == sd::Network::loopback ? sd::DomainConfig::loopback(domain)
                                                                                   : sd::DomainConfig{};
    config.id = domain;
    if (!interface.empty()) config.interface = interface;
    for (const std::string& p : peers) config.peers.push_back(p);
    config.tag = tag;
    if (!security.is_none()) {
        if (!py::isinstance<py::dict>(security)) {
            invalid_argument("security must be a dict of the six DDS Security files (identity_ca, certificate, "
                             "private_key, permissions_ca, governance, permissions)");
        }
        py::dict d = py::reinterpret_borrow<py::dict>(security);
        sd::SecurityFiles files;
        const auto field = [&](const char* key, std::string& out) {
            if (!d.contains(key)) invalid_argument(std::string("security: missing '") + key + "'");
            out = py::cast<std::string>(py::str(d[key]));
        };
        field("identity_ca", files.identity_ca);
        field("certificate", files.certificate);
        field("private_key", files.private_key);
        field("permissions_ca", files.permissions_ca);
        field("governance", files.governance);
        field("permissions", files.permissions);
        for (auto item : d) {
            const std::string key = py::cast<std::string>(py::str(item.first));
            if (key != "identity_ca" && key != "certificate" && key != "private_key" && key != "permissions_ca" &&
                key != "governance" && key != "permissions") {
                invalid_argument("security: unknown field '" + key + "'");
            }
        }
        config.security = files;
    }
    return config;
}

// A ROS 2 /clock sink added to a ClockPublisher, which owns it: this view
// keeps the publisher (and so the sink) alive and reads its counters.
struct PyRos2Sink {
    py::object publisher;
    const sd::Ros2ClockSink* sink = nullptr;
    std::string where; // the domain, for repr
};

// The domain of a ROS 2 endpoint: `domain` if given, else $ROS_DOMAIN_ID as
// ROS 2 nodes read it, else 0.
std::uint32_t ros2_domain(py::handle domain)
{
    if (!domain.is_none()) {
        if (!PyLong_Check(domain.ptr()) || PyBool_Check(domain.ptr())) {
            invalid_argument("domain must be an int (a DDS domain id) or None, got " +
                             std::string(py::str(py::repr(domain))));
        }
        const std::int64_t id = py::cast<std::int64_t>(domain);
        if (id < 0 || id > static_cast<std::int64_t>(sd::kMaxDomainId)) {
            invalid_argument("domain must be in 0.." + std::to_string(sd::kMaxDomainId) + ", got " +
                             std::to_string(id));
        }
        return static_cast<std::uint32_t>(id);
    }
    const char* env = std::getenv("ROS_DOMAIN_ID");
    if (env == nullptr || *env == '\0') return 0;
    char* end = nullptr;
    const unsigned long id = std::strtoul(env, &end, 10);
    if (*end != '\0' || id > sd::kMaxDomainId) {
        invalid_argument(std::string("ROS_DOMAIN_ID must be a domain id in 0..") + std::to_string(sd::kMaxDomainId) +
                         ", got '" + env + "'");
    }
    return static_cast<std::uint32_t>(id);
}

} // namespace

void bind_remote(py::module_& m)
{
    m.attr("REMOTE_PARTITION") = std::string(sd::remote::kPartition);

    py::class_<PyRemoteAccess>(m, "RemoteAccess", R"(A remote access: granted at one simulated instant by the host, or why not.

What Access is to a local accessor, without ``world``: the host's observation comes as
``payload`` (bytes) and the commands go back with ``release(commands=...)``, applied by
the host inside the access at the granted instant. Truthy while held; falsy if refused
(``refusal`` says why) or released. As a context manager, leaving the block releases it
(without commands). Dropping a held one releases it without commands.)")
        .def("__bool__", [](const PyRemoteAccess& a) { return static_cast<bool>(a.access); })
        .def_property_readonly(
            "held", [](const PyRemoteAccess& a) { return static_cast<bool>(a.access); },
            "True while the access is held.")
        .def_property_readonly(
            "refusal", [](const PyRemoteAccess& a) { return refusal_of(a.error); },
            "None if granted, else the simsync.Refusal (time_passed, stopped, timed_out, not_registered, "
            "cancelled, world_failed).")
        .def_property_readonly(
            "granted_time", [](const PyRemoteAccess& a) { return a.granted; }, "The granted grid instant (ns).")
        .def_property_readonly(
            "requested_time", [](const PyRemoteAccess& a) { return a.requested; }, "The time asked for (ns).")
        .def_property_readonly(
            "sequence", [](const PyRemoteAccess& a) { return a.sequence; },
            "Position of the grant in the host handler's total order of grants.")
        .def_property_readonly(
            "payload", [](const PyRemoteAccess& a) { return a.payload; },
            "The bytes the host sent with the grant (its observation); b'' if refused.")
        .def(
            "release",
            [](PyRemoteAccess& a, py::handle next, py::handle commands) {
                std::vector<std::uint8_t> bytes = bytes_arg(commands, "commands");
                if (!a.access) return;
                if (next.is_none()) {
                    without_gil([&] { a.access.release(bytes); });
                } else {
                    const SimTime t = sim_time_arg(next, "next");
                    without_gil([&] { a.access.release(t, bytes); });
                }
            },
            py::arg("next") = py::none(), py::arg("commands") = py::bytes(),
            R"(Releases the access (no-op if not held); the host applies ``commands`` (bytes)
inside it first. ``next`` (ns): atomically declares the next request's time. Raises
InvalidArgument if next is before the granted time or commands are too large (the
access is then still held).)")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__",
             [](PyRemoteAccess& a, py::args) {
                 if (a.access) without_gil([&] { a.access.release(); });
                 return false;
             })
        .def("__repr__", [](const PyRemoteAccess& a) {
            if (a.error) return "<simsync.RemoteAccess refused: " + a.error.message() + ">";
            return "<simsync.RemoteAccess granted_time=" + std::to_string(a.granted) + " sequence=" +
                   std::to_string(a.sequence) + (a.access ? "" : " released") + ">";
        });

    py::class_<PyRemoteAccessor>(m, "RemoteAccessor", R"(An accessor of a host's Handler in another process, over Cyclone DDS.

The host runs a simsync::dds::Bridge (e.g. ``simsync-bullet-host --remote-controller
wait``) in the same DDS domain, network, tag and partition. Construction joins: it
waits (up to ``join_timeout`` seconds, GIL released) for the host to match and welcome
it, and raises TimedOut, DuplicateName or InvalidState otherwise. The host registers it
under ``name`` with kind/mode/priority/first_request/lookahead and serves it under the
handler's grant rule, exactly as a local accessor. Requests return a RemoteAccess whose
``payload`` is bytes; commands go back as bytes with the release. One request at a time
(a second one raises Busy). ``close()`` (or leaving the ``with`` block) leaves the host.

``network``: ``"system"`` (Cyclone's defaults) or ``"loopback"`` (this machine only).
``security``: None, or a dict of the six DDS Security files (identity_ca, certificate,
private_key, permissions_ca, governance, permissions). ``lease`` (seconds): the
liveliness lease it offers the host.)")
        .def(py::init([](const std::string& name, std::uint32_t domain, const std::string& network,
                         const std::string& interface, std::vector<std::string> peers, const std::string& tag,
                         const std::string& partition, py::handle security, py::handle kind, py::handle mode,
                         int priority, py::handle first_request, py::handle lookahead, py::handle join_timeout,
                         py::handle lease) {
                 sd::DomainConfig config = domain_config(domain, network, interface, peers, tag, security);
                 AccessorOptions options;
                 options.kind = enum_arg<AccessorKind>(kind, "kind");
                 options.mode = enum_arg<AccessMode>(mode, "mode");
                 options.priority = priority;
                 if (!first_request.is_none()) options.first_request = sim_time_arg(first_request, "first_request");
                 options.lookahead = SimDuration{int_ns(lookahead, "lookahead")};
                 sd::RemoteAccessorConfig rc;
                 rc.partition = partition;
                 rc.join_timeout = timeout_arg(join_timeout, "join_timeout");
                 rc.lease = timeout_arg(lease, "lease");
                 auto a = std::make_unique<PyRemoteAccessor>();
                 without_gil([&] {
                     a->participant = sd::Participant::create(config);
                     a->accessor = std::make_unique<sd::RemoteAccessor>(a->participant, name, options, rc);
                 });
                 return a;
             }),
             py::arg("name"), py::kw_only(), py::arg("domain") = 0, py::arg("network") = "system",
             py::arg("interface") = "", py::arg("peers") = std::vector<std::string>{}, py::arg("tag") = "",
             py::arg("partition") = std::string(sd::remote::kPartition), py::arg("security") = py::none(),
             py::arg("kind") = AccessorKind::lockstep, py::arg("mode") = AccessMode::exclusive,
             py::arg("priority") = 0, py::arg("first_request") = py::none(), py::arg("lookahead") = 0,
             py::arg("join_timeout") = 10.0, py::arg("lease") = 1.0)
        .def_property_readonly("name", [](PyRemoteAccessor& a) { return a.get().name(); })
        .def_property_readonly(
            "step_size", [](PyRemoteAccessor& a) { return ns(a.get().step_size()); },
            "The host handler's step (ns), from the welcome.")
        .def_property_readonly(
            "now", [](PyRemoteAccessor& a) { return ns(without_gil([&] { return a.get().now(); })); },
            "The simulation's time (ns) as last heard from the host.")
        .def_property_readonly(
            "host_lost", [](PyRemoteAccessor& a) { return without_gil([&] { return a.get().host_lost(); }); },
            "True once the host's liveliness lease expired (its process died or the link is lost).")
        .def_property_readonly(
            "incarnation", [](PyRemoteAccessor& a) { return a.get().incarnation(); },
            "Random per object; carried by every message it sends.")
        .def(
            "request",
            [](py::object self, py::handle t, py::handle timeout) {
                return remote_request(self, sim_time_arg(t, "t"), timeout, py::none(), py::none());
            },
            py::arg("t"), py::kw_only(), py::arg("timeout") = py::none(),
            R"(Blocks (GIL released) until the host grants or refuses the access at t (ns); returns a
RemoteAccess. ``timeout`` (seconds): give up with Refusal.timed_out (the request is
withdrawn at the host). On the main thread Ctrl-C withdraws it and raises
KeyboardInterrupt; ``cancel()`` from another thread withdraws it with
Refusal.cancelled. Raises Busy if a request is pending or an access is held.)")
        .def(
            "release_and_request",
            [](py::object self, py::handle held, py::handle next, py::handle commands, py::handle timeout) {
                return remote_request(self, sim_time_arg(next, "next"), timeout, held, commands);
            },
            py::arg("access"), py::arg("next"), py::arg("commands") = py::bytes(), py::kw_only(),
            py::arg("timeout") = py::none(),
            R"(Releases ``access`` (the host applies ``commands``, bytes, inside it first) and asks for
``next`` in one message, then waits as request() does. ``access`` may be None or
released (a plain request). Raises InvalidArgument if it is another accessor's, next is
before its granted time or commands are too large (it is then still held).)")
        .def("cancel", &PyRemoteAccessor::cancel,
             "Withdraws the pending request, if any (it ends with Refusal.cancelled). Any thread.")
        .def("close", &PyRemoteAccessor::close, "Leaves the host (deregisters); later calls raise InvalidState.")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](PyRemoteAccessor& a, py::args) { a.close(); })
        .def("__repr__", [](PyRemoteAccessor& a) {
            return a.accessor ? "<simsync.RemoteAccessor '" + a.accessor->name() + "'>"
                              : std::string("<simsync.RemoteAccessor closed>");
        });

    py::class_<PyRos2Sink>(m, "Ros2ClockSink", R"(A ROS 2 /clock sink of a ClockPublisher (ClockPublisher.add_ros2_sink).

The publisher owns the sink and writes every message to it on the thread that
publishes (the stepping thread for ticks); this object reads its counters and
keeps the publisher alive. What a ROS 2 node with use_sim_time sees: its clock is
the publisher's time source; while paused, the frozen time repeated (unless
repeat_while_paused=False). A time before 0 or beyond int32 seconds is refused
(out_of_range), never wrapped; a write Cyclone refuses is counted in dropped.)")
        .def_property_readonly("written", [](const PyRos2Sink& s) { return s.sink->written(); },
                               "Samples handed to Cyclone DDS.")
        .def_property_readonly("dropped", [](const PyRos2Sink& s) { return s.sink->dropped(); },
                               "Writes Cyclone DDS refused (see last_error).")
        .def_property_readonly("out_of_range", [](const PyRos2Sink& s) { return s.sink->out_of_range(); },
                               "Times refused for being out of ROS 2's range.")
        .def_property_readonly("repeats_skipped", [](const PyRos2Sink& s) { return s.sink->repeats_skipped(); },
                               "Paused repeats skipped (repeat_while_paused=False).")
        .def_property_readonly("last_error", [](const PyRos2Sink& s) { return s.sink->last_error(); },
                               "The last refusal, '' if none.")
        .def_property_readonly("topic", [](const PyRos2Sink& s) { return s.sink->config().topic; },
                               "The DDS topic ('rt/clock' for ROS 2's /clock).")
        .def_property_readonly("matched_readers", [](const PyRos2Sink& s) { return s.sink->matched_readers(); },
                               "Readers currently matched, in any process.")
        .def(
            "wait_for_readers",
            [](const PyRos2Sink& s, std::size_t count, py::handle timeout) {
                const WallClock::duration limit = timeout_arg(timeout, "timeout");
                return without_gil([&] { return s.sink->wait_for_readers(count, limit); });
            },
            py::arg("count") = 1, py::arg("timeout") = 5,
            "Blocks (GIL released) until `count` readers are matched or `timeout` seconds pass; whether they are.")
        .def("__repr__", [](const PyRos2Sink& s) {
            return "<simsync.Ros2ClockSink " + s.sink->config().topic + " on " + s.where + ", " +
                   std::to_string(s.sink->written()) + " written>";
        });

    py::object publisher_class = m.attr("ClockPublisher");
    publisher_class.attr("add_ros2_sink") = py::cpp_function(
        [](py::object self, py::object domain, const std::string& network, const std::string& interface,
           const std::vector<std::string>& peers, const std::string& tag, py::handle security, const std::string& topic,
           bool repeat_while_paused) {
            ClockPublisher& publisher = clock_publisher_ref(self);
            sd::DomainConfig config = domain_config(ros2_domain(domain), network, interface, peers, tag, security);
            sd::Ros2ClockSinkConfig sink_config;
            sink_config.topic = sd::dds_topic_name(topic);
            sink_config.repeat_while_paused = repeat_while_paused;
            PyRos2Sink view;
            view.publisher = self;
            view.where = sd::describe(config);
            without_gil([&] {
                auto sink = std::make_unique<sd::Ros2ClockSink>(sd::Participant::create(config), sink_config);
                view.sink = sink.get();
                publisher.add_sink(std::move(sink));
            });
            return view;
        },
        py::name("add_ros2_sink"), py::is_method(publisher_class), py::kw_only(), py::arg("domain") = py::none(),
        py::arg("network") = "system", py::arg("interface") = "", py::arg("peers") = std::vector<std::string>{},
        py::arg("tag") = "", py::arg("security") = py::none(), py::arg("topic") = "/clock",
        py::arg("repeat_while_paused") = true,
        R"(Publishes every message as ROS 2 /clock over Cyclone DDS (rosgraph_msgs/msg/Clock on
DDS topic rt/clock, as rmw_cyclonedds and rmw_fastrtps exchange it); returns a
simsync.Ros2ClockSink with its counters.

domain: the DDS domain (ROS_DOMAIN_ID of the nodes; default $ROS_DOMAIN_ID, else 0).
network: "system" (Cyclone's defaults, what ROS 2 nodes use out of the box) or
"loopback" (this machine only; nodes need ROS_LOCALHOST_ONLY=1). interface, peers:
where to talk instead or also. tag: a Cyclone discovery tag (Cyclone peers only:
leave it empty for ROS 2). security: the six DDS Security files, as for
RemoteAccessor (SROS 2). topic: a ROS 2 name ("/clock", "/sim/clock") or a DDS one.
repeat_while_paused: write the frozen time at every paused message (default) or
only once.)");
}

} // namespace simsync::python
