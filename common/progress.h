#pragma once
// A one-line progress bar on stderr (done/total, rate, ETA), drawn only when stderr is a
// terminal so that logs and pipes stay clean. First drawn a tenth of a second in (a quick job
// draws nothing), then at most ten times a second, and once more when done reaches total.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace topoep {

// Whether a long job draws its progress: the commands that run one job at a time on the
// terminal ask for kTerminal; a job run beside others (a sweep's points) passes kNone, so that
// the bars do not overwrite each other.
enum class ProgressDisplay { kNone, kTerminal };

class ProgressBar {
 public:
  // Counts `total` things, shown in `unit`s of `unit_size` things each (bytes as "MB":
  // unit_size 1,000,000; shown rounded down). Draws nothing when total is 0 or less, or when
  // stderr is not a terminal.
  ProgressBar(std::string unit, std::int64_t total, std::int64_t unit_size = 1);
  // The same bar drawn on `terminal` whatever it is (nothing when it is null): for tests.
  ProgressBar(std::string unit, std::int64_t total, std::int64_t unit_size, std::FILE* terminal);
  ~ProgressBar();  // ends the line if one was drawn
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // `done` things of total so far (not shown past total).
  void update(std::int64_t done);

 private:
  std::string unit_;
  std::int64_t total_;
  std::int64_t unit_size_;
  std::FILE* terminal_;  // null: draw nothing
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace topoep
