// Helpers shared by the scenario tests: paths to shipped files (through PLACESIM_SOURCE_DIR,
// never the working directory) and a canonical dump of a resolved Scenario, so two scenarios
// compare equal exactly when every field agrees.
#ifndef PLACESIM_TESTS_SIM_SCENARIO_TEST_UTIL_H_
#define PLACESIM_TESTS_SIM_SCENARIO_TEST_UTIL_H_

#include <fmt/format.h>

#include <string>

#include "sim/scenario/scenario.h"
#include "topology/mesh.h"

namespace placesim::sim::testing {

inline std::string SourcePath(const std::string& relative) {
  return std::string(PLACESIM_SOURCE_DIR) + "/" + relative;
}

inline std::string Dump(const topology::DeviceSpec& d) {
  std::string out =
      fmt::format("gpu {} hbm {} {} eff {} {} overhead {} peaks", d.name, d.hbm_capacity.count(),
                  d.hbm_bandwidth.bytes_per_second(), d.matmul_efficiency, d.memory_efficiency,
                  d.kernel_overhead.picoseconds());
  for (FlopRate r : d.peak) out += fmt::format(" {}", r.per_second());
  return out;
}

// Every field of a Scenario, one per line.
inline std::string Dump(const Scenario& s) {
  std::string out = fmt::format("name {}\ndescription {}\n", s.name, s.description);
  const topology::NodeSpec& n = s.cluster.node;
  out += Dump(n.gpu) + "\n";
  out += fmt::format(
      "node {} gpus {} nvlink {} {} nvswitches {} pcie {} {} {} host {} {} {} nvme {} {} nics "
      "{} {} {}\n",
      n.name, n.gpus, n.nvlink_bandwidth.bytes_per_second(), n.nvlink_latency.picoseconds(),
      n.nvswitches, n.pcie_switches, n.pcie_bandwidth.bytes_per_second(),
      n.pcie_latency.picoseconds(), n.host_memory.count(),
      n.host_memory_bandwidth.bytes_per_second(), n.host_flops.per_second(),
      n.nvme_capacity.count(), n.nvme_bandwidth.bytes_per_second(), n.nics,
      n.nic_bandwidth.bytes_per_second(), n.nic_latency.picoseconds());
  const topology::FabricSpec& f = s.cluster.fabric;
  out += fmt::format("nodes {} fabric {} radix {} oversub {} link {} latency {}\n", s.cluster.nodes,
                     static_cast<int>(f.kind), f.switch_radix, f.oversubscription,
                     f.link_bandwidth.bytes_per_second(), f.switch_latency.picoseconds());
  for (const auto& v : s.cluster.vertices) {
    out += fmt::format("vertex {} {} {}\n", v.name, static_cast<int>(v.kind), v.node);
  }
  for (const auto& l : s.cluster.links) {
    out += fmt::format("link {} {} {} {} {} {}\n", l.from, l.to, static_cast<int>(l.kind),
                       l.bandwidth.bytes_per_second(), l.latency.picoseconds(), l.full_duplex);
  }
  const strategies::TransformerSpec& t = s.model.transformer;
  out += fmt::format(
      "model {} params {} layers {} hidden {} heads {} kv {} ffn {} vocab {} seq {} tied {} "
      "gated {} experts {} top_k {} capacity {}\n",
      s.model.name, s.model.parameter_count, t.layers, t.hidden, t.heads, t.kv_heads, t.ffn_hidden,
      t.vocab, t.seq_len, t.tied_embeddings, t.gated_mlp, t.experts, t.top_k, t.capacity_factor);
  const SimulationSettings& sim = s.simulation;
  out += fmt::format("simulation {} {} bucket {} prefetch {} sync {}\n", sim.network_model,
                     sim.collective_algorithm,
                     sim.gradient_bucket_size.value_or(Bytes::Zero()).count(), sim.prefetch_depth,
                     sim.sync_grads_every_micro_batch);
  const strategies::TrainingSpec& tr = s.training;
  out += fmt::format("training {} {} micro {} global {} recompute {} sp {} schedule {} vs {}\n",
                     static_cast<int>(tr.precision), static_cast<int>(tr.optimizer), tr.micro_batch,
                     tr.global_batch, static_cast<int>(tr.recompute), tr.sequence_parallel,
                     static_cast<int>(tr.pipeline_schedule), tr.virtual_stages);
  const strategies::StrategySpec& st = s.strategy;
  out += fmt::format("strategy {} mesh dp {} tp {} pp {} cp {} ep {} order {} lpu {} sgs {}\n",
                     st.name, st.mesh.dp, st.mesh.tp, st.mesh.pp, st.mesh.cp, st.mesh.ep,
                     topology::ToString(st.rank_order), st.layers_per_unit, st.shard_group_size);
  for (int a = 0; a < topology::kNumAxes; ++a) {
    out += fmt::format("placement {}:", a);
    for (const strategies::Placement& p : st.placement[a]) {
      out += fmt::format(" {}/{}", static_cast<int>(p.mode), static_cast<int>(p.target));
    }
    out += "\n";
  }
  return out;
}

}  // namespace placesim::sim::testing

#endif  // PLACESIM_TESTS_SIM_SCENARIO_TEST_UTIL_H_
