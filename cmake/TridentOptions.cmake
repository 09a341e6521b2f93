# Build options. CUDA, NCCL and MPI are AUTO by default: on when found, with a one-line
# notice when not. Setting one to ON makes its absence an error; OFF skips the search.
set(TRIDENT_CUDA AUTO CACHE STRING "Build the CUDA backend (AUTO, ON, OFF)")
set(TRIDENT_NCCL AUTO CACHE STRING "Build the NCCL backend (AUTO, ON, OFF)")
set(TRIDENT_MPI AUTO CACHE STRING "Build the MPI backend (AUTO, ON, OFF)")
set_property(CACHE TRIDENT_CUDA TRIDENT_NCCL TRIDENT_MPI PROPERTY STRINGS AUTO ON OFF)
option(TRIDENT_WERROR "Treat warnings in Trident's own code as errors" OFF)
set(TRIDENT_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address;undefined")
option(TRIDENT_BUILD_TESTS "Build tests and benchmarks" ON)
