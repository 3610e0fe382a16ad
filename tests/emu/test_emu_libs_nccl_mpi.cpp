// The emulated NCCL across processes: run under `mpiexec -np 2` (ctest emu/libs_nccl_mpi_np2).
// Rank 0's ncclGetUniqueId reaches rank 1 by MPI_Bcast, as comm/nccl_group.cpp does; each
// process is one rank on its own emulated device, and they meet in shared memory. Exits 0
// when every check passed on every rank.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, int rank, const std::string& what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
}

template <typename T>
void* upload(const std::vector<T>& values) {
  void* p = nullptr;
  cudaMalloc(&p, values.size() * sizeof(T));
  cudaMemcpy(p, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice);
  return p;
}

template <typename T>
std::vector<T> download(const void* p, size_t count) {
  std::vector<T> values(count);
  cudaMemcpy(values.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost);
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // One emulated device per rank, as a trainer rank selects its local GPU.
  cudaSetDevice(rank);
  cudaStream_t stream = nullptr;
  cudaStreamCreate(&stream);
  ncclUniqueId id{};
  if (rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  expect(ncclCommInitRank(&comm, size, id, rank) == ncclSuccess, rank, "ncclCommInitRank");

  const float f = float(rank + 1);
  void* ar = upload(std::vector<float>{f, 2 * f});
  void* half = upload(std::vector<uint16_t>{uint16_t(rank == 0 ? 0x3c00 : 0x4000)});  // 1, 2
  void* bc = upload(std::vector<double>{f});
  void* rs_in = upload(std::vector<int32_t>(size_t(2 * size), rank + 1));
  void* rs_out = upload(std::vector<int32_t>(2, 0));
  std::vector<float> gathered(size_t(size), -1.0f);
  gathered[size_t(rank)] = 10 * f;  // in place: this rank's block of the output is its input
  void* ag_out = upload(gathered);
  void* ring_in = upload(std::vector<float>{100 * f});
  void* ring_out = upload(std::vector<float>{0});
  expect(ncclAllReduce(ar, ar, 2, ncclFloat32, ncclSum, comm, stream) == ncclSuccess, rank,
         "ncclAllReduce");
  expect(ncclAllReduce(half, half, 1, ncclFloat16, ncclSum, comm, stream) == ncclSuccess, rank,
         "ncclAllReduce f16");
  expect(ncclBroadcast(bc, bc, 1, ncclFloat64, 0, comm, stream) == ncclSuccess, rank,
         "ncclBroadcast");
  expect(ncclReduceScatter(rs_in, rs_out, 2, ncclInt32, ncclSum, comm, stream) == ncclSuccess, rank,
         "ncclReduceScatter");
  expect(ncclAllGather(static_cast<float*>(ag_out) + rank, ag_out, 1, ncclFloat32, comm, stream) ==
             ncclSuccess,
         rank, "ncclAllGather");
  // A ring: each rank sends to the next and receives from the previous, in one group.
  ncclGroupStart();
  ncclSend(ring_in, 1, ncclFloat32, (rank + 1) % size, comm, stream);
  ncclRecv(ring_out, 1, ncclFloat32, (rank + size - 1) % size, comm, stream);
  expect(ncclGroupEnd() == ncclSuccess, rank, "ncclGroupEnd");
  cudaStreamSynchronize(stream);
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm, &async);
  expect(async == ncclSuccess, rank, std::string("async error: ") + ncclGetLastError(comm));

  double total = 0;
  for (int r = 0; r < size; ++r) total += r + 1;
  const auto ar_got = download<float>(ar, 2);
  expect(ar_got[0] == float(total) && ar_got[1] == float(2 * total), rank, "all-reduce values");
  if (size == 2) expect(download<uint16_t>(half, 1)[0] == 0x4200, rank, "f16 all-reduce 1 + 2 = 3");
  expect(download<double>(bc, 1)[0] == 1.0, rank, "broadcast from rank 0");
  const auto rs = download<int32_t>(rs_out, 2);
  expect(rs[0] == int(total) && rs[1] == int(total), rank, "reduce-scatter values");
  const auto ag = download<float>(ag_out, size_t(size));
  for (int r = 0; r < size; ++r)
    expect(ag[size_t(r)] == 10.0f * float(r + 1), rank, "all-gather block " + std::to_string(r));
  const float from = float(((rank + size - 1) % size) + 1) * 100;
  expect(download<float>(ring_out, 1)[0] == from, rank, "ring receive");

  for (void* p : {ar, half, bc, rs_in, rs_out, ag_out, ring_in, ring_out}) cudaFree(p);
  ncclCommDestroy(comm);
  cudaStreamDestroy(stream);
  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("emulated NCCL over %d processes: %d failure(s)\n", size, all_failures);
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}
