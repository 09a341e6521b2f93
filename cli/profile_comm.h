// trident profile --comm: communication micro-benchmarks under mpirun (like nccl-tests) that
// fit alpha/beta per collective, group size and link class and write them into a cluster
// file's `measured:` section for the planner.
#pragma once

#include <cstdint>
#include <string>

namespace trident {

struct CommProfileFlags {
  std::string cluster;  // cluster file to start from (its measured: section is replaced)
  std::string output;   // cluster file to write
  // Where the measured buffers live: "cpu" (host memory, over MPI) or "cuda" (each rank's GPU,
  // over NCCL, as a GPU job's activations and gradients travel).
  std::string device = "cpu";
  int64_t min_bytes = 4;
  int64_t max_bytes = int64_t{64} << 20;
  int step_factor = 2;  // each message size is the previous one times this
  int warmup = 5;
  int iters = 20;
};

// Runs the sweep on every rank of the job (profiler/comm_profile.h); rank 0 reads
// flags.cluster, prints the table on stdout (progress on stderr), fits alpha/beta and writes
// flags.output atomically with the measured: list replaced. A job of one rank, more ranks than
// the cluster has devices, or bad sizes: rank 0 says so and every rank returns 1. A wrong
// result or a communication failure: the rank that saw it prints it and ends the whole job.
// Exit code: 0 ok, 1 failure.
int RunCommProfileCommand(const CommProfileFlags& flags);

}  // namespace trident
