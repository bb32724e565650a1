#pragma once
// A minimal safetensors codec: an 8-byte little-endian header length, a JSON header
// {"NAME": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the
// raw little-endian tensor bytes. PyTorch, numpy and the safetensors package read it as is.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace topoep {

struct TensorInfo {
  std::string dtype;  // "I32", "U16", ...
  std::vector<std::int64_t> shape;
  std::int64_t begin = 0;  // byte offsets into the data section
  std::int64_t end = 0;
};

struct SafetensorsHeader {
  std::map<std::string, TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
  std::int64_t data_start = 0;  // file offset of the data section
};

// Bytes per element of a dtype name; throws std::invalid_argument for an unknown one.
int dtype_size(const std::string& dtype);

// Parses the header of the file at `path` whose size is `file_size`. Throws FileInputError
// naming the file for a header length beyond the file, invalid JSON, a tensor whose shape and
// dtype disagree with its byte range, or a byte range outside the file.
SafetensorsHeader read_safetensors_header(const std::string& path);

struct TensorToWrite {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  const void* data;  // little-endian bytes, shape x dtype_size long
};

// Writes a complete file (not atomically: callers write into a temporary directory).
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace topoep
