#include "traces/scratch_table.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/file_input_error.h"

namespace topoep {

namespace {

[[noreturn]] void fail(const std::string& path, const char* what) {
  throw FileInputError(path, "", std::string(what) + ": " + std::strerror(errno));
}

}  // namespace

ScratchTable::ScratchTable(std::string path, std::size_t size)
    : path_(std::move(path)), size_(size) {
  descriptor_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (descriptor_ < 0) fail(path_, "cannot create the scratch file beside the output");
  if (size_ == 0) return;
  const std::size_t bytes = size_ * sizeof(std::int64_t);
  // NOTE: a file extended by ftruncate has no blocks yet; posix_fallocate reserves them, so a
  // full disk is an error here rather than a SIGBUS when a page is first written.
  const int reserved = ::posix_fallocate(descriptor_, 0, static_cast<off_t>(bytes));
  if (reserved != 0) {
    errno = reserved;
    fail(path_, "could not be written");
  }
  void* at = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor_, 0);
  if (at == MAP_FAILED) fail(path_, "could not be mapped");
  data_ = static_cast<std::int64_t*>(at);
}

ScratchTable::~ScratchTable() {
  if (data_ != nullptr) ::munmap(data_, size_ * sizeof(std::int64_t));
  if (descriptor_ >= 0) ::close(descriptor_);
}

}  // namespace topoep
