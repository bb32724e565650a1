#include "tools/cli/model_command.h"

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "common/file_input_error.h"
#include "common/json_fields.h"
#include "common/text_list.h"
#include "models/hf_config.h"
#include "models/model_json.h"
#include "sim/cost_model.h"
#include "sim/expert_activations.h"
#include "sim/gpu_memory.h"
#include "sim/memory_bound_kernels.h"
#include "sim/sim_options.h"
#include "sim/solver_cost.h"
#include "tools/cli/table.h"
#include "topologies/topology_presets.h"

namespace topoep {
namespace {

// One expert's weights in bytes, as a replica moves them.
double expert_weight_bytes(const ModelSpec& model) {
  return model.expert_params() * model.weight_bytes;
}

std::string bytes_text(double bytes) {
  return std::to_string(static_cast<long long>(bytes)) + " bytes";
}

std::string megabytes(double bytes) { return format_fixed(bytes / 1e6, 1) + " MB"; }

std::string gigabytes(Bytes bytes) {
  return format_fixed(static_cast<double>(bytes) / 1e9, 2) + " GB";
}

// A GPU's copy of a MoE layer's dense gradients, at the simulator's default width.
double dense_gradient_bytes(const ModelSpec& model) {
  return model.dense_and_shared_params() * SimOptions{}.dense_grad_bytes;
}

std::string microseconds(Picoseconds ps) {
  return format_fixed(static_cast<double>(ps) / 1e6, 1) + " us";
}

}  // namespace

void print_model_preset_table(std::ostream& out) {
  TextTable table({"preset", "experts", "top-k", "hidden", "expert FFN", "MoE layers",
                   "dense layers", "vocabulary", "weights an expert"});
  for (const std::string& name : model_preset_names()) {
    const ModelSpec model = load_model(name);
    table.add_row({name, std::to_string(model.num_experts), std::to_string(model.top_k),
                   std::to_string(model.hidden_size), std::to_string(model.expert_ffn_size),
                   std::to_string(model.moe_layers), std::to_string(model.dense_layers),
                   std::to_string(model.vocab_size), megabytes(expert_weight_bytes(model))});
  }
  table.print(out);
}

void print_model(const ModelSpec& model, const Topology* topology, std::ostream& out) {
  out << model.name << ": " << model.num_experts << " routed experts, top-" << model.top_k << ", "
      << model.moe_layers << " MoE layers\n\n";
  TextTable table({"field", "value"});
  table.add_row({"hidden size", std::to_string(model.hidden_size)});
  table.add_row({"expert FFN size", std::to_string(model.expert_ffn_size)});
  table.add_row(
      {"bytes an element",
       "dispatch " + std::to_string(model.dispatch_bytes) +
           (model.dispatch_scale_block > 0
                ? " (an fp32 scale per " + std::to_string(model.dispatch_scale_block) + " elements)"
                : " (no scales)") +
           ", combine " + std::to_string(model.combine_bytes) + ", weights " +
           std::to_string(model.weight_bytes) + "; GEMMs in " +
           (model.fp8_gemms ? "fp8" : "bf16")});
  table.add_row({"dense parameters a layer", std::to_string(model.dense_params_per_layer)});
  table.add_row({"shared experts", std::to_string(model.shared_experts) + " of FFN size " +
                                       std::to_string(model.shared_expert_ffn_size)});
  table.add_row(
      {"attention",
       std::to_string(model.attention_heads) + " heads, q/k " +
           std::to_string(model.attention_qk_head_dim) + " and v " +
           std::to_string(model.attention_v_head_dim) + " a head" +
           (model.multi_latent_attention()
                ? " (MLA: query latent " +
                      (model.attention_q_lora_rank > 0 ? std::to_string(model.attention_q_lora_rank)
                                                       : std::string("none")) +
                      ", key-value latent " + std::to_string(model.attention_kv_lora_rank) +
                      ", RoPE " + std::to_string(model.attention_rope_head_dim) + ")"
            : model.key_value_heads() != model.attention_heads
                ? " (" + std::to_string(model.key_value_heads()) + " key-value heads)"
                : "") +
           ", sequence " + std::to_string(model.sequence_length) +
           (model.attention_window > 0
                ? ", a sliding window of " + std::to_string(model.attention_window) +
                      " tokens on " + std::to_string(model.attention_window_layers) + " of " +
                      std::to_string(model.moe_layers) + " layers"
                : "")});
  table.add_row({"dense-only layers", model.dense_layers > 0
                                          ? std::to_string(model.dense_layers) + " beside the " +
                                                std::to_string(model.moe_layers) +
                                                " MoE layers, FFN size " +
                                                std::to_string(model.dense_ffn_size)
                                          : "none"});
  table.add_row({"vocabulary", model.vocab_size > 0
                                   ? std::to_string(model.vocab_size) +
                                         (model.tied_embeddings ? ", embeddings tied to the head"
                                                                : ", embedding and head untied")
                                   : "not counted"});
  table.add_row(
      {"expert groups", model.expert_groups > 0
                            ? std::to_string(model.expert_groups) + " of " +
                                  std::to_string(model.num_experts / model.expert_groups) +
                                  ", a token's experts from " +
                                  std::to_string(model.expert_groups_per_token) +
                                  " (EPLB's num_groups with simulate --eplb-groups model)"
                            : "none (routing not group-limited)"});
  table.add_row({"tokens a GPU and microbatch", std::to_string(model.tokens_per_rank)});
  // What the cost model takes from them (sim/README.md), from the ModelSpec methods the
  // solver's derivation and the simulator use.
  table.add_row({"derived, a token assignment", ""});
  table.add_row({"  dispatch", bytes_text(model.dispatch_bytes_per_token())});
  table.add_row({"  combine", bytes_text(model.combine_bytes_per_token())});
  table.add_row({"  expert forward", format_fixed(model.expert_flops_per_token() / 1e6, 1) +
                                         " MFLOP (6 x hidden x expert FFN)"});
  table.add_row(
      {"  expert activations",
       bytes_text(static_cast<double>(model.expert_activation_bytes_per_token())) +
           (model.fp8_gemms
                ? " kept for the backward ((hidden + 3 x expert FFN) in fp8, an fp32 "
                  "scale per 128), "
                : " kept for the backward ((hidden + 3 x expert FFN) x combine bytes), ") +
           bytes_text(static_cast<double>(model.expert_activation_bytes_per_token(true))) +
           " with the gated activation recomputed"});
  // The token buffers (sim/expert_activations.h) where Megatron-LM sorts a GPU's several local
  // experts' tokens, and under DeepEP.
  const TokenBufferBytes sorted = token_buffer_bytes(model, Dispatcher::kPerAssignment, 2);
  const TokenBufferBytes deepep_buffers = token_buffer_bytes(model, Dispatcher::kDeepEP, 2);
  table.add_row({"  token buffers",
                 bytes_text(static_cast<double>(sorted.forward)) +
                     " for a moment as its layer's forward runs, " +
                     bytes_text(static_cast<double>(sorted.backward)) +
                     " as its backward does (the experts' output, its gradients and their "
                     "copies sorted back, a GPU of several local experts); " +
                     bytes_text(static_cast<double>(deepep_buffers.forward)) + " and " +
                     bytes_text(static_cast<double>(deepep_buffers.backward)) + " with DeepEP"});
  // The memory-bound kernels' bytes (sim/memory_bound_kernels.h) with the simulator's default
  // options: per-assignment all-to-alls, nothing recomputed, bf16 gradients.
  const MemoryBoundBytes kernels = memory_bound_bytes(model, SimOptions{});
  SimOptions deepep;
  deepep.dispatcher = Dispatcher::kDeepEP;
  table.add_row({"  memory-bound kernels",
                 bytes_text(kernels.expert_assignment) +
                     " read and written at its expert, forward and backward (the token's "
                     "permutations, the gated activation; simulate --memory-bound-kernels)"});
  const bool mla = model.multi_latent_attention();
  table.add_row(
      {"  dense activations",
       bytes_text(
           static_cast<double>(model.moe_layer_dense_activation_bytes_per_token(false, false))) +
           " a token and MoE layer kept for the backward (attention, norms, router, shared "
           "experts), " +
           bytes_text(
               static_cast<double>(model.moe_layer_dense_activation_bytes_per_token(true, mla))) +
           " with the norms" + (mla ? " and MLA's up-projections" : "") + " recomputed" +
           (model.dense_layers > 0
                ? "; a dense-only layer " +
                      bytes_text(static_cast<double>(
                          model.dense_layer_activation_bytes_per_token(false, false))) +
                      ", " +
                      bytes_text(static_cast<double>(
                          model.dense_layer_activation_bytes_per_token(true, mla)))
                : std::string())});
  if (model.vocab_size > 0) {
    table.add_row(
        {"  head activations",
         bytes_text(static_cast<double>(model.head_activation_bytes_per_token(false))) +
             " a token kept for the backward on the last stage (the final norm, the head's "
             "input, the loss's fp32 softmax over the vocabulary), " +
             bytes_text(static_cast<double>(model.head_activation_bytes_per_token(true))) +
             " with the norms recomputed; for the moment the loss runs, " +
             bytes_text(static_cast<double>(model.loss_transient_bytes_per_token())) +
             " more (the logits in bf16 and their fp32 copy)"});
  }
  table.add_row({"derived, a layer", ""});
  table.add_row({"  dense forward", format_fixed(model.dense_flops_per_token() / 1e6, 1) +
                                        " MFLOP a token (dense parameters, shared experts, "
                                        "attention scores)"});
  if (model.outside_flops_per_token() > 0) {
    std::vector<std::string> parts;
    if (model.dense_layers > 0) {
      parts.push_back(
          std::to_string(model.dense_layers) + " / " + std::to_string(model.moe_layers) + " of a " +
          format_fixed(model.dense_layer_flops_per_token() / 1e6, 1) + " MFLOP dense-only layer");
    }
    if (model.vocab_size > 0) {
      parts.push_back("1 / " + std::to_string(model.moe_layers) + " of a " +
                      format_fixed(model.head_flops_per_token() / 1e6, 1) + " MFLOP output head");
    }
    table.add_row({"  outside the MoE layers",
                   format_fixed(model.outside_flops_per_token() / 1e6, 1) + " MFLOP a token (" +
                       spoken_list(parts) + "), no overlap window"});
  }
  table.add_row(
      {"  memory-bound kernels",
       bytes_text(kernels.moe_layer) + " a token with the alltoall dispatcher, " +
           bytes_text(memory_bound_bytes(model, deepep).moe_layer) +
           " with DeepEP's (norms, residual adds, RoPE, router, shared experts, the source's "
           "permutations), forward and backward" +
           (model.dense_layers > 0 ? "; a dense-only layer " + bytes_text(kernels.dense_only_layer)
                                   : std::string()) +
           (model.vocab_size > 0
                ? "; a pass through the head and loss " + bytes_text(kernels.head_pass) +
                      ", the embedding " + bytes_text(kernels.embedding)
                : std::string())});
  table.add_row({"  a replica's weights", megabytes(expert_weight_bytes(model)) +
                                              " (3 x hidden x expert FFN x weight bytes), its "
                                              "gradients the same"});
  table.add_row({"  dense gradients", megabytes(dense_gradient_bytes(model)) +
                                          " in bf16 (attention, shared experts and the layer's "
                                          "shares outside the MoE layers): the data-parallel "
                                          "all-reduce's buffer"});
  if (topology != nullptr) {
    // The cluster's side: the solver's own derivation.
    const SolverCostDerivation derived =
        derive_solver_cost(*topology, model, model.tokens_per_rank, true);
    const CostParams& p = derived.params;
    table.add_row({"on " + topology->name, ""});
    table.add_row(
        {"  expert compute", format_fixed(static_cast<double>(p.compute_ps_per_token) / 1e3, 2) +
                                 " ns a token assignment (" + (model.fp8_gemms ? "fp8" : "bf16") +
                                 " peak x best GEMM "
                                 "efficiency " +
                                 format_fixed(derived.gemm_efficiency, 3) + ")"});
    table.add_row({"  smallest instance", std::to_string(p.instance_min_tokens) +
                                              " tokens' compute (below it, reading the weights "
                                              "bounds the GEMM)"});
    table.add_row({"  dense forward", microseconds(p.weight_overlap_ps) + " at " +
                                          std::to_string(model.tokens_per_rank) +
                                          " tokens: the window replica weights hide in"});
    const AttentionEfficiency attention = attention_efficiency_at(*topology, model);
    table.add_row({"  attention core",
                   format_fixed(attention.forward, 3) + " of the bf16 peak forward, " +
                       format_fixed(attention.backward, 3) +
                       " backward (2.5 x the forward's FLOPs) at " +
                       std::to_string(model.sequence_length) + " tokens a sequence" +
                       (topology->attention_efficiency.empty()
                            ? std::string(": the GEMM curve's best, the topology giving no figures")
                            : std::string(", as FlashAttention runs it (the topology's curve)"))});
    table.add_row({"  a replica's weights",
                   microseconds(transfer_ps(p.replica_weight_bytes, p.scale_up)) + " over " +
                       topology->scale_up.name + ", " +
                       microseconds(transfer_ps(p.replica_weight_bytes, p.scale_out)) + " over " +
                       topology->scale_out.name});
    // The simulator's own collectives, as it prices them for either sync.
    const CostModel all_reduce(*topology, model, SimOptions{}, model.tokens_per_rank);
    SimOptions zero1;
    zero1.dense_sync = DenseSync::kDistributedOptimizer;
    const CostModel distributed(*topology, model, zero1, model.tokens_per_rank);
    table.add_row(
        {"  dense gradients' all-reduce",
         microseconds(all_reduce.dense_gradient_sync().time_ps) +
             " a layer and step, as NCCL's ring over the " + std::to_string(topology->num_gpus()) +
             " GPUs, with the replica gradients' in the backward's link-idle compute (the "
             "attention backward after it: " +
             microseconds(2 * all_reduce.dense_forward_ps(model.tokens_per_rank) +
                          all_reduce.dense_backward_extra_ps(model.tokens_per_rank)) +
             ")"});
    table.add_row({"  with --dense-sync distributed",
                   microseconds(distributed.dense_gradient_sync().time_ps) +
                       " reduce-scatter overlapped alike, " +
                       microseconds(distributed.dense_param_gather().time_ps) +
                       " all-gather on the step's first microbatch, in the link-idle forward "
                       "of the layer before (its attention, after its new replicas' weights, "
                       "and its expert compute)"});
    SimOptions two_groups;
    two_groups.data_parallel = 2;
    const CostModel experts(*topology, model, two_groups, model.tokens_per_rank);
    const int most_homed = experts.most_homed_experts();
    table.add_row({"  with --data-parallel 2",
                   microseconds(experts.expert_gradient_sync().time_ps) + " all-reduce of " +
                       megabytes(model.expert_params() * most_homed * two_groups.dense_grad_bytes) +
                       " (" + std::to_string(most_homed) +
                       (most_homed == 1 ? " home expert's" : " home experts'") +
                       " gradients) with the other group over " + topology->scale_out.name +
                       ", after the replica gradients, overlapped alike; the dense all-reduce " +
                       microseconds(experts.dense_gradient_sync().time_ps)});
    // What a GPU holds before any activations, every MoE layer on one stage (sim/gpu_memory.h).
    const StageParameters whole = all_reduce.pipeline_parameters({model.moe_layers}, 1).front();
    table.add_row(
        {"  model state a GPU",
         gigabytes(model_state_bytes(whole, model, SimOptions{})) + " with every MoE layer on " +
             std::to_string(topology->num_gpus()) +
             " GPUs (weights, gradients, optimizer state; simulate prints it per stage and "
             "planner, with the spare slots' and the activations)"});
    table.add_row(
        {"  a spare slot", gigabytes(spare_slot_bytes(model, 1, model.moe_layers)) +
                               " a GPU over every MoE layer (a replica's weights and gradients)"});
  }
  table.print(out);
  out << "\nsource: " << model.source << "\n";
}

void add_model_command(CLI::App& app) {
  CLI::App* model = app.add_subcommand("model", "List, show and validate MoE models");
  model->require_subcommand(1);

  model->add_subcommand("list", "List the built-in model presets")->callback([] {
    print_model_preset_table(std::cout);
  });

  CLI::App* show = model->add_subcommand("show", "Print a model preset or file");
  auto show_target = std::make_shared<std::string>();
  auto show_topology = std::make_shared<std::string>();
  auto show_json = std::make_shared<bool>(false);
  show->add_option("model", *show_target, "Preset name or JSON file")->required();
  show->add_option("--topology", *show_topology,
                   "Also the derived costs as times on this cluster (preset or file)");
  show->add_flag("--json", *show_json, "Print the canonical JSON instead of a table");
  show->callback([show_target, show_topology, show_json] {
    const ModelSpec loaded = load_model(*show_target);
    if (*show_json) {
      std::cout << model_to_json(loaded).dump(2) << "\n";
      return;
    }
    if (show_topology->empty()) {
      print_model(loaded, nullptr, std::cout);
    } else {
      const Topology topology = load_topology(*show_topology);
      print_model(loaded, &topology, std::cout);
    }
  });

  CLI::App* from_hf = model->add_subcommand(
      "from-hf",
      "Write a model file from a Hugging Face config.json (DeepSeek-V2/V3, Kimi K2, "
      "ERNIE 4.5, GLM-4.5, gpt-oss, Llama 4, MiniMax-M2, Mixtral, OLMoE, Qwen2-MoE, Qwen3-MoE)");
  auto hf_config = std::make_shared<std::string>();
  auto hf_out = std::make_shared<std::string>();
  auto hf_choices = std::make_shared<HfRunChoices>();
  from_hf->add_option("config", *hf_config, "The model's config.json")->required();
  from_hf->add_option("--out", *hf_out, "Write the model file here (default: print it)");
  from_hf->add_option("--name", hf_choices->name, "Model name (default: the config's file name)");
  from_hf->add_flag("--fp8-dispatch", hf_choices->fp8_dispatch,
                    "Dispatch in fp8 with an fp32 scale per 128 elements (DeepEP); default bf16");
  from_hf->add_flag("--fp8-gemms", hf_choices->fp8_gemms,
                    "The GEMMs run in fp8 at the GPU's fp8 peak (DeepSeek-V3's FP8 training); "
                    "default bf16");
  from_hf
      ->add_option("--sequence-length", hf_choices->sequence_length,
                   "Your run's training sequence length")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  from_hf
      ->add_option("--tokens-per-rank", hf_choices->tokens_per_rank,
                   "Default tokens per GPU per microbatch")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  from_hf->callback([hf_config, hf_out, hf_choices] {
    const nlohmann::json config = parse_json_text(read_text_file(*hf_config), *hf_config);
    HfRunChoices choices = *hf_choices;
    // A config.json's own file name says nothing: name the model after its directory.
    if (choices.name.empty()) {
      const std::filesystem::path path = std::filesystem::absolute(*hf_config);
      choices.name =
          path.stem() == "config" ? path.parent_path().filename().string() : path.stem().string();
    }
    const ModelSpec derived = model_from_hf_config(config, *hf_config, choices);
    const std::string text = model_to_json(derived).dump(2) + "\n";
    if (hf_out->empty()) {
      std::cout << text;
      return;
    }
    if (std::filesystem::exists(*hf_out)) {
      throw FileInputError(*hf_out, "", "already exists: not overwriting it");
    }
    AtomicFile file(*hf_out);
    file.write(text);
    file.commit();
    std::cout << "Wrote " << *hf_out << ": " << derived.name << ", " << derived.num_experts
              << " experts, top-" << derived.top_k << ", " << derived.moe_layers
              << " MoE layers; check the run's choices in its source field\n";
  });

  CLI::App* validate = model->add_subcommand("validate", "Check a model file");
  auto validate_path = std::make_shared<std::string>();
  validate->add_option("file", *validate_path, "Model JSON file")->required();
  validate->callback([validate_path] {
    const ModelSpec loaded = load_model_file(*validate_path);
    std::cout << *validate_path << ": valid model '" << loaded.name << "' (" << loaded.num_experts
              << " experts, top-" << loaded.top_k << ", " << loaded.moe_layers << " MoE layers)\n";
  });
}

}  // namespace topoep
