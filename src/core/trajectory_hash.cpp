#include <simsync/core/trajectory_hash.hpp>

namespace simsync {

void TrajectoryHash::add_bytes(const void* data, std::size_t size) noexcept
{
    constexpr std::uint64_t kPrime = 0x100000001b3ULL;
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) {
        state_ ^= bytes[i];
        state_ *= kPrime;
    }
    size_ += size;
}

std::string TrajectoryHash::hex() const { return to_hex(state_); }

std::string to_hex(std::uint64_t value)
{
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out(16, '0');
    for (int i = 15; i >= 0; --i) {
        out[static_cast<std::size_t>(i)] = kDigits[value & 0xf];
        value >>= 4;
    }
    return out;
}

} // namespace simsync
