// Seeded text mutations of Trident files, for checking that the loaders reject every broken
// variant cleanly and accept only values that keep the documented constraints.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace trident::testing {

// One `key: value` in a file's text: [key_begin, value_end) spans both, the value starts at
// value_begin. Block keys whose value is a nested section have an empty value.
struct KeySpan {
  size_t key_begin = 0;
  size_t value_begin = 0;
  size_t value_end = 0;
};

// Every `key: value` of `text` (block and flow style), in text order; comments are skipped.
std::vector<KeySpan> FindKeys(std::string_view text);

// Values that sit on the edges of the integer, float and type ranges a loader must handle:
// 0, -1, 2^31, 2^32 + 64, 2^62, 2^63, 1e308, NaN, strings, empty, lists, maps, and each
// limit of core/README.md and one past it.
const std::vector<std::string>& BoundaryValues();

// One mutant of `text`: one to three edits drawn by `rng` among replacing a value (by a
// boundary value or a small change of the number there), deleting or duplicating a key or a
// line, swapping two lines, inserting an unknown key, appending a second document,
// truncating, and overwriting a byte with a YAML metacharacter.
std::string Mutate(std::string_view text, std::mt19937_64& rng);

}  // namespace trident::testing
