#include "remote_wire.hpp"

#include <bit>
#include <cmath>

namespace simsync::examples::host {

namespace {

class Writer {
public:
    explicit Writer(std::size_t size) { bytes_.reserve(size); }
    void u8(std::uint8_t v) { bytes_.push_back(v); }
    void u16(std::uint16_t v) { le(v, 2); }
    void i64(std::int64_t v) { le(static_cast<std::uint64_t>(v), 8); }
    void f64(double v) { le(std::bit_cast<std::uint64_t>(v), 8); }
    void header(const WireFormat& format, WireType type)
    {
        for (std::uint8_t b : format.magic) u8(b);
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
    void values(std::vector<double>& out, std::size_t n)
    {
        out.resize(n);
        for (double& v : out) v = f64();
    }
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
std::optional<WireError> check_header(const WireFormat& format, std::span<const std::uint8_t> bytes,
                                      std::size_t size, WireType type, Reader& r)
{
    // The magic first: a foreign payload is named as such, whatever its size.
    if (bytes.size() < format.magic.size()) return WireError::wrong_size;
    for (std::uint8_t b : format.magic) {
        if (r.u8() != b) return WireError::bad_magic;
    }
    if (bytes.size() < 8) return WireError::wrong_size;
    if (r.u16() != kWireVersion) return WireError::unsupported_version;
    if (r.u16() != static_cast<std::uint16_t>(type)) return WireError::wrong_type;
    if (bytes.size() != size) return WireError::wrong_size;
    return std::nullopt;
}

// Decodes one message of `type`: the header and size before `read_body`,
// every double finite after it; `read_body` may refuse the value itself
// (reserved bits).
template <class T, class ReadBody>
WireDecoded<T> decode_as(const WireFormat& format, std::span<const std::uint8_t> bytes, std::size_t size,
                         WireType type, ReadBody read_body)
{
    WireDecoded<T> d;
    Reader r(bytes);
    std::optional<WireError> error = check_header(format, bytes, size, type, r);
    T value;
    if (!error) error = read_body(r, value);
    if (!error && !r.finite()) error = WireError::not_finite;
    if (error) {
        d.error = *error;
    } else {
        d.value = std::move(value);
    }
    return d;
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

std::string WireErrorCounts::text() const
{
    std::string s;
    for (std::size_t i = 0; i < kWireErrorCount; ++i) {
        if (by_reason[i] == 0) continue;
        s += std::string(" ") + to_string(static_cast<WireError>(i)) + "=" + std::to_string(by_reason[i]);
    }
    return s;
}

std::vector<std::uint8_t> encode(const WireFormat& format, const ObservationFrame& o)
{
    Writer w(format.observation_size());
    w.header(format, WireType::observation);
    w.i64(o.granted.time_since_epoch().count());
    w.i64(o.end.time_since_epoch().count());
    w.u8(static_cast<std::uint8_t>((o.final ? kFinalFlag : 0) | (o.flags & format.flag_mask)));
    for (int i = 0; i < 7; ++i) w.u8(0);
    for (double v : o.values) w.f64(v);
    return w.take();
}

std::vector<std::uint8_t> encode(const WireFormat& format, const CommandFrame& c)
{
    Writer w(format.command_size());
    w.header(format, WireType::command);
    w.i64(c.granted.time_since_epoch().count());
    for (double v : c.values) w.f64(v);
    return w.take();
}

WireDecoded<ObservationFrame> decode_observation(const WireFormat& format, std::span<const std::uint8_t> bytes)
{
    return decode_as<ObservationFrame>(format, bytes, format.observation_size(), WireType::observation,
                                       [&](Reader& r, ObservationFrame& o) -> std::optional<WireError> {
        o.granted = SimTime{SimDuration{r.i64()}};
        o.end = SimTime{SimDuration{r.i64()}};
        const std::uint8_t flags = r.u8();
        std::uint8_t reserved = 0;
        for (int i = 0; i < 7; ++i) reserved |= r.u8();
        if ((flags & ~(kFinalFlag | format.flag_mask)) != 0 || reserved != 0) return WireError::reserved_bits;
        o.final = (flags & kFinalFlag) != 0;
        o.flags = static_cast<std::uint8_t>(flags & format.flag_mask);
        r.values(o.values, format.observation_values);
        return std::nullopt;
    });
}

WireDecoded<CommandFrame> decode_command(const WireFormat& format, std::span<const std::uint8_t> bytes)
{
    return decode_as<CommandFrame>(format, bytes, format.command_size(), WireType::command,
                                   [&](Reader& r, CommandFrame& c) -> std::optional<WireError> {
        c.granted = SimTime{SimDuration{r.i64()}};
        r.values(c.values, format.command_values);
        return std::nullopt;
    });
}

CommandVerdict accept_command(const WireFormat& format, SimTime granted, bool final,
                              std::span<const std::uint8_t> bytes)
{
    CommandVerdict v;
    if (final) {
        if (!bytes.empty()) v.refused = WireError::unexpected_command;
    } else if (bytes.empty()) {
        v.refused = WireError::missing_command;
    } else if (WireDecoded<CommandFrame> d = decode_command(format, bytes); !d) {
        v.refused = d.error;
    } else if (d.value->granted != granted) {
        v.refused = WireError::stale_command;
    } else {
        v.command = std::move(d.value);
    }
    return v;
}

} // namespace simsync::examples::host
