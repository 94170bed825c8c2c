#pragma once
// The console's incoming messages: one JSON object per WebSocket text message,
//   {"type": "hello", "token": "<token, optional>"}       first, and only first
//   {"type": "command", "id": <integer, optional>, "text": "<command line>"}
//   {"type": "ping"}                                       keeps a viewer open
// Anything else is malformed and closes the connection (see console.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace simsync::web::detail {

struct IncomingCommand {
    enum class Kind { hello, command, ping };
    Kind kind = Kind::command;
    std::optional<std::int64_t> id; // command
    std::string text;               // command
    std::string token;              // hello ("" when not given)
};

// Longest command line accepted inside a message.
inline constexpr std::size_t kMaxCommandText = 256;
// Longest token accepted inside a hello.
inline constexpr std::size_t kMaxTokenText = 256;

// Parses one message. Returns the command, or sets `error` to why the message is
// malformed (a short sentence for the close reason) and returns nullopt.
std::optional<IncomingCommand> parse_incoming(std::string_view message, std::string& error);

} // namespace simsync::web::detail
