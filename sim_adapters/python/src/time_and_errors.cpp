// simsync's time helpers and the translation of its errors into Python.
#include "common.hpp"

#include <cmath>
#include <limits>

namespace simsync::python {

py::object errors_module()
{
    static py::object* module = new py::object(py::module_::import("simsync._errors")); // lives as long as the process
    return *module;
}

py::object data_module()
{
    static py::object* module = new py::object(py::module_::import("simsync._data"));
    return *module;
}

void invalid_argument(const std::string& message) { throw Error(errc::invalid_argument, message); }
void invalid_state(const std::string& message) { throw Error(errc::invalid_state, message); }

std::int64_t int_ns(py::handle value, const char* field)
{
    if (value.is_none() || PyBool_Check(value.ptr()) || PyFloat_Check(value.ptr()) || !PyIndex_Check(value.ptr())) {
        invalid_argument(std::string(field) + " must be an int of nanoseconds (simsync.seconds(), simsync.ms() "
                         "make one), got " + std::string(py::str(py::repr(value))));
    }
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
    if (!index) throw py::error_already_set();
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow != 0) {
        invalid_argument(std::string(field) + " = " + std::string(py::str(index)) +
                         " ns is out of range (a signed 64-bit count of nanoseconds: simsync.NEVER is the largest)");
    }
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    return v;
}

WallClock::duration timeout_arg(py::handle seconds, const char* field)
{
    if (PyBool_Check(seconds.ptr()) || !(PyFloat_Check(seconds.ptr()) || PyIndex_Check(seconds.ptr()))) {
        invalid_argument(std::string(field) + " must be a number of seconds, got " + std::string(py::str(py::repr(seconds))));
    }
    const double s = py::cast<double>(seconds);
    if (std::isnan(s) || s < 0) invalid_argument(std::string(field) + " must be >= 0 seconds, got " + std::to_string(s));
    if (s >= 1e9) return WallClock::duration::max(); // ~31 years: forever
    return std::chrono::duration_cast<WallClock::duration>(std::chrono::duration<double>(s));
}

py::object refusal_of(std::error_code error)
{
    if (!error) return py::none();
    if (error.category() == error_category() && error.value() >= 1 && error.value() <= 7) {
        return errors_module().attr("Refusal")(error.value());
    }
    return py::str(error.message());
}

void bind_time_and_errors(py::module_& m)
{
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const ConfigError& e) {
            py::object cls = errors_module().attr("ConfigError");
            py::object exc = cls(e.what(), e.code().value(), e.file(), e.line(), e.column(), e.key());
            PyErr_SetObject(cls.ptr(), exc.ptr());
        } catch (const Error& e) {
            py::object exc = errors_module().attr("_error_for")(e.code().value(), e.what());
            PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
        } catch (const std::bad_cast& e) {
            PyErr_SetString(PyExc_TypeError, e.what());
        }
    });

    py::enum_<Rounding>(m, "Rounding", "How a requested time is mapped onto the step grid k * dt.")
        .value("nearest", Rounding::nearest, "closest grid point; a tie goes up (towards the future). The default.")
        .value("up", Rounding::up, "the first grid point at or after the time")
        .value("down", Rounding::down, "the last grid point at or before the time");

    m.attr("NEVER") = std::numeric_limits<std::int64_t>::max();
    m.attr("BEFORE_EVERYTHING") = std::numeric_limits<std::int64_t>::min();

    m.def(
        "round_to_grid",
        [](py::handle t, py::handle dt, Rounding policy) {
            return ns(round_to_grid(sim_time_arg(t, "t"), SimDuration{int_ns(dt, "dt")}, policy));
        },
        py::arg("t"), py::arg("dt"), py::arg("rounding") = Rounding::nearest,
        R"(Rounds ``t`` (ns) to the grid ``k * dt`` with ``rounding``; pure integer arithmetic.

Example, dt = 1 ms: 33.333 ms -> 33 ms (nearest), 66.667 ms -> 67 ms, 0.5 ms -> 1 ms
(a tie goes up). NEVER and BEFORE_EVERYTHING round to themselves; the grid saturates
at the ends of the int64 range. Raises InvalidArgument if dt <= 0.)");
    m.def(
        "next_instant_after",
        [](py::handle granted, py::handle wanted, py::handle dt, Rounding policy) {
            return ns(next_instant_after(sim_time_arg(granted, "granted"), sim_time_arg(wanted, "wanted"),
                                         SimDuration{int_ns(dt, "dt")}, policy));
        },
        py::arg("granted"), py::arg("wanted"), py::arg("dt"), py::arg("rounding") = Rounding::nearest,
        "The time an accessor that always asks again should ask for after a grant at ``granted`` when its "
        "schedule says ``wanted``: ``wanted`` if it rounds later than ``granted``, else the next grid instant.");
    m.def(
        "format_seconds", [](py::handle t) { return format_seconds(sim_time_arg(t, "t")); }, py::arg("t"),
        "Formats nanoseconds as seconds with nanosecond precision, e.g. '1.033000000'.");
}

} // namespace simsync::python
