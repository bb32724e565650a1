#include "sim/progress.h"

#include <unistd.h>

#include <cstdio>

namespace topoep {

ProgressBar::ProgressBar(std::string unit, std::int64_t total)
    : unit_(std::move(unit)),
      total_(total),
      enabled_(total > 0 && isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fputc('\n', stderr);
}

void ProgressBar::update(std::int64_t done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = seconds > 0 ? done / seconds : 0;
  const double eta = rate > 0 ? (total_ - done) / rate : 0;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total_);
  std::string bar(filled, '=');
  bar.resize(kWidth, ' ');
  std::fprintf(stderr, "\r[%s] %lld/%lld %s  %.0f/s  ETA %.0f s ", bar.c_str(),
               static_cast<long long>(done), static_cast<long long>(total_), unit_.c_str(), rate,
               eta);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace topoep
