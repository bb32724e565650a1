#include "common/parallel_tasks.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace topoep {

int hardware_threads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void run_tasks(std::int64_t count, int threads,
               const std::function<void(std::int64_t task, int worker)>& task) {
  std::atomic<std::int64_t> next{0};
  std::vector<std::exception_ptr> errors(
      static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  auto work = [&](int worker) {
    for (std::int64_t i = next++; i < count; i = next++) {
      try {
        task(i, worker);
      } catch (...) {
        errors[static_cast<std::size_t>(i)] = std::current_exception();
      }
    }
  };
  const int workers =
      static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, count)));
  std::vector<std::thread> pool;
  for (int w = 1; w < workers; ++w) pool.emplace_back(work, w);
  work(0);
  for (std::thread& thread : pool) thread.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace topoep
