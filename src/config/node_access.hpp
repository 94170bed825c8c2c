#pragma once
// What the scenario loader (scenario.cpp) shares with ConfigNode
// (config_node.cpp): a node's representation, the loader's access to it, and
// the small helpers both read nodes with.

#include <simsync/config/config.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

namespace simsync {

inline bool valid(const YAML::Mark& mark) { return mark.line >= 0 && mark.column >= 0; }

inline std::string join_path(const std::string& parent, const std::string& key)
{
    return parent.empty() ? key : parent + "." + key;
}

template <class Range>
std::string join_names(const Range& names)
{
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + std::string(n);
    return list;
}

inline bool all_digits(std::string_view s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

struct ConfigNode::Impl {
    std::string file;
    YAML::Node node;
    std::string path;
    YAML::Mark mark; // of the node, or of its parent (or its key) when the node is missing or null
};

// The loader's access to the representation: children that keep a null value
// (a section written as `web:`), and the place of a key.
struct ConfigNodeAccess {
    static const ConfigNode::Impl& impl(const ConfigNode& n) { return *n.impl_; }

    static ConfigNode make(const std::string& file, const YAML::Node& node, std::string path, YAML::Mark mark)
    {
        return ConfigNode(std::make_shared<const ConfigNode::Impl>(ConfigNode::Impl{file, node, std::move(path), mark}));
    }

    // The value of `key` in the map `n`, null or not, placed at the value (or at
    // the key when the value has no place of its own). The key must be there.
    static ConfigNode member(const ConfigNode& n, const std::string& key)
    {
        const ConfigNode::Impl& i = *n.impl_;
        for (const auto& kv : i.node) {
            if (kv.first.Scalar() != key) continue;
            const YAML::Mark value_mark = kv.second.Mark();
            const bool has_place = !kv.second.IsNull() && valid(value_mark);
            return make(i.file, kv.second, join_path(i.path, key), has_place ? value_mark : kv.first.Mark());
        }
        n.fail_key(key, "required key is missing");
    }
};

} // namespace simsync
