#pragma once
// Comm over MPI (OpenMPI from Debian) on host buffers. MPI_Init must have run.

#include "harness/comm.h"

namespace topoep {

class MpiComm : public Comm {
 public:
  MpiComm();
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<std::int64_t> allgather(const std::vector<std::int64_t>& mine) override;
  std::vector<std::vector<float>> alltoallv(const std::vector<std::vector<float>>& send) override;
  void broadcast(std::vector<float>& data, int root) override;
  void barrier() override;
  double max(double value) override;
  std::vector<double> gather(double value) override;
  double now_us() const override;

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace topoep
