#include "protocol.hpp"

#include <charconv>
#include <cstdint>

namespace simsync::web::detail {

namespace {

// A strict reader of the one message shape the console accepts: a flat JSON
// object whose values are strings or integers (RFC 8259 syntax). Anything else
// is reported, never skipped. Written here rather than taken from Boost.JSON,
// whose compiled-in definitions would clash with a user's own copy of them when
// both end up in one program.
class Reader {
public:
    explicit Reader(std::string_view text) : s_(text) {}

    enum class Kind { string, integer, other };

    void skip_blanks()
    {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }
    bool eat(char c)
    {
        skip_blanks();
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    bool at_end()
    {
        skip_blanks();
        return i_ == s_.size();
    }
    char peek()
    {
        skip_blanks();
        return i_ < s_.size() ? s_[i_] : '\0';
    }

    // A JSON string into UTF-8; false if it is not one.
    bool string(std::string& out)
    {
        if (!eat('"')) return false;
        out.clear();
        while (i_ < s_.size()) {
            const auto c = static_cast<unsigned char>(s_[i_++]);
            if (c == '"') return true;
            if (c < 0x20) return false; // control characters must be escaped
            if (c != '\\') {
                out += static_cast<char>(c);
                continue;
            }
            if (i_ >= s_.size()) return false;
            const char e = s_[i_++];
            switch (e) {
            case '"': out += '"'; break;
            case '\\': out += '\\'; break;
            case '/': out += '/'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u': {
                std::uint32_t cp = 0;
                if (!hex4(cp)) return false;
                if (cp >= 0xD800 && cp <= 0xDBFF) { // a surrogate pair
                    std::uint32_t low = 0;
                    if (i_ + 1 >= s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') return false;
                    i_ += 2;
                    if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return false;
                }
                append_utf8(out, cp);
                break;
            }
            default: return false;
            }
        }
        return false;
    }

    // What the next value is, without consuming it.
    Kind next_kind()
    {
        const char c = peek();
        if (c == '"') return Kind::string;
        if (c == '-' || (c >= '0' && c <= '9')) return Kind::integer;
        return Kind::other;
    }

    // An integer (no fraction, no exponent); false otherwise.
    bool integer(std::int64_t& out)
    {
        skip_blanks();
        std::size_t end = i_;
        if (end < s_.size() && s_[end] == '-') ++end;
        const std::size_t digits = end;
        while (end < s_.size() && s_[end] >= '0' && s_[end] <= '9') ++end;
        if (end == digits || (s_[digits] == '0' && end - digits > 1)) return false; // no digits, or a leading zero
        if (end < s_.size() && (s_[end] == '.' || s_[end] == 'e' || s_[end] == 'E')) return false;
        const auto [p, ec] = std::from_chars(s_.data() + i_, s_.data() + end, out);
        if (ec != std::errc{} || p != s_.data() + end) return false;
        i_ = end;
        return true;
    }

private:
    bool hex4(std::uint32_t& out)
    {
        if (i_ + 4 > s_.size()) return false;
        out = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = s_[i_++];
            out <<= 4;
            if (c >= '0' && c <= '9') out |= static_cast<std::uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f') out |= static_cast<std::uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') out |= static_cast<std::uint32_t>(c - 'A' + 10);
            else return false;
        }
        return true;
    }
    static void append_utf8(std::string& out, std::uint32_t cp)
    {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    std::string_view s_;
    std::size_t i_ = 0;
};

} // namespace

std::optional<IncomingCommand> parse_incoming(std::string_view message, std::string& error)
{
    Reader r(message);
    auto fail = [&](std::string why) {
        error = std::move(why);
        return std::nullopt;
    };
    if (r.peek() != '{') return fail("not a JSON object");
    r.eat('{');
    IncomingCommand command;
    std::string type;
    bool has_type = false;
    bool has_text = false;
    bool has_token = false;
    if (!r.eat('}')) {
        for (;;) {
            std::string key;
            if (!r.string(key)) return fail("not JSON (expected a quoted field name)");
            if (!r.eat(':')) return fail("not JSON (expected ':')");
            if ((key == "type" && has_type) || (key == "text" && has_text) || (key == "id" && command.id) ||
                (key == "token" && has_token)) {
                return fail("field \"" + key + "\" given twice");
            }
            if (key == "type") {
                if (r.next_kind() != Reader::Kind::string || !r.string(type) ||
                    (type != "command" && type != "hello" && type != "ping")) {
                    return fail("\"type\" must be \"hello\", \"command\" or \"ping\"");
                }
                has_type = true;
            } else if (key == "id") {
                std::int64_t id = 0;
                if (r.next_kind() != Reader::Kind::integer || !r.integer(id)) return fail("\"id\" must be an integer");
                command.id = id;
            } else if (key == "text" || key == "token") {
                std::string& out = key == "text" ? command.text : command.token;
                const std::size_t most = key == "text" ? kMaxCommandText : kMaxTokenText;
                const std::string quoted = "\"" + key + "\"";
                if (r.next_kind() != Reader::Kind::string) return fail(quoted + " must be a string");
                if (!r.string(out)) return fail("not JSON (a bad string in " + quoted + ")");
                if (out.size() > most) return fail(quoted + " is longer than " + std::to_string(most) + " bytes");
                (key == "text" ? has_text : has_token) = true;
            } else {
                std::string shown;
                for (const char c : key.substr(0, 32)) shown += (static_cast<unsigned char>(c) < 0x80) ? c : '?';
                return fail("unknown field \"" + shown + "\"");
            }
            if (r.eat(',')) continue;
            if (r.eat('}')) break;
            return fail("not JSON (expected ',' or '}')");
        }
    }
    if (!r.at_end()) return fail("not JSON (text after the object)");
    if (!has_type) return fail("a message needs \"type\"");
    // Each type takes its own fields only: a token must never ride along with
    // a command, where a log of commands would keep it.
    if (type == "command") {
        if (!has_text) return fail("a command needs \"text\"");
        if (has_token) return fail("\"token\" belongs in the hello only");
        command.kind = IncomingCommand::Kind::command;
    } else if (type == "hello") {
        if (has_text || command.id) return fail("a hello takes \"token\" only");
        command.kind = IncomingCommand::Kind::hello;
    } else {
        if (has_text || command.id || has_token) return fail("a ping takes no fields");
        command.kind = IncomingCommand::Kind::ping;
    }
    return command;
}

} // namespace simsync::web::detail
