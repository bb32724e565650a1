#pragma once
// Readers of per-token routing files, one MoE layer each: FLAME-MoE router-probability CSV,
// and generic top-k expert ids as CSV or .npy. Each gives top_k expert ids per token, token
// after token, in file order; errors are FileInputError naming the file and the line/field.
// Each streams into an IdSink (a line, or a block of a .npy's rows, at a time: nothing the
// size of the file is held), or returns the whole layer.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "solver/types.h"

namespace topoep {

struct TokenLayerFile {
  int layer = -1;                 // the file's layer id (FLAME's layer_id column), -1 if none
  std::vector<ExpertId> experts;  // [tokens * top_k]
};

// Where a reader puts the ids it has read and checked: `count` ids, whole tokens, in order.
using IdSink = std::function<void(const ExpertId* ids, std::size_t count)>;

// Header `layer_id,token_id,expert_0..expert_{E-1}`; a column is non-zero where the token was
// routed to that expert (ids ascending per token). Every row must have exactly top_k non-zero
// columns and the file one layer_id. The streaming form returns that layer_id (-1: no rows).
TokenLayerFile read_flame_csv(const std::string& path, int num_experts, int top_k);
int read_flame_csv(const std::string& path, int num_experts, int top_k, const IdSink& sink);
// The layer_id of a FLAME CSV's first row, -1 if it has none; reads (and checks) the header and
// that row alone.
int flame_csv_first_layer(const std::string& path, int num_experts, int top_k);

// One row per token: top_k expert ids, comma-separated; a first line that is not numeric is a
// header and skipped.
TokenLayerFile read_topk_csv(const std::string& path, int num_experts, int top_k);
void read_topk_csv(const std::string& path, int num_experts, int top_k, const IdSink& sink);

// A C-order integer array of shape [tokens, top_k], one layer, or [layers, tokens, top_k]
// (numpy .npy v1-3; i1/i2/i4/i8/u1/u2/u4). The streaming form reads layer `layer` (0 for a
// two-dimensional array); the whole-layer form, the first.
TokenLayerFile read_topk_npy(const std::string& path, int num_experts, int top_k);
void read_topk_npy(const std::string& path, int num_experts, int top_k, const IdSink& sink,
                   int layer = 0);
// The layers a .npy holds: its first dimension where it has three, else 1.
int topk_npy_layers(const std::string& path);

// What a per-token file says of its routing's shape before it is read whole: the experts (a
// FLAME header's columns; 0 for the top-k formats, which list the experts chosen, not how many
// the model has) and the experts a token picks (its first token's; a .npy's columns; 0 where
// the file holds no token). `format` is "flame-csv", "topk-csv" or "topk-npy"; the header and
// the first row are checked as the readers check them.
struct TokenFileShape {
  int num_experts = 0;
  int top_k = 0;
};
TokenFileShape read_token_file_shape(const std::string& format, const std::string& path);

// The regular files in `dir` whose names end in `suffix`, in natural order (digit runs compare
// as numbers: layer2 < layer10).
std::vector<std::string> files_in_natural_order(const std::string& dir, const std::string& suffix);

}  // namespace topoep
