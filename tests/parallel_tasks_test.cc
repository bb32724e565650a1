// run_tasks(): every task once, a worker number for per-thread scratch, and the same error for
// any thread count.

#include "common/parallel_tasks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

namespace topoep {
namespace {

TEST(RunTasks, RunsEveryTaskOnceOnAWorkerBelowTheThreadCount) {
  for (const int threads : {0, 1, 3, 16}) {
    std::vector<std::atomic<int>> runs(100);
    std::atomic<bool> worker_in_range{true};
    run_tasks(100, threads, [&](std::int64_t task, int worker) {
      ++runs[static_cast<std::size_t>(task)];
      if (worker < 0 || worker >= std::max(1, threads)) worker_in_range = false;
    });
    for (const auto& count : runs) EXPECT_EQ(count, 1) << threads << " threads";
    EXPECT_TRUE(worker_in_range) << threads << " threads";
  }
  run_tasks(0, 4, [](std::int64_t, int) { FAIL() << "no task to run"; });
}

TEST(RunTasks, RethrowsTheLowestFailingTasksErrorAfterRunningTheRest) {
  for (const int threads : {1, 4}) {
    std::atomic<int> ran{0};
    try {
      run_tasks(50, threads, [&](std::int64_t task, int) {
        ++ran;
        if (task == 7 || task == 31) throw std::runtime_error("task " + std::to_string(task));
      });
      ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& error) {
      EXPECT_STREQ(error.what(), "task 7") << threads << " threads";
    }
    EXPECT_EQ(ran, 50) << threads << " threads";
  }
}

}  // namespace
}  // namespace topoep
