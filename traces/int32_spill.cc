#include "traces/int32_spill.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "common/file_input_error.h"

namespace topoep {

Int32Spill::Int32Spill(std::string path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "w+b");
  if (file_ == nullptr) {
    throw FileInputError(
        path_, "",
        std::string("cannot create the scratch file beside the output: ") + std::strerror(errno));
  }
}

Int32Spill::~Int32Spill() {
  if (mapped_ != nullptr) ::munmap(mapped_, mapped_bytes_);
  if (file_ != nullptr) std::fclose(file_);
}

void Int32Spill::add(const std::int32_t* values, std::size_t count) {
  if (finished_) throw std::logic_error("Int32Spill::add() after map()");
  if (count > 0 && std::fwrite(values, sizeof(std::int32_t), count, file_) != count) {
    throw FileInputError(path_, "", std::string("could not be written: ") + std::strerror(errno));
  }
  size_ += count;
}

const std::int32_t* Int32Spill::map() {
  if (finished_) throw std::logic_error("Int32Spill::map() called twice");
  finished_ = true;
  if (std::fflush(file_) != 0) {
    throw FileInputError(path_, "", std::string("could not be written: ") + std::strerror(errno));
  }
  if (size_ == 0) return nullptr;
  mapped_bytes_ = size_ * sizeof(std::int32_t);
  void* at = ::mmap(nullptr, mapped_bytes_, PROT_READ, MAP_SHARED, ::fileno(file_), 0);
  if (at == MAP_FAILED) {
    throw FileInputError(path_, "", std::string("could not be mapped: ") + std::strerror(errno));
  }
  mapped_ = at;
  return static_cast<const std::int32_t*>(mapped_);
}

}  // namespace topoep
