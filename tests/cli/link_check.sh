#!/usr/bin/env bash
# Usage: link_check.sh BINARY [--expect-device]
#
# Whether BINARY can reach a device library (MPI, CUDA, cuBLAS, NCCL) by any road: a NEEDED
# entry of its dynamic section, a library ldd resolves for it (its dependencies' too), a
# statically linked entry point of one (MPI_Init[_thread], cudaMalloc, cublasCreate_v2,
# ncclCommInitRank, defined or imported), or a library name it could dlopen. Without
# --expect-device every one must be absent (`trident`); with it, at least one must be there (a
# binary that does link them, which shows the checks can fail).
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"

bin=$1
expect_device=${2:-}
name=$(basename "$bin")
libs='lib(mpi|mpi_cxx|open-pal|open-rte|pmix|cuda|cudart|cublas|cublasLt|nccl)\.so'
symbols='^(P?MPI_Init(_thread)?|cudaMalloc|cublasCreate_v2|ncclCommInitRank)$'

# found WHAT: what of the device libraries BINARY shows by that road, one per line.
found() {
  case $1 in
    needed) readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -E "$libs" ;;
    resolved) ldd "$bin" | awk '{print $1}' | grep -E "$libs" ;;
    symbols) nm -D "$bin" 2>/dev/null; nm "$bin" 2>/dev/null ;;
    strings) grep -aoE "${libs}[.0-9]*" "$bin" | sort -u ;;
  esac | if [[ $1 == symbols ]]; then awk '{print $NF}' | grep -E "$symbols" | sort -u; else cat; fi
}

any=""
for road in needed resolved symbols strings; do
  run found "$road"
  if [[ $expect_device == --expect-device ]]; then
    [[ -s $WORK/out ]] && any="$any $road"
    continue
  fi
  expect_empty out || {
    REASON="found $(tr '\n' ' ' <"$WORK/out")"
    false
  }
  verdict "$name has no device library by $road"
done
if [[ $expect_device == --expect-device ]]; then
  [[ -n $any ]] || { REASON="no device library found by any road" && false; }
  verdict "$name shows its device libraries by:${any:- nothing}"
  summary 1
else
  summary 4
fi
