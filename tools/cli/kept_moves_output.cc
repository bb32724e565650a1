#include "tools/cli/kept_moves_output.h"

#include <string>

#include "tools/cli/table.h"

namespace topoep {
namespace {

// The run the moves are kept from, as solver/README.md names them (step 6).
const char* run_name(KeptMoves::Run run) {
  switch (run) {
    case KeptMoves::Run::kSeeded:
      return "seeded";
    case KeptMoves::Run::kOpened:
      return "opened";
    case KeptMoves::Run::kOpenedIb:
      return "ib-opened";
    case KeptMoves::Run::kPlain:
      break;
  }
  return "first";
}

const char* instance_name(KeptMove::Instance instance) {
  switch (instance) {
    case KeptMove::Instance::kReplica:
      return "replica";
    case KeptMove::Instance::kNewReplica:
      return "new replica";
    case KeptMove::Instance::kHome:
      break;
  }
  return "home";
}

}  // namespace

nlohmann::json kept_moves_json(const KeptMoves& kept) {
  nlohmann::json moves = nlohmann::json::array();
  for (const KeptMove& move : kept.moves) {
    moves.push_back({{"phase", move.ib_levelling ? "ib" : "greedy"},
                     {"expert", move.expert},
                     {"tokens", move.tokens},
                     {"from_rank", move.from_rank},
                     {"from", instance_name(move.from)},
                     {"to_rank", move.to_rank},
                     {"to", instance_name(move.to)},
                     {"ib_delta", move.ib_delta},
                     {"gain_us", move.gain / 1e6}});
  }
  return {{"run", run_name(kept.run)}, {"moves", moves}};
}

void print_kept_moves(const KeptMoves& kept, const std::string& record, int gpus_per_node,
                      std::ostream& out) {
  out << "\n"
      << record << ": " << kept.moves.size() << " moves from the static plan, kept from the "
      << run_name(kept.run) << (kept.run == KeptMoves::Run::kPlain ? " run" : " second run")
      << " (solver/README.md, steps 2-6)\n";
  if (kept.moves.empty()) return;
  TextTable table({"#", "phase", "expert", "tokens", "from", "to", "IB tokens", "est. gain us"});
  auto where = [&](RankId rank, KeptMove::Instance instance) {
    return "rank " + std::to_string(rank) + " (node " + std::to_string(rank / gpus_per_node) +
           ", " + instance_name(instance) + ")";
  };
  for (std::size_t i = 0; i < kept.moves.size(); ++i) {
    const KeptMove& move = kept.moves[i];
    table.add_row({std::to_string(i + 1), move.ib_levelling ? "IB" : "greedy",
                   std::to_string(move.expert), std::to_string(move.tokens),
                   where(move.from_rank, move.from), where(move.to_rank, move.to),
                   (move.ib_delta > 0 ? "+" : "") + std::to_string(move.ib_delta),
                   move.ib_levelling ? "-" : format_fixed(move.gain / 1e6, 1)});
  }
  table.print(out);
}

}  // namespace topoep
