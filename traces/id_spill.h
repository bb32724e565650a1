#pragma once
// Expert ids kept on disk instead of in memory: written once to a scratch file, then read
// through a read-only memory map. The per-token importers hold every layer's ids this way (a
// record needs the same tokens from every layer, and the packing may take them in any order),
// so an input larger than memory imports with the heap of one trace chunk: the kernel pages
// the map in and out as the packing reads it.

#include <cstddef>
#include <cstdio>
#include <string>

#include "solver/types.h"

namespace topoep {

class IdSpill {
 public:
  // Creates the scratch file at `path` (the caller removes it: common/temp_path.h); throws
  // FileInputError naming it if it cannot.
  explicit IdSpill(std::string path);
  ~IdSpill();
  IdSpill(const IdSpill&) = delete;
  IdSpill& operator=(const IdSpill&) = delete;

  // Appends `count` ids. Throws FileInputError naming the file if the write fails (a full disk).
  void add(const ExpertId* ids, std::size_t count);
  // Ids added so far.
  std::size_t size() const { return size_; }
  // Ends the writing and maps the file: ids [0, size()), valid while this object lives (null
  // when there are none). Called once; add() is refused after it.
  const ExpertId* map();

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::size_t size_ = 0;
  void* mapped_ = nullptr;
  std::size_t mapped_bytes_ = 0;
};

}  // namespace topoep
