// The compiled part of the Python package simsync (simsync._simsync).
#include "common.hpp"

PYBIND11_MODULE(_simsync, m)
{
    namespace sp = simsync::python;
    m.doc() = "The compiled core of the simsync package; import simsync, not this module.";
    sp::bind_time_and_errors(m);
    sp::bind_worlds(m);
    sp::bind_accessor(m); // before the handler: its enums are the handler's default arguments
    sp::bind_handler(m);
    sp::bind_clocks(m);
#ifdef SIMSYNC_PYTHON_DDS
    sp::bind_remote(m); // simsync.RemoteAccessor: only with the dds adapter
#endif
}
