// What a rank whose collective timed out says of its peers: a rank that comes after its
// peers gave up waiting (it was stopped, say by SIGSTOP, or far slower) must not read their
// counts as "every rank arrived, but the operation did not finish".
#include <catch2/catch.hpp>

#include <mpi.h>

#include <string>

#include "comm/arrival_board.h"
#include "tests/comm/comm_group.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

TEST_CASE("a rank that comes after its peers gave up waiting says so", "[comm][timeout]") {
  if (comm_group().world_size() < 2) return;  // needs peers: run by comm/np2 and comm/np3
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ArrivalBoard board(MPI_COMM_WORLD);
  // Every rank but 1 starts collective 1 and times out on it (its describe_missing).
  if (rank != 1) {
    board.arrive();
    const std::string text = board.describe_missing(1, 5.0);
    INFO(text);
    CHECK_THAT(text, Contains("rank(s) that did not arrive: 1"));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // Rank 1 comes late, to the same collective, and times out in its turn.
  if (rank == 1) {
    board.arrive();
    const std::string text = board.describe_missing(1, 5.0);
    INFO(text);
    CHECK_THAT(text, Contains("rank(s) that arrived but gave up waiting") &&
                         Contains("this rank came after they stopped waiting"));
    CHECK_THAT(text, !Contains("every rank arrived"));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  board.close(30);
}
