// Content digests for provenance: which profile and cluster a plan was made from.
#pragma once

#include <string>
#include <string_view>

namespace trident {

// 64-bit FNV-1a of `text` as 16 hex digits. Identifies content; not a security hash.
std::string ContentDigest(std::string_view text);

}  // namespace trident
