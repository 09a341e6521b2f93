#include "core/digest.h"

#include <cstdint>
#include <cstdio>

namespace trident {

std::string ContentDigest(std::string_view text) {
  uint64_t hash = 14695981039346656037ULL;  // FNV-1a offset basis
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;  // FNV prime
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

}  // namespace trident
