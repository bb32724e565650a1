#include "common/progress.h"

#include <unistd.h>

#include <algorithm>

namespace topoep {

ProgressBar::ProgressBar(std::string unit, std::int64_t total, std::int64_t unit_size)
    : ProgressBar(std::move(unit), total, unit_size,
                  isatty(STDERR_FILENO) == 1 ? stderr : nullptr) {}

ProgressBar::ProgressBar(std::string unit, std::int64_t total, std::int64_t unit_size,
                         std::FILE* terminal)
    : unit_(std::move(unit)),
      total_(total),
      unit_size_(std::max<std::int64_t>(unit_size, 1)),
      terminal_(total > 0 ? terminal : nullptr),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fputc('\n', terminal_);
}

void ProgressBar::update(std::int64_t done) {
  if (terminal_ == nullptr) return;
  done = std::min(done, total_);
  const auto now = std::chrono::steady_clock::now();
  // A job done within the first tenth of a second draws nothing; a bar once drawn ends full.
  const bool final_redraw = drawn_ && done == total_;
  if (!final_redraw && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : 0;
  constexpr int kWidth = 30;
  const int filled =
      static_cast<int>(kWidth * (static_cast<double>(done) / static_cast<double>(total_)));
  std::string bar(filled, '=');
  bar.resize(kWidth, ' ');
  std::fprintf(terminal_, "\r[%s] %lld/%lld %s  %.0f %s/s  ETA %.0f s ", bar.c_str(),
               static_cast<long long>(done / unit_size_),
               static_cast<long long>(total_ / unit_size_), unit_.c_str(),
               rate / static_cast<double>(unit_size_), unit_.c_str(), eta);
  std::fflush(terminal_);
  drawn_ = true;
}

}  // namespace topoep
