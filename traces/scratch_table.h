#pragma once
// A table of 64-bit integers in a scratch file, mapped for reading and writing: an index as
// large as its input (one entry a line of a recording) without holding it in memory. The
// kernel writes its pages back to the file under memory pressure and reads them in again.

#include <cstddef>
#include <cstdint>
#include <string>

namespace topoep {

class ScratchTable {
 public:
  // Creates the scratch file at `path` (the caller removes it: common/temp_path.h) holding
  // `size` zeros, and maps it. Throws FileInputError naming it if it cannot (a full disk).
  ScratchTable(std::string path, std::size_t size);
  ~ScratchTable();
  ScratchTable(const ScratchTable&) = delete;
  ScratchTable& operator=(const ScratchTable&) = delete;

  // Entries [0, size()); null when size() is 0.
  std::int64_t* data() { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::string path_;
  int descriptor_ = -1;
  std::int64_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace topoep
