#include <simsync/core/error.hpp>
#include <simsync/dds/qos.hpp>

namespace simsync::dds {

const char* to_string(Reliability r) noexcept
{
    return r == Reliability::reliable ? "reliable" : "best_effort";
}

const char* to_string(Durability d) noexcept
{
    return d == Durability::transient_local ? "transient_local" : "volatile";
}

Reliability parse_reliability(const std::string& name)
{
    if (name == "reliable") return Reliability::reliable;
    if (name == "best_effort") return Reliability::best_effort;
    throw Error(errc::invalid_argument, "DDS reliability must be 'reliable' or 'best_effort', got '" + name + "'");
}

Durability parse_durability(const std::string& name)
{
    if (name == "volatile") return Durability::volatile_;
    if (name == "transient_local") return Durability::transient_local;
    throw Error(errc::invalid_argument,
                "DDS durability must be 'volatile' or 'transient_local', got '" + name + "'");
}

std::string describe(const Qos& qos)
{
    return std::string(to_string(qos.reliability)) + ", " + to_string(qos.durability) + ", " +
           (qos.depth == 0 ? std::string("keep all") : "keep last " + std::to_string(qos.depth));
}

} // namespace simsync::dds
