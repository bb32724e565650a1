#pragma once
// A one-line progress bar on stderr (done/total, rate, ETA), drawn only when stderr is a
// terminal so that logs and pipes stay clean. Redrawn at most ten times a second.

#include <chrono>
#include <cstdint>
#include <string>

namespace topoep {

class ProgressBar {
 public:
  ProgressBar(std::string unit, std::int64_t total);
  ~ProgressBar();  // ends the line if one was drawn
  void update(std::int64_t done);

 private:
  std::string unit_;
  std::int64_t total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace topoep
