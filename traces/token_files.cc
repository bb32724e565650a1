#include "traces/token_files.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "common/file_input_error.h"
#include "traces/text_fields.h"

namespace topoep {
namespace {

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

// Checks a FLAME CSV's header (for `num_experts` experts; 0: any number); returns its number of
// fields.
std::size_t read_flame_header(std::ifstream& in, const std::string& path, int num_experts) {
  std::string line;
  if (!std::getline(in, line)) throw FileInputError(path, "line 1", "the header is missing");
  std::vector<std::string_view> header;
  split_fields(line, ',', true, &header);
  const bool sized = num_experts == 0 || header.size() == static_cast<std::size_t>(num_experts) + 2;
  if (!sized || header.size() < 3 || header[0] != "layer_id" || header[1] != "token_id" ||
      header[2] != "expert_0") {
    throw FileInputError(path, "line 1",
                         num_experts == 0
                             ? std::string("header must be layer_id,token_id,expert_0,...")
                             : "header must be layer_id,token_id,expert_0..expert_" +
                                   std::to_string(num_experts - 1));
  }
  return header.size();
}

// What read_flame_row() reuses from row to row, so that a row allocates nothing.
struct FlameRowScratch {
  std::vector<std::string_view> fields;
  std::string number;  // a field's text, terminated for strtod
  std::vector<ExpertId> token;
};

// One FLAME CSV row: the token's selected experts into `scratch->token` (exactly top_k of
// them; any number where top_k is 0); returns its layer_id.
int read_flame_row(const std::string& path, int number, const std::string& line,
                   std::size_t header_size, int num_experts, int top_k, FlameRowScratch* scratch) {
  const std::string where = "line " + std::to_string(number);
  std::vector<std::string_view>& fields = scratch->fields;
  std::vector<ExpertId>* const token = &scratch->token;
  split_fields(line, ',', true, &fields);
  if (fields.size() != header_size) {
    throw FileInputError(path, where,
                         "has " + std::to_string(fields.size()) + " fields, the header " +
                             std::to_string(header_size));
  }
  long long layer = 0;
  if (!read_trimmed_integer(fields[0], &layer)) {
    throw FileInputError(path, where + " layer_id", "is not an integer");
  }
  token->clear();
  std::string& number_text = scratch->number;
  for (int e = 0; e < num_experts; ++e) {
    const std::string_view field = fields[2 + e];
    if (field == "0") continue;  // the unselected experts: most of a row
    number_text.assign(field);
    char* end = nullptr;
    const double probability = std::strtod(number_text.c_str(), &end);
    if (end == number_text.c_str()) {
      throw FileInputError(path, where + " expert_" + std::to_string(e), "is not a number");
    }
    if (probability != 0.0) token->push_back(static_cast<ExpertId>(e));
  }
  if (top_k != 0 && static_cast<int>(token->size()) != top_k) {
    throw FileInputError(
        path, where,
        std::to_string(token->size()) + " experts selected, top-k is " + std::to_string(top_k));
  }
  return static_cast<int>(layer);
}

constexpr bool kLittleEndianHost = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

// A little-endian integer of `width` bytes.
long long decode_npy_integer(const unsigned char* at, int width, bool is_signed) {
  unsigned long long raw = 0;
  for (int byte = width - 1; byte >= 0; --byte) raw = raw << 8 | at[byte];
  long long value = static_cast<long long>(raw);
  if (is_signed && width < 8 && (raw >> (8 * width - 1)) != 0) value -= 1LL << (8 * width);
  return value;
}

bool blank(const std::string& line) { return line.empty() || line == "\r"; }

// Whether a top-k CSV's line `number` (1-based), split into `fields`, is its header: a first
// line whose first field is not an integer.
bool topk_csv_header(int number, const std::vector<std::string_view>& fields) {
  long long value = 0;
  return number == 1 && !read_trimmed_integer(fields[0], &value);
}

IdSink append_to(std::vector<ExpertId>* ids) {
  return [ids](const ExpertId* first, std::size_t count) {
    ids->insert(ids->end(), first, first + count);
  };
}

}  // namespace

int read_flame_csv(const std::string& path, int num_experts, int top_k, const IdSink& sink) {
  std::ifstream in = open_or_throw(path);
  const std::size_t header_size = read_flame_header(in, path, num_experts);
  int file_layer = -1;
  FlameRowScratch row;
  std::string line;
  for (int number = 2; std::getline(in, line); ++number) {
    if (blank(line)) continue;
    const int layer = read_flame_row(path, number, line, header_size, num_experts, top_k, &row);
    if (file_layer >= 0 && layer != file_layer) {
      throw FileInputError(
          path, "line " + std::to_string(number) + " layer_id",
          "is " + std::to_string(layer) + ", earlier rows " + std::to_string(file_layer));
    }
    file_layer = layer;
    sink(row.token.data(), row.token.size());
  }
  return file_layer;
}

TokenLayerFile read_flame_csv(const std::string& path, int num_experts, int top_k) {
  TokenLayerFile result;
  result.layer = read_flame_csv(path, num_experts, top_k, append_to(&result.experts));
  return result;
}

int flame_csv_first_layer(const std::string& path, int num_experts, int top_k) {
  std::ifstream in = open_or_throw(path);
  const std::size_t header_size = read_flame_header(in, path, num_experts);
  FlameRowScratch row;
  std::string line;
  for (int number = 2; std::getline(in, line); ++number) {
    if (!blank(line)) {
      return read_flame_row(path, number, line, header_size, num_experts, top_k, &row);
    }
  }
  return -1;
}

void read_topk_csv(const std::string& path, int num_experts, int top_k, const IdSink& sink) {
  std::ifstream in = open_or_throw(path);
  // Handed on a block at a time, not a token at a time: the sink's call per token cost more
  // than the token's parsing.
  constexpr std::size_t kBlockIds = 1 << 14;
  std::vector<ExpertId> block;
  block.reserve(kBlockIds + static_cast<std::size_t>(top_k));
  std::vector<std::string_view> fields;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (blank(line)) continue;
    split_fields(line, ',', true, &fields);
    if (topk_csv_header(number, fields)) continue;
    if (fields.size() != static_cast<std::size_t>(top_k)) {
      throw FileInputError(path, "line " + std::to_string(number),
                           "has " + std::to_string(fields.size()) + " expert ids, top-k is " +
                               std::to_string(top_k));
    }
    for (const std::string_view field : fields) {
      long long value = 0;
      if (!read_trimmed_integer(field, &value)) {
        throw FileInputError(path, "line " + std::to_string(number),
                             "'" + std::string(field) + "' is not an integer");
      }
      if (value < 0 || value >= num_experts) {
        checked_expert(value, num_experts, path, "line " + std::to_string(number));
      }
      block.push_back(static_cast<ExpertId>(value));
    }
    if (block.size() >= kBlockIds) {
      sink(block.data(), block.size());
      block.clear();
    }
  }
  if (!block.empty()) sink(block.data(), block.size());
}

TokenLayerFile read_topk_csv(const std::string& path, int num_experts, int top_k) {
  TokenLayerFile result;
  read_topk_csv(path, num_experts, top_k, append_to(&result.experts));
  return result;
}

namespace {

// A .npy file's header, read and checked up to its data: [layers, rows, columns] (or [rows,
// columns], one layer) of `width`-byte little-endian integers.
struct NpyHeader {
  bool layered = false;  // three dimensions
  long long layers = 1;
  long long rows = 0;
  long long columns = 0;
  int width = 0;
  bool is_signed = false;
};

// The dimensions of a .npy header's shape tuple, "(4, 2)" or "(3, 4, 2)" (a trailing comma
// allowed); empty when it is not a tuple of non-negative integers.
std::vector<long long> npy_dimensions(const std::string& text) {
  const std::size_t open = text.find('('), close = text.find(')');
  std::vector<long long> dims;
  if (open == std::string::npos || close == std::string::npos || close < open) return dims;
  std::vector<std::string_view> fields;
  split_fields(std::string_view(text).substr(open + 1, close - open - 1), ',', true, &fields);
  for (std::size_t i = 0; i < fields.size(); ++i) {
    long long value = 0;
    if (fields[i].empty() && i + 1 == fields.size() && i > 0) break;  // "(4,)"
    if (!read_trimmed_integer(fields[i], &value) || value < 0) return {};
    dims.push_back(value);
  }
  return dims;
}

NpyHeader read_npy_header(std::ifstream& in, const std::string& path) {
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
  const std::vector<long long> dims = npy_dimensions(value_of("shape"));
  if (dims.size() != 2 && dims.size() != 3) {
    throw FileInputError(path, "shape",
                         "must be [tokens, top_k] or [layers, tokens, top_k] (non-negative)");
  }
  NpyHeader npy;
  npy.layered = dims.size() == 3;
  if (npy.layered) npy.layers = dims[0];
  npy.rows = dims[dims.size() - 2];
  npy.columns = dims.back();
  if (npy.columns < 1) throw FileInputError(path, "shape", "must have at least one column");
  if (type.size() < 3 || (type[0] != '<' && type[0] != '|') || (type[1] != 'i' && type[1] != 'u')) {
    throw FileInputError(path, "descr", "'" + type + "' is not a little-endian integer type");
  }
  npy.width = type[2] - '0';
  if (npy.width != 1 && npy.width != 2 && npy.width != 4 && npy.width != 8)
    throw FileInputError(path, "descr", "unsupported width");
  npy.is_signed = type[1] == 'i';
  return npy;
}

}  // namespace

void read_topk_npy(const std::string& path, int num_experts, int top_k, const IdSink& sink,
                   int layer) {
  std::ifstream in = open_or_throw(path);
  const NpyHeader npy = read_npy_header(in, path);
  const long long tokens = npy.rows, columns = npy.columns;
  const int width = npy.width;
  if (columns != top_k) {
    throw FileInputError(
        path, "shape",
        "has " + std::to_string(columns) + " columns, top-k is " + std::to_string(top_k));
  }
  if (layer < 0 || layer >= npy.layers) {
    throw FileInputError(
        path, "shape",
        "has " + std::to_string(npy.layers) + " layers, not a layer " + std::to_string(layer));
  }
  // The shape is the file's word: held to the bytes the file has before anything is allocated
  // (in long double: the product of three declared sizes may pass 64 bits).
  const std::streampos data_start = in.tellg();
  in.seekg(0, std::ios::end);
  const long long available = static_cast<long long>(in.tellg() - data_start);
  const long double declared = static_cast<long double>(npy.layers) * tokens * columns * width;
  if (declared > static_cast<long double>(available)) {
    throw FileInputError(path, "shape",
                         "declares " +
                             (npy.layered ? std::to_string(npy.layers) + " layers of " : "") +
                             std::to_string(tokens) + " rows of " + std::to_string(columns) +
                             " x " + std::to_string(width) + " bytes, the file holds " +
                             std::to_string(available) + " bytes of data");
  }
  in.seekg(data_start + static_cast<std::streamoff>(layer * tokens * columns * width));
  const std::string row_of = npy.layered ? "layer " + std::to_string(layer) + " row " : "row ";
  // A block of rows at a time: the file's data is never held whole.
  const long long rows_per_block = std::max(1LL, (1LL << 20) / (columns * width));
  std::vector<unsigned char> data;
  std::vector<ExpertId> ids;
  for (long long first_row = 0; first_row < tokens; first_row += rows_per_block) {
    const long long rows = std::min(rows_per_block, tokens - first_row);
    data.resize(static_cast<std::size_t>(rows * columns * width));
    ids.resize(static_cast<std::size_t>(rows * columns));
    if (!in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size()))) {
      throw FileInputError(path, "", "the data is truncated");
    }
    // The common int32 case on a little-endian host: the bytes are the ids.
    const bool int32 = kLittleEndianHost && width == 4 && npy.is_signed;
    if (int32) std::memcpy(ids.data(), data.data(), data.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const long long value =
          int32 ? ids[i] : decode_npy_integer(&data[i * width], width, npy.is_signed);
      if (value < 0 || value >= num_experts) {
        checked_expert(value, num_experts, path,
                       row_of + std::to_string(first_row + static_cast<long long>(i) / columns));
      }
      ids[i] = static_cast<ExpertId>(value);
    }
    sink(ids.data(), ids.size());
  }
}

int topk_npy_layers(const std::string& path) {
  std::ifstream in = open_or_throw(path);
  const long long layers = read_npy_header(in, path).layers;
  if (layers > (1 << 20)) {
    throw FileInputError(path, "shape",
                         "declares " + std::to_string(layers) + " layers (at most 2^20 are read)");
  }
  return static_cast<int>(layers);
}

TokenLayerFile read_topk_npy(const std::string& path, int num_experts, int top_k) {
  TokenLayerFile result;
  read_topk_npy(path, num_experts, top_k, append_to(&result.experts));
  return result;
}

TokenFileShape read_token_file_shape(const std::string& format, const std::string& path) {
  std::ifstream in = open_or_throw(path);
  TokenFileShape shape;
  std::string line;
  if (format == "topk-npy") {
    shape.top_k = static_cast<int>(std::min<long long>(read_npy_header(in, path).columns, 1 << 16));
    return shape;
  }
  if (format == "flame-csv") {
    const std::size_t header_size = read_flame_header(in, path, 0);
    shape.num_experts = static_cast<int>(header_size - 2);
    FlameRowScratch row;
    for (int number = 2; std::getline(in, line); ++number) {
      if (blank(line)) continue;
      read_flame_row(path, number, line, header_size, shape.num_experts, 0, &row);
      shape.top_k = static_cast<int>(row.token.size());
      break;
    }
    return shape;
  }
  std::vector<std::string_view> fields;
  for (int number = 1; std::getline(in, line); ++number) {
    if (blank(line)) continue;
    split_fields(line, ',', true, &fields);
    if (topk_csv_header(number, fields)) continue;
    shape.top_k = static_cast<int>(std::min<std::size_t>(fields.size(), 1 << 16));
    break;
  }
  return shape;
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
