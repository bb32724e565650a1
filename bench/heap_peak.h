#pragma once
// The live heap of the program that links this library, and its peak: every block that
// operator new hands out (malloc_usable_size() bytes of it, what the allocator really set
// aside) counts until operator delete frees it. For memory figures measured with Google
// Benchmark (bench/sim_memory_bench.cc): unlike the process's resident set, the count does not
// depend on the allocator's caching or the pages the kernel maps, so runs agree to within what
// their own inputs differ by (a temporary file's name: a few hundred bytes).
//
// Linking it replaces the global operator new and delete of the whole program (alwayslink):
// only the benchmark binaries that report memory link it, so that no other pays for the
// counting.

#include <cstdint>

namespace topoep {
namespace bench {

// Bytes of operator new's blocks not yet deleted.
std::int64_t live_heap_bytes();
// The most live_heap_bytes() reached since the last reset_heap_peak().
std::int64_t peak_heap_bytes();
// Starts a new peak from the bytes live now; returns them.
std::int64_t reset_heap_peak();

}  // namespace bench
}  // namespace topoep
