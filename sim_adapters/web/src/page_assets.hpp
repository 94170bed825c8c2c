#pragma once
// The console's page, compiled into the library at build time from the files in
// sim_adapters/web/page/ (cmake/embed_page.cmake writes page_assets.cpp), so it
// is served without any file on disk and works offline.

#include <cstddef>
#include <string_view>

namespace simsync::web::detail {

struct PageAsset {
    const char* path;         // "/" for index.html, "/<file>" for the others
    const char* content_type; // with charset for text
    const unsigned char* data;
    std::size_t size;
};

extern const PageAsset kPageAssets[];
extern const std::size_t kPageAssetCount;

// The asset served at `path` (without query), or nullptr.
inline const PageAsset* find_page_asset(std::string_view path)
{
    for (std::size_t i = 0; i < kPageAssetCount; ++i) {
        if (path == kPageAssets[i].path) return &kPageAssets[i];
    }
    return nullptr;
}

} // namespace simsync::web::detail
