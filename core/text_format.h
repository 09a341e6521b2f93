// Human-readable numbers for reports and messages.
#pragma once

#include <cstdint>
#include <string>

namespace trident {

std::string FormatCount(int64_t value);  // 124439808 -> "124,439,808"
std::string FormatBytes(double bytes);   // 1572864 -> "1.50 MiB"
std::string FormatFlops(double flops);   // 2.5e12 -> "2.50 TFLOP"
std::string FormatFixed(double value, int decimals);
std::string FormatMs(double ms);  // 12.5 -> "12.50 ms", 18551 -> "18.551 s"

}  // namespace trident
