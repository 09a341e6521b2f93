#include "core/dtype.h"

namespace trident {

int DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kFp32:
      return 4;
    case DType::kBf16:
    case DType::kFp16:
      return 2;
  }
  return 4;
}

const NameTable<DType>& DTypeNames() {
  static const NameTable<DType> kNames = {
      {"fp32", DType::kFp32}, {"bf16", DType::kBf16}, {"fp16", DType::kFp16}};
  return kNames;
}

}  // namespace trident
