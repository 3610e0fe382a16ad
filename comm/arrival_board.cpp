#include "comm/arrival_board.h"

#include <exception>
#include <memory>
#include <vector>

#include "base/error.h"
#include "comm/bootstrap.h"
#include "comm/bounded_wait.h"

namespace sonata {
namespace {

// The MPI_COMM_WORLD ranks of `ranks` in `comm`, for messages that name processes.
std::vector<int> world_ranks(MPI_Comm comm, const std::vector<int>& ranks) {
  std::vector<int> world(ranks.size(), MPI_UNDEFINED);
  MPI_Group group = MPI_GROUP_NULL, world_group = MPI_GROUP_NULL;
  if (MPI_Comm_group(comm, &group) == MPI_SUCCESS &&
      MPI_Comm_group(MPI_COMM_WORLD, &world_group) == MPI_SUCCESS)
    MPI_Group_translate_ranks(group, int(ranks.size()), ranks.data(), world_group, world.data());
  if (group != MPI_GROUP_NULL) MPI_Group_free(&group);
  if (world_group != MPI_GROUP_NULL) MPI_Group_free(&world_group);
  return world;
}

std::string rank_list(MPI_Comm comm, const std::vector<int>& ranks) {
  std::string text;
  for (int rank : world_ranks(comm, ranks))
    text += (text.empty() ? "" : ", ") + (rank == MPI_UNDEFINED ? "?" : std::to_string(rank));
  return text;
}

}  // namespace

ArrivalBoard::ArrivalBoard(MPI_Comm comm) : comm_(comm) {
  void* base = nullptr;
  if (MPI_Win_allocate(kSlots * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, comm_, &base,
                       &window_) != MPI_SUCCESS) {
    window_ = MPI_WIN_NULL;
    return;
  }
  MPI_Win_set_errhandler(window_, MPI_ERRORS_RETURN);
  count_ = static_cast<int64_t*>(base);
  count_[kCount] = count_[kGaveUp] = 0;
  // One passive epoch for the board's life: reads after a timeout need no peer to act.
  if (MPI_Win_lock_all(MPI_MODE_NOCHECK, window_) != MPI_SUCCESS) {
    MPI_Win_free(&window_);
    window_ = MPI_WIN_NULL;
    count_ = nullptr;
    return;
  }
  MPI_Win_sync(window_);
}

ArrivalBoard::~ArrivalBoard() {
  close(default_comm_timeout_seconds());
}

void ArrivalBoard::close(double timeout_s) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (window_ == MPI_WIN_NULL || finalized || std::uncaught_exceptions() > 0) return;
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(comm_, &request) == MPI_SUCCESS) {
    const bool arrived = poll_until(
        [&] {
          int flag = 0;
          return MPI_Test(&request, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag != 0;
        },
        timeout_s);
    if (!arrived) {
      int size = 0;
      MPI_Comm_size(comm_, &size);
      abort_job(str("freeing an MPI group of ", size, " ranks: not every rank came within ",
                    timeout_s, " s (--comm-timeout)"));
    }
  }
  MPI_Win_unlock_all(window_);
  MPI_Win_free(&window_);
  window_ = MPI_WIN_NULL;
  count_ = nullptr;
}

int64_t ArrivalBoard::arrive() {
  ++local_count_;
  if (count_) {
    count_[kCount] = local_count_;
    MPI_Win_sync(window_);  // the store becomes what peers read
  }
  return local_count_;
}

std::string ArrivalBoard::describe_missing(int64_t number, double grace_s) const {
  if (window_ == MPI_WIN_NULL) return "rank(s) that did not arrive: unknown (no MPI window)";
  int size = 0, rank = 0;
  MPI_Comm_size(comm_, &size);
  MPI_Comm_rank(comm_, &rank);
  // Called when this rank's wait for `number` timed out: said first, so that a rank that
  // comes later does not take this one for still waiting.
  count_[kGaveUp] = number;
  MPI_Win_sync(window_);
  // Heap memory, left behind below while a read is still open (MPI may write it later).
  auto owned_slots = std::make_unique<std::vector<int64_t>>(size_t(size) * kSlots, -1);
  std::vector<int64_t>& slots = *owned_slots;
  std::vector<MPI_Request> requests(size_t(size), MPI_REQUEST_NULL);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    if (MPI_Rget(&slots[size_t(peer) * kSlots], kSlots, MPI_INT64_T, peer, 0, kSlots, MPI_INT64_T,
                 window_, &requests[size_t(peer)]) != MPI_SUCCESS)
      requests[size_t(peer)] = MPI_REQUEST_NULL;
  }
  std::vector<char> answered(size_t(size), 0);
  answered[size_t(rank)] = 1;
  poll_until(
      [&] {
        bool all = true;
        for (int peer = 0; peer < size; ++peer) {
          if (answered[size_t(peer)] || requests[size_t(peer)] == MPI_REQUEST_NULL) continue;
          int flag = 0;
          if (MPI_Test(&requests[size_t(peer)], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag)
            answered[size_t(peer)] = 1;
          else
            all = false;
        }
        return all;
      },
      grace_s);
  std::vector<int> missing, silent, gave_up;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    const int64_t* slot = &slots[size_t(peer) * kSlots];
    if (!answered[size_t(peer)])
      silent.push_back(peer);
    else if (slot[kCount] < number)
      missing.push_back(peer);
    else if (slot[kGaveUp] >= number)
      gave_up.push_back(peer);
  }
  // Reads still open are left to the job's end: cancelling them could wait on the peer.
  if (!silent.empty()) static_cast<void>(owned_slots.release());
  std::string text;
  auto add = [&text](const std::string& part) { text += (text.empty() ? "" : "; ") + part; };
  if (!missing.empty()) add("rank(s) that did not arrive: " + rank_list(comm_, missing));
  if (!silent.empty())
    add("rank(s) that did not answer (stopped or unreachable): " + rank_list(comm_, silent));
  // Arrived, then their own timeout passed: they wait no more, so the operation cannot finish.
  if (!gave_up.empty())
    add("rank(s) that arrived but gave up waiting (their --comm-timeout passed): " +
        rank_list(comm_, gave_up));
  if (!gave_up.empty() && missing.empty() && silent.empty())
    text +=
        "; this rank came after they stopped waiting (was it stopped, by SIGSTOP or a "
        "debugger, or far slower than they?)";
  if (text.empty()) text = "every rank arrived, but the operation did not finish";
  return text;
}

}  // namespace sonata
