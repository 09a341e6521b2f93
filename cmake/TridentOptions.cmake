# Build options. CUDA, NCCL and MPI are AUTO by default: on when found, with a one-line
# notice when not. Setting one to ON makes its absence an error; OFF skips the search.
set(TRIDENT_CUDA AUTO CACHE STRING "Build the CUDA backend (AUTO, ON, OFF)")
set(TRIDENT_NCCL AUTO CACHE STRING "Build the NCCL backend (AUTO, ON, OFF)")
set(TRIDENT_MPI AUTO CACHE STRING "Build the MPI backend (AUTO, ON, OFF)")
set_property(CACHE TRIDENT_CUDA TRIDENT_NCCL TRIDENT_MPI PROPERTY STRINGS AUTO ON OFF)
option(TRIDENT_WERROR "Treat warnings in Trident's own code as errors" OFF)
set(TRIDENT_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address;undefined")
option(TRIDENT_BUILD_TESTS "Build tests and benchmarks" ON)
# -march=native: Eigen's kernels use the CPU's widest vectors and FMA (a GPT-2 LM-head GEMM
# runs 3.4x faster on an AVX-512 CPU than with the compiler's baseline SSE2). The binary then
# runs only on CPUs with the same instructions; turn it off for one built to run elsewhere.
option(TRIDENT_NATIVE_ARCH "Compile for this machine's CPU (-march=native)" ON)
