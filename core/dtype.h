// Element types of tensors, and the names files use for them.
#pragma once

#include <string>

#include "core/names.h"

namespace trident {

enum class DType { kFp32, kBf16, kFp16 };

int DTypeBytes(DType dtype);
const NameTable<DType>& DTypeNames();  // "fp32", "bf16", "fp16"
inline const std::string& DTypeName(DType dtype) { return NameOf(DTypeNames(), dtype); }

}  // namespace trident
