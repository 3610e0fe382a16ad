#pragma once
// Who has reached a collective: each rank of an MPI communicator counts the collectives it
// has started in a one-sided MPI window of its own. A rank whose collective does not finish
// in time reads every peer's count (MPI_Rget, which on one node needs nothing from the
// peer, so it works even when the peer is stopped) and names those that have not started
// it yet. Costs one store per collective; the reads happen only after a timeout.
#include <mpi.h>

#include <cstdint>
#include <string>

namespace sonata {

class ArrivalBoard {
 public:
  // Collective over `comm` (which must outlive the board). When MPI cannot make the window,
  // the board still counts but arrivals are reported as unknown.
  explicit ArrivalBoard(MPI_Comm comm);
  // Frees the window: a collective, preceded by a barrier polled for at most `timeout_s`, so
  // a peer that never comes ends the job instead of hanging this one. Skipped while an
  // exception unwinds (the window is left to the dying process, whose peers may never come).
  void close(double timeout_s);
  ~ArrivalBoard();  // close()s with the default timeout unless closed already
  ArrivalBoard(const ArrivalBoard&) = delete;
  ArrivalBoard& operator=(const ArrivalBoard&) = delete;

  // This rank starts its next collective; returns that collective's number (from 1).
  int64_t arrive();
  // Called when this rank's wait for collective `number` timed out: marks this rank as
  // having given up on it, and returns a sentence naming the ranks (of MPI_COMM_WORLD) that
  // have not started it, those that did not answer within `grace_s`, and those that started
  // it but gave up waiting before (this rank then came late: stopped, or far slower); or that
  // every rank started it.
  std::string describe_missing(int64_t number, double grace_s) const;

 private:
  // Each rank's window: its count of collectives started, and the collective it gave up
  // waiting for (0: none).
  static constexpr int kCount = 0, kGaveUp = 1, kSlots = 2;

  MPI_Comm comm_;
  MPI_Win window_ = MPI_WIN_NULL;
  int64_t* count_ = nullptr;  // this rank's slots, inside the window
  int64_t local_count_ = 0;   // the count without a window
};

}  // namespace sonata
