#pragma once
// The columns of per_layer.csv, one row per (record, planner). The simulator writes them
// (csv_rows.h) and so does the harness for its measurements, so the two compare line by line
// (topoep compare). Times in µs; bytes as integers. `group`: the data-parallel group whose
// routing the row prices (empty for the ideal). `a2a_hidden_us`: what of the record's token
// all-to-alls ran behind another microbatch's compute (SimOptions::a2a_overlap_fraction), left
// out of moe_us; the phases' own columns stay whole. `moe_forward_us`: the MoE layer's forward
// alone (moe_us is forward and backward), what the harness measures and `topoep compare`
// compares. `outside_forward_us`: the part of dense_forward_us that is the record's share of the
// layers outside the MoE (CostModel's outside_forward), which no overlap window counts.

#include <string>

namespace topoep {

inline std::string per_layer_csv_header() {
  return "step,microbatch,layer,planner,moe_us,dispatch_us,compute_us,combine_us,"
         "weight_exposed_us,combine_grad_us,compute_grad_us,dispatch_grad_us,grad_reduce_us,"
         "dense_grad_reduce_us,dense_param_gather_us,expert_grad_sync_us,expert_param_gather_us,"
         "overhead_us,dense_forward_us,"
         "critical_path_us,max_mean_load,nvlink_dispatch_bytes,"
         "ib_dispatch_bytes,nvlink_weight_bytes,ib_weight_bytes,new_replicas,plan_hash,group,"
         "a2a_hidden_us,moe_forward_us,outside_forward_us\n";
}

}  // namespace topoep
