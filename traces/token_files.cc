#include "traces/token_files.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/file_input_error.h"

namespace topoep {
namespace {

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, separator)) fields.push_back(field);
  if (!line.empty() && line.back() == separator) fields.emplace_back();
  return fields;
}

bool parse_long(std::string text, long long* value) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  std::size_t used = 0;
  try {
    *value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size() && !text.empty();
}

ExpertId checked_expert(long long value, int num_experts, const std::string& path,
                        const std::string& where) {
  if (value < 0 || value >= num_experts) {
    throw FileInputError(path, where,
                         "expert id " + std::to_string(value) + " is outside [0, " +
                             std::to_string(num_experts) + ")");
  }
  return static_cast<ExpertId>(value);
}

std::ifstream open_or_throw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileInputError(path, "", "cannot open the file for reading");
  return in;
}

}  // namespace

TokenLayerFile read_flame_csv(const std::string& path, int num_experts, int top_k) {
  std::ifstream in = open_or_throw(path);
  std::string line;
  if (!std::getline(in, line)) throw FileInputError(path, "line 1", "the header is missing");
  const std::vector<std::string> header = split(line, ',');
  if (header.size() != static_cast<std::size_t>(num_experts) + 2 || header[0] != "layer_id" ||
      header[1] != "token_id" || header[2] != "expert_0") {
    throw FileInputError(
        path, "line 1",
        "header must be layer_id,token_id,expert_0..expert_" + std::to_string(num_experts - 1));
  }
  TokenLayerFile result;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty() || line == "\r") continue;
    const std::string where = "line " + std::to_string(number);
    const std::vector<std::string> fields = split(line, ',');
    if (fields.size() != header.size()) {
      throw FileInputError(path, where,
                           "has " + std::to_string(fields.size()) + " fields, the header " +
                               std::to_string(header.size()));
    }
    long long layer = 0;
    if (!parse_long(fields[0], &layer))
      throw FileInputError(path, where + " layer_id", "is not an integer");
    if (result.layer >= 0 && layer != result.layer) {
      throw FileInputError(
          path, where + " layer_id",
          "is " + std::to_string(layer) + ", earlier rows " + std::to_string(result.layer));
    }
    result.layer = static_cast<int>(layer);
    int selected = 0;
    for (int e = 0; e < num_experts; ++e) {
      const std::string& field = fields[2 + e];
      char* end = nullptr;
      const double probability = std::strtod(field.c_str(), &end);
      if (end == field.c_str()) {
        throw FileInputError(path, where + " expert_" + std::to_string(e), "is not a number");
      }
      if (probability != 0.0) {
        result.experts.push_back(static_cast<ExpertId>(e));
        ++selected;
      }
    }
    if (selected != top_k) {
      throw FileInputError(
          path, where,
          std::to_string(selected) + " experts selected, top-k is " + std::to_string(top_k));
    }
  }
  return result;
}

TokenLayerFile read_topk_csv(const std::string& path, int num_experts, int top_k) {
  std::ifstream in = open_or_throw(path);
  TokenLayerFile result;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> fields = split(line, ',');
    long long value = 0;
    if (number == 1 && !parse_long(fields[0], &value)) continue;  // a header
    const std::string where = "line " + std::to_string(number);
    if (fields.size() != static_cast<std::size_t>(top_k)) {
      throw FileInputError(path, where,
                           "has " + std::to_string(fields.size()) + " expert ids, top-k is " +
                               std::to_string(top_k));
    }
    for (const std::string& field : fields) {
      if (!parse_long(field, &value))
        throw FileInputError(path, where, "'" + field + "' is not an integer");
      result.experts.push_back(checked_expert(value, num_experts, path, where));
    }
  }
  return result;
}

TokenLayerFile read_topk_npy(const std::string& path, int num_experts, int top_k) {
  std::ifstream in = open_or_throw(path);
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    throw FileInputError(path, "", "is not a .npy file (bad magic)");
  }
  const int major = static_cast<unsigned char>(magic[6]);
  if (major < 1 || major > 3) {
    throw FileInputError(
        path, "", "has .npy format version " + std::to_string(major) + " (1 to 3 are known)");
  }
  std::uint32_t header_length = 0;
  unsigned char length_bytes[4] = {0, 0, 0, 0};
  if (!in.read(reinterpret_cast<char*>(length_bytes), major == 1 ? 2 : 4)) {
    throw FileInputError(path, "", "truncated header");
  }
  for (int i = (major == 1 ? 1 : 3); i >= 0; --i)
    header_length = header_length << 8 | length_bytes[i];
  // Bounded before it is allocated: the length is the file's word.
  if (header_length > (1u << 20)) {
    throw FileInputError(
        path, "",
        "declares a " + std::to_string(header_length) + "-byte header (at most 1 MiB is read)");
  }
  std::string header(header_length, '\0');
  if (!in.read(header.data(), header_length)) throw FileInputError(path, "", "truncated header");
  auto value_of = [&](const std::string& key) {
    const std::size_t at = header.find("'" + key + "'");
    if (at == std::string::npos) throw FileInputError(path, key, "is missing from the header");
    return header.substr(header.find(':', at) + 1);
  };
  const std::string descr = value_of("descr");
  const std::size_t quote = descr.find('\'');
  const std::string type = descr.substr(quote + 1, descr.find('\'', quote + 1) - quote - 1);
  if (value_of("fortran_order").find("False") == std::string::npos) {
    throw FileInputError(path, "fortran_order", "must be False (C order)");
  }
  const std::string shape_text = value_of("shape");
  long long tokens = 0, columns = 0;
  if (std::sscanf(shape_text.c_str(), " (%lld, %lld)", &tokens, &columns) != 2 || tokens < 0) {
    throw FileInputError(path, "shape", "must be two-dimensional [tokens, top_k]");
  }
  if (columns < 1) throw FileInputError(path, "shape", "must have at least one column");
  if (columns != top_k) {
    throw FileInputError(
        path, "shape",
        "has " + std::to_string(columns) + " columns, top-k is " + std::to_string(top_k));
  }
  if (type.size() < 3 || (type[0] != '<' && type[0] != '|') || (type[1] != 'i' && type[1] != 'u')) {
    throw FileInputError(path, "descr", "'" + type + "' is not a little-endian integer type");
  }
  const int width = type[2] - '0';
  if (width != 1 && width != 2 && width != 4 && width != 8)
    throw FileInputError(path, "descr", "unsupported width");
  // The shape is the file's word: held to the bytes the file has before anything is allocated
  // (columns >= 1, so the division is safe and the product below cannot overflow).
  const std::streampos data_start = in.tellg();
  in.seekg(0, std::ios::end);
  const long long available = static_cast<long long>(in.tellg() - data_start);
  in.seekg(data_start);
  if (tokens > available / (columns * width)) {
    throw FileInputError(path, "shape",
                         "declares " + std::to_string(tokens) + " rows of " +
                             std::to_string(columns) + " x " + std::to_string(width) +
                             " bytes, the file holds " + std::to_string(available) +
                             " bytes of data");
  }
  std::vector<unsigned char> data(static_cast<std::size_t>(tokens * columns * width));
  if (!in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size()))) {
    throw FileInputError(path, "", "the data is truncated");
  }
  TokenLayerFile result;
  result.experts.reserve(static_cast<std::size_t>(tokens * columns));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (width == 4 && type[1] == 'i') {  // the common int32 case: reinterpret, then range-check
    result.experts.resize(static_cast<std::size_t>(tokens * columns));
    std::memcpy(result.experts.data(), data.data(), data.size());
    for (std::size_t i = 0; i < result.experts.size(); ++i) {
      if (result.experts[i] < 0 || result.experts[i] >= num_experts) {
        checked_expert(result.experts[i], num_experts, path, "row " + std::to_string(i / columns));
      }
    }
    return result;
  }
#endif
  for (long long i = 0; i < tokens * columns; ++i) {
    unsigned long long raw = 0;
    for (int b = width - 1; b >= 0; --b)
      raw = raw << 8 | data[static_cast<std::size_t>(i * width + b)];
    long long value = static_cast<long long>(raw);
    if (type[1] == 'i' && width < 8 && (raw >> (8 * width - 1)) != 0) value -= 1LL << (8 * width);
    result.experts.push_back(
        checked_expert(value, num_experts, path, "row " + std::to_string(i / columns)));
  }
  return result;
}

std::vector<std::string> files_in_natural_order(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      files.push_back(entry.path().string());
    }
  }
  if (error) throw FileInputError(dir, "", "cannot list the directory: " + error.message());
  auto natural_less = [](const std::string& a, const std::string& b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
      if (std::isdigit(static_cast<unsigned char>(a[i])) &&
          std::isdigit(static_cast<unsigned char>(b[j]))) {
        std::size_t i_end = i, j_end = j;
        while (i_end < a.size() && std::isdigit(static_cast<unsigned char>(a[i_end]))) ++i_end;
        while (j_end < b.size() && std::isdigit(static_cast<unsigned char>(b[j_end]))) ++j_end;
        const unsigned long long x = std::stoull(a.substr(i, std::min<std::size_t>(i_end - i, 18)));
        const unsigned long long y = std::stoull(b.substr(j, std::min<std::size_t>(j_end - j, 18)));
        if (x != y) return x < y;
        i = i_end;
        j = j_end;
      } else {
        if (a[i] != b[j]) return a[i] < b[j];
        ++i;
        ++j;
      }
    }
    return a.size() - i < b.size() - j;
  };
  std::sort(files.begin(), files.end(), natural_less);
  return files;
}

}  // namespace topoep
