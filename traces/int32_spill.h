#pragma once
// 32-bit integers kept on disk instead of in memory: written once to a scratch file, then read
// through a read-only memory map. The importers hold what they have read this way until they
// write it in trace order: the per-token importers every layer's expert ids (a record needs
// the same tokens from every layer, and the packing may take them in any order), the JSON
// lines importer every line's counts. So an input larger than memory imports with the heap of
// one trace chunk: the kernel pages the map in and out as it is read.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace topoep {

class Int32Spill {
 public:
  // Creates the scratch file at `path` (the caller removes it: common/temp_path.h); throws
  // FileInputError naming it if it cannot.
  explicit Int32Spill(std::string path);
  ~Int32Spill();
  Int32Spill(const Int32Spill&) = delete;
  Int32Spill& operator=(const Int32Spill&) = delete;

  // Appends `count` values. Throws FileInputError naming the file if the write fails (a full
  // disk).
  void add(const std::int32_t* values, std::size_t count);
  // Values added so far.
  std::size_t size() const { return size_; }
  // Ends the writing and maps the file: values [0, size()), valid while this object lives
  // (null when there are none). Called once; add() is refused after it.
  const std::int32_t* map();

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::size_t size_ = 0;
  bool finished_ = false;  // map() was called
  void* mapped_ = nullptr;
  std::size_t mapped_bytes_ = 0;
};

}  // namespace topoep
