// A gtest main for test binaries that run under mpirun (ctest starts them with 2 and 4 ranks).
//
// Rank 0 prints gtest's usual output; the other ranks print only their failures, tagged with
// their rank. A test ends with AgreeOnFailure(HasFailure()): the ranks agree, on a
// communicator of the harness's own, whether any of them failed, and every rank then fails
// the test, so with --gtest_fail_fast (on by default) all stop together rather than run on
// with peers that went elsewhere. The exit status is non-zero on every rank if any rank
// failed, and timeouts bound every wait, so a broken backend fails in seconds, never hangs.
#pragma once

#include "runtime/comm/comm.h"

namespace trident::mpi_gtest {

// The world communicator the tests run on. REQUIRES: called from a test under Main.
Comm& World();

// Call last in every test: fails it on every rank if it failed on any.
void AgreeOnFailure(bool failed_here);

// Runs every test on the MPI world; returns the process exit status. `program` names the
// binary in messages.
int Main(const char* program, int argc, char** argv);

}  // namespace trident::mpi_gtest
