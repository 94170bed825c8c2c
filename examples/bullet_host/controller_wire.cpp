#include "controller_wire.hpp"

#include <bit>
#include <cmath>

namespace simsync::examples::bullet_host {

namespace {

constexpr std::uint8_t kFinalFlag = 0x01;
constexpr std::uint8_t kAwakeFlag = 0x02;

class Writer {
public:
    explicit Writer(std::size_t size) { bytes_.reserve(size); }
    void u8(std::uint8_t v) { bytes_.push_back(v); }
    void u16(std::uint16_t v) { le(v, 2); }
    void i64(std::int64_t v) { le(static_cast<std::uint64_t>(v), 8); }
    void f64(double v) { le(std::bit_cast<std::uint64_t>(v), 8); }
    void header(WireType type)
    {
        for (std::uint8_t b : kWireMagic) u8(b);
        u16(kWireVersion);
        u16(static_cast<std::uint16_t>(type));
    }
    std::vector<std::uint8_t> take() { return std::move(bytes_); }

private:
    void le(std::uint64_t v, int n)
    {
        for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    std::vector<std::uint8_t> bytes_;
};

// Reads fields in order; the caller has checked the size, so no read passes the end.
class Reader {
public:
    explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
    std::uint8_t u8() { return bytes_[at_++]; }
    std::uint16_t u16() { return static_cast<std::uint16_t>(le(2)); }
    std::int64_t i64() { return static_cast<std::int64_t>(le(8)); }
    double f64()
    {
        const double v = std::bit_cast<double>(le(8));
        if (!std::isfinite(v)) finite_ = false;
        return v;
    }
    sb::Vec3 vec3() { return {f64(), f64(), f64()}; }
    bool finite() const { return finite_; }

private:
    std::uint64_t le(int n)
    {
        std::uint64_t v = 0;
        for (int i = 0; i < n; ++i) v |= std::uint64_t{bytes_[at_++]} << (8 * i);
        return v;
    }
    std::span<const std::uint8_t> bytes_;
    std::size_t at_ = 0;
    bool finite_ = true;
};

// The checks every message shares; on success `r` is past the header.
std::optional<WireError> check_header(std::span<const std::uint8_t> bytes, std::size_t size, WireType type, Reader& r)
{
    // The magic first: a foreign payload is named as such, whatever its size.
    if (bytes.size() < kWireMagic.size()) return WireError::wrong_size;
    for (std::uint8_t b : kWireMagic) {
        if (r.u8() != b) return WireError::bad_magic;
    }
    if (bytes.size() < 8) return WireError::wrong_size;
    if (r.u16() != kWireVersion) return WireError::unsupported_version;
    if (r.u16() != static_cast<std::uint16_t>(type)) return WireError::wrong_type;
    if (bytes.size() != size) return WireError::wrong_size;
    return std::nullopt;
}

// Decodes one message of `type`: the checks every message shares (the header
// and size before `read_body`, every double finite after it) around
// `read_body`, which reads the fields past the header into the value and may
// refuse it itself (reserved bits).
template <class T, class ReadBody>
WireDecoded<T> decode_as(std::span<const std::uint8_t> bytes, std::size_t size, WireType type, ReadBody read_body)
{
    WireDecoded<T> d;
    Reader r(bytes);
    std::optional<WireError> error = check_header(bytes, size, type, r);
    T value;
    if (!error) error = read_body(r, value);
    if (!error && !r.finite()) error = WireError::not_finite;
    if (error) {
        d.error = *error;
    } else {
        d.value = value;
    }
    return d;
}

// The fields past the header, into `o`.
std::optional<WireError> read_observation(Reader& r, Observation& o)
{
    o.granted = SimTime{SimDuration{r.i64()}};
    o.end = SimTime{SimDuration{r.i64()}};
    const std::uint8_t flags = r.u8();
    std::uint8_t reserved = 0;
    for (int i = 0; i < 7; ++i) reserved |= r.u8();
    if ((flags & ~(kFinalFlag | kAwakeFlag)) != 0 || reserved != 0) return WireError::reserved_bits;
    o.final = (flags & kFinalFlag) != 0;
    sb::BodyState& s = o.body.state;
    s.awake = (flags & kAwakeFlag) != 0;
    o.body.mass = r.f64();
    s.pose.position = r.vec3();
    s.pose.orientation.x = r.f64();
    s.pose.orientation.y = r.f64();
    s.pose.orientation.z = r.f64();
    s.pose.orientation.w = r.f64();
    s.linear_velocity = r.vec3();
    s.angular_velocity = r.vec3();
    return std::nullopt;
}

std::optional<WireError> read_command(Reader& r, Command& c)
{
    c.granted = SimTime{SimDuration{r.i64()}};
    c.impulse = r.vec3();
    return std::nullopt;
}

} // namespace

const char* to_string(WireError error) noexcept
{
    switch (error) {
    case WireError::wrong_size: return "wrong_size";
    case WireError::bad_magic: return "bad_magic";
    case WireError::unsupported_version: return "unsupported_version";
    case WireError::wrong_type: return "wrong_type";
    case WireError::reserved_bits: return "reserved_bits";
    case WireError::not_finite: return "not_finite";
    case WireError::stale_command: return "stale_command";
    case WireError::unexpected_command: return "unexpected_command";
    case WireError::missing_command: return "missing_command";
    case WireError::stale_observation: return "stale_observation";
    }
    return "unknown";
}

std::uint64_t WireErrorCounts::total() const noexcept
{
    std::uint64_t n = 0;
    for (std::uint64_t c : by_reason) n += c;
    return n;
}

std::vector<std::uint8_t> encode(const Observation& o)
{
    Writer w(kObservationSize);
    w.header(WireType::observation);
    w.i64(o.granted.time_since_epoch().count());
    w.i64(o.end.time_since_epoch().count());
    w.u8(static_cast<std::uint8_t>((o.final ? kFinalFlag : 0) | (o.body.state.awake ? kAwakeFlag : 0)));
    for (int i = 0; i < 7; ++i) w.u8(0);
    const sb::BodyState& s = o.body.state;
    w.f64(o.body.mass);
    w.f64(s.pose.position.x), w.f64(s.pose.position.y), w.f64(s.pose.position.z);
    w.f64(s.pose.orientation.x), w.f64(s.pose.orientation.y), w.f64(s.pose.orientation.z);
    w.f64(s.pose.orientation.w);
    w.f64(s.linear_velocity.x), w.f64(s.linear_velocity.y), w.f64(s.linear_velocity.z);
    w.f64(s.angular_velocity.x), w.f64(s.angular_velocity.y), w.f64(s.angular_velocity.z);
    return w.take();
}

std::vector<std::uint8_t> encode(const Command& c)
{
    Writer w(kCommandSize);
    w.header(WireType::command);
    w.i64(c.granted.time_since_epoch().count());
    w.f64(c.impulse.x), w.f64(c.impulse.y), w.f64(c.impulse.z);
    return w.take();
}

WireDecoded<Observation> decode_observation(std::span<const std::uint8_t> bytes)
{
    return decode_as<Observation>(bytes, kObservationSize, WireType::observation, read_observation);
}

WireDecoded<Command> decode_command(std::span<const std::uint8_t> bytes)
{
    return decode_as<Command>(bytes, kCommandSize, WireType::command, read_command);
}

} // namespace simsync::examples::bullet_host
