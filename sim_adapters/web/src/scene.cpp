#include <simsync/web/scene.hpp>

namespace simsync::web {

const char* to_string(ShapeKind kind) noexcept
{
    switch (kind) {
    case ShapeKind::sphere: return "sphere";
    case ShapeKind::box: return "box";
    }
    return "?";
}

} // namespace simsync::web
