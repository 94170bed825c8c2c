// The reference model of the grant contract (tests/model/grant_model.hpp),
// bound for the Python tests: they compute the sequence the contract fixes
// for a scenario with it and compare the handler's, driven from Python.
#include "model/grant_model.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;
using simsync::SimDuration;
using simsync::SimTime;
using simsync::model::GrantModel;
using simsync::model::ModelOptions;

namespace {
SimTime at(std::int64_t ns) { return SimTime{SimDuration{ns}}; }
std::int64_t ns(SimTime t) { return t.time_since_epoch().count(); }
} // namespace

PYBIND11_MODULE(_grant_model, m)
{
    m.doc() = "The C++ reference model of the grant contract (tests/model/grant_model.hpp); tests only.";
    py::class_<GrantModel>(m, "GrantModel")
        .def(py::init([](std::int64_t dt, const std::string& rounding, bool start_paused) {
                 return GrantModel(SimDuration{dt}, simsync::parse_rounding(rounding), start_paused);
             }),
             py::arg("dt"), py::arg("rounding") = "nearest", py::arg("start_paused") = false)
        .def(
            "add",
            [](GrantModel& g, bool lockstep, bool shared, int priority, std::optional<std::int64_t> first,
               std::int64_t lookahead, const std::string& name) {
                ModelOptions o;
                o.kind = lockstep ? simsync::AccessorKind::lockstep : simsync::AccessorKind::free;
                o.mode = shared ? simsync::AccessMode::shared : simsync::AccessMode::exclusive;
                o.priority = priority;
                if (first) o.first_request = at(*first);
                o.lookahead = SimDuration{lookahead};
                return g.add(o, name);
            },
            py::arg("lockstep") = true, py::arg("shared") = false, py::arg("priority") = 0,
            py::arg("first_request") = py::none(), py::arg("lookahead") = 0, py::arg("name") = "")
        .def("request", [](GrantModel& g, std::size_t i, std::int64_t t) { return g.request(i, at(t)); })
        .def("release", [](GrantModel& g, std::size_t i) { g.release(i); })
        .def("release_next", [](GrantModel& g, std::size_t i, std::int64_t t) { g.release(i, at(t)); })
        .def("pause", &GrantModel::pause)
        .def("resume", &GrantModel::resume)
        .def("step", &GrantModel::step)
        .def("run_until", [](GrantModel& g, std::int64_t t) { g.run_until(at(t)); })
        .def("advance", &GrantModel::advance)
        .def("grantable", &GrantModel::grantable)
        .def("grant", [](GrantModel& g, std::size_t i) {
            auto r = g.grant(i);
            return py::make_tuple(r.accessor, ns(r.time), r.sequence, r.repeat);
        })
        .def("now", [](const GrantModel& g) { return ns(g.now()); })
        .def("round", [](const GrantModel& g, std::int64_t t) { return ns(g.round(at(t))); })
        .def("idle", &GrantModel::idle)
        .def("pending", &GrantModel::pending)
        .def("holding", &GrantModel::holding);
}
