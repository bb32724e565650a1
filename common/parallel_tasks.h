#pragma once
// Independent tasks spread over a few threads, with errors that do not depend on how many.

#include <cstdint>
#include <functional>

namespace topoep {

// The threads this machine runs at once (at least 1): the default where a result does not
// depend on the thread count.
int hardware_threads();

// Runs task(i, worker) once for every i in [0, count), on at most `threads` threads (the
// calling one among them), each taking the next index as it frees up. `worker` is the running
// thread's number in [0, threads), for per-thread scratch. A task's exception does not stop
// the others; once all have run, the lowest failing index's exception is rethrown.
void run_tasks(std::int64_t count, int threads,
               const std::function<void(std::int64_t task, int worker)>& task);

}  // namespace topoep
