#include "traces/safetensors.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/file_input_error.h"

namespace topoep {

int dtype_size(const std::string& dtype) {
  if (dtype == "U8" || dtype == "I8") return 1;
  if (dtype == "U16" || dtype == "I16") return 2;
  if (dtype == "U32" || dtype == "I32" || dtype == "F32") return 4;
  if (dtype == "U64" || dtype == "I64" || dtype == "F64") return 8;
  throw std::invalid_argument("unknown safetensors dtype '" + dtype + "'");
}

SafetensorsHeader read_safetensors_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw FileInputError(path, "", "cannot open the file for reading");
  const std::int64_t file_size = static_cast<std::int64_t>(in.tellg());
  in.seekg(0);
  unsigned char length_bytes[8];
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(length_bytes), 8)) {
    throw FileInputError(path, "", "is shorter than the 8-byte safetensors header length");
  }
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = length << 8 | length_bytes[i];
  if (length > static_cast<std::uint64_t>(file_size - 8) || length > (1u << 30)) {
    throw FileInputError(path, "",
                         "header length " + std::to_string(length) + " does not fit in the file (" +
                             std::to_string(file_size) +
                             " bytes): not a safetensors file, or truncated");
  }
  std::string text(length, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(length))) {
    throw FileInputError(path, "", "reading the header failed");
  }
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw FileInputError(path, "", std::string("header is not valid JSON: ") + error.what());
  }
  if (!header.is_object()) throw FileInputError(path, "", "header must be a JSON object");
  SafetensorsHeader result;
  result.data_start = 8 + static_cast<std::int64_t>(length);
  const std::int64_t data_size = file_size - result.data_start;
  for (const auto& item : header.items()) {
    if (item.key() == "__metadata__") {
      if (!item.value().is_object())
        throw FileInputError(path, "__metadata__", "must be an object");
      for (const auto& entry : item.value().items()) {
        if (!entry.value().is_string()) {
          throw FileInputError(path, "__metadata__." + entry.key(), "must be a string");
        }
        result.metadata[entry.key()] = entry.value().get<std::string>();
      }
      continue;
    }
    const nlohmann::json& tensor = item.value();
    TensorInfo info;
    try {
      info.dtype = tensor.at("dtype").get<std::string>();
      info.shape = tensor.at("shape").get<std::vector<std::int64_t>>();
      const auto offsets = tensor.at("data_offsets").get<std::vector<std::int64_t>>();
      if (offsets.size() != 2) throw std::invalid_argument("data_offsets needs two entries");
      info.begin = offsets[0];
      info.end = offsets[1];
      std::int64_t elements = 1;
      for (const std::int64_t extent : info.shape) {
        if (extent < 0) throw std::invalid_argument("negative extent");
        // No product of extents larger than the file is meaningful; none may overflow.
        if (extent > 0 && elements > (std::int64_t{1} << 40) / extent) {
          throw std::invalid_argument("shape has more than 2^40 elements");
        }
        elements *= extent;
      }
      if (info.begin < 0 || info.end < info.begin ||
          info.end - info.begin != elements * dtype_size(info.dtype)) {
        throw std::invalid_argument("byte range does not match shape x dtype");
      }
    } catch (const std::exception& error) {
      throw FileInputError(path, item.key(), std::string("bad tensor entry: ") + error.what());
    }
    if (info.end > data_size) {
      throw FileInputError(path, item.key(),
                           "data ends at byte " + std::to_string(info.end) + " of a " +
                               std::to_string(data_size) +
                               "-byte data section: the file is truncated");
    }
    result.tensors[item.key()] = info;
  }
  return result;
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::int64_t offset = 0;
  for (const TensorToWrite& tensor : tensors) {
    std::int64_t elements = 1;
    for (const std::int64_t extent : tensor.shape) elements *= extent;
    const std::int64_t bytes = elements * dtype_size(tensor.dtype);
    header[tensor.name] = {{"dtype", tensor.dtype},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data section to 8 bytes
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot create " + path);
  unsigned char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(text.size()) >> (8 * i));
  out.write(reinterpret_cast<const char*>(length), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const TensorToWrite& tensor : tensors) {
    std::int64_t elements = 1;
    for (const std::int64_t extent : tensor.shape) elements *= extent;
    out.write(static_cast<const char*>(tensor.data),
              static_cast<std::streamsize>(elements * dtype_size(tensor.dtype)));
  }
  out.flush();
  if (!out) throw std::runtime_error("writing " + path + " failed");
}

}  // namespace topoep
