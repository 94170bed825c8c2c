// Time sources, time scale, event loop, pacer, clock publisher, periodic
// timer and scenario files.
#include "common.hpp"

namespace simsync::python {

void bind_clocks(py::module_& m) { (void)m; }

} // namespace simsync::python
