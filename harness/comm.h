#pragma once
// The collective operations the harness needs, behind one interface: MPI over host buffers
// (mpi_comm.h) here, NCCL over device buffers on GPU machines.

#include <cstdint>
#include <vector>

namespace topoep {

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's values (the same count on every rank), concatenated in rank order.
  virtual std::vector<std::int64_t> allgather(const std::vector<std::int64_t>& mine) = 0;
  // send[d] goes to rank d; returns, per source rank, what it sent here.
  virtual std::vector<std::vector<float>> alltoallv(
      const std::vector<std::vector<float>>& send) = 0;
  // `root`'s `data` on every rank (resized on the others), by the library's broadcast: MPI's
  // here, a pipelined ring on NCCL.
  virtual void broadcast(std::vector<float>& data, int root) = 0;
  virtual void barrier() = 0;
  virtual double max(double value) = 0;
  // Every rank's value on rank 0 (in rank order); empty on the others.
  virtual std::vector<double> gather(double value) = 0;
  virtual double now_us() const = 0;
};

}  // namespace topoep
