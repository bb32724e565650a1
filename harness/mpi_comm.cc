#include "harness/mpi_comm.h"

#include <mpi.h>

#include <limits>
#include <stdexcept>

namespace topoep {
namespace {

int checked_count(std::size_t count) {
  if (count > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw std::runtime_error("a message of " + std::to_string(count) +
                             " elements exceeds MPI's int counts: scale the dimensions down");
  }
  return static_cast<int>(count);
}

}  // namespace

MpiComm::MpiComm() {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

std::vector<std::int64_t> MpiComm::allgather(const std::vector<std::int64_t>& mine) {
  std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(size_));
  MPI_Allgather(mine.data(), checked_count(mine.size()), MPI_INT64_T, all.data(),
                checked_count(mine.size()), MPI_INT64_T, MPI_COMM_WORLD);
  return all;
}

std::vector<std::vector<float>> MpiComm::alltoallv(const std::vector<std::vector<float>>& send) {
  std::vector<int> send_counts(size_), recv_counts(size_), send_offsets(size_), recv_offsets(size_);
  std::vector<float> send_buffer;
  for (int d = 0; d < size_; ++d) {
    send_offsets[d] = checked_count(send_buffer.size());
    send_counts[d] = checked_count(send[d].size());
    send_buffer.insert(send_buffer.end(), send[d].begin(), send[d].end());
  }
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::size_t total = 0;
  for (int s = 0; s < size_; ++s) {
    recv_offsets[s] = checked_count(total);
    total += static_cast<std::size_t>(recv_counts[s]);
  }
  std::vector<float> recv_buffer(total);
  MPI_Alltoallv(send_buffer.data(), send_counts.data(), send_offsets.data(), MPI_FLOAT,
                recv_buffer.data(), recv_counts.data(), recv_offsets.data(), MPI_FLOAT,
                MPI_COMM_WORLD);
  std::vector<std::vector<float>> received(size_);
  for (int s = 0; s < size_; ++s) {
    received[s].assign(recv_buffer.begin() + recv_offsets[s],
                       recv_buffer.begin() + recv_offsets[s] + recv_counts[s]);
  }
  return received;
}

void MpiComm::broadcast(std::vector<float>& data, int root) {
  std::int64_t size = static_cast<std::int64_t>(data.size());
  MPI_Bcast(&size, 1, MPI_INT64_T, root, MPI_COMM_WORLD);
  data.resize(static_cast<std::size_t>(size));
  MPI_Bcast(data.data(), checked_count(data.size()), MPI_FLOAT, root, MPI_COMM_WORLD);
}

void MpiComm::barrier() { MPI_Barrier(MPI_COMM_WORLD); }

double MpiComm::max(double value) {
  double result = 0;
  MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return result;
}

std::vector<double> MpiComm::gather(double value) {
  std::vector<double> all(rank_ == 0 ? size_ : 0);
  MPI_Gather(&value, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return all;
}

double MpiComm::now_us() const { return MPI_Wtime() * 1e6; }

}  // namespace topoep
