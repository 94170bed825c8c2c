#pragma once
/// @file
/// A 64-bit hash over the exact bytes of simulation states, to compare whole
/// trajectories between runs (the engine adapters' trajectory hashes).

#include <cstddef>
#include <cstdint>
#include <string>

namespace simsync {

/// 64-bit FNV-1a over a sequence of bytes. Not cryptographic: it exists to tell
/// two trajectories apart when a single bit of any state differs, cheaply.
///
/// Copy/move: both (plain value). Thread safety: distinct objects: safe; shared
/// objects: unsafe.
///
/// Two runs feed the same bytes in the same order exactly when they agree. An
/// engine adapter feeds its own representation (Bullet's btScalar, float or
/// double by build; MuJoCo's mjtNum), so hashes compare only between runs of the
/// same build. Engine-independent, hence in the core: each adapter's hash_state
/// feeds one.
class TrajectoryHash {
public:
    /// Feeds `size` bytes.
    void add_bytes(const void* data, std::size_t size) noexcept;
    /// Feeds the object representation of a trivially copyable value.
    template <class T>
    void add(const T& value) noexcept
    {
        add_bytes(&value, sizeof(T));
    }

    std::uint64_t value() const noexcept { return state_; }
    /// Number of bytes fed so far.
    std::uint64_t size() const noexcept { return size_; }
    /// The value as 16 lower-case hex digits.
    std::string hex() const;

private:
    static constexpr std::uint64_t kOffsetBasis = 0xcbf29ce484222325ULL;
    std::uint64_t state_ = kOffsetBasis;
    std::uint64_t size_ = 0;
};

/// Formats a 64-bit value as 16 lower-case hex digits.
std::string to_hex(std::uint64_t value);

} // namespace simsync
