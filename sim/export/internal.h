// Pieces the three exporters share: the data-parallel axis read as a ZeRO stage with its
// offload targets and hybrid groups, the batch arithmetic, and the refusal list. Internal to
// sim/export (not installed, not included outside it).
//
// Invariant: a DataParallelPlan describes only placements every exporter can at least name;
// anything else (Θ sharded without gathering, activations off R on dp, stages out of ZeRO's
// nesting) is refused here once, with the same words for every framework.
// Thread-safety: plain values and pure functions.
#ifndef PLACESIM_SIM_EXPORT_INTERNAL_H_
#define PLACESIM_SIM_EXPORT_INTERNAL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/errors.h"
#include "base/units.h"
#include "sim/export/export.h"
#include "sim/scenario/scenario.h"
#include "strategies/spec.h"

namespace placesim::exporting::internal {

// The refusals and notes of one export: every problem is collected before the export fails,
// so a user sees all of them at once.
class Findings {
 public:
  explicit Findings(std::string framework) : framework_(std::move(framework)) {}
  // "FRAMEWORK cannot express WHAT: WHY".
  void Refuse(std::string_view what, std::string_view why);
  void Note(std::string note) { notes_.push_back(std::move(note)); }

  bool refused() const { return !refusals_.empty(); }
  Status ToStatus() const { return refusals_.ToStatus(); }
  const std::vector<std::string>& notes() const { return notes_; }
  const std::string& framework() const { return framework_; }

 private:
  std::string framework_;
  ErrorList refusals_;
  std::vector<std::string> notes_;
};

// The data-parallel axis as the frameworks speak of it (ZeRO, Rajbhandari et al. 2020):
// stage 1 shards Ω, stage 2 also G, stage 3 also Θ (gathered before use, S*). An offloaded
// state counts as sharded (ZeRO-Offload and ZeRO-Infinity partition what they offload).
struct DataParallelPlan {
  int zero_stage = 0;
  strategies::OffloadTarget optimizer_offload = strategies::OffloadTarget::kNone;  // Ω (+ G)
  strategies::OffloadTarget param_offload = strategies::OffloadTarget::kNone;      // Θ
  // Hybrid sharding: shard inside groups of this many dp ranks, replicate across the groups;
  // 0 when the states are sharded over the whole dp axis (or not at all).
  int shard_group = 0;

  bool hybrid() const { return shard_group > 0; }
};

// Reads the dp axis of `strategy`; what no framework can run is refused into `findings`.
DataParallelPlan ReadDataParallel(const strategies::StrategySpec& strategy, Findings& findings);

// Micro-batches per data-parallel rank per step: global / (micro × dp). The scenario loader
// has checked that it divides.
int64_t GradientAccumulationSteps(const sim::Scenario& scenario);

// The gradient bucket the simulation of `scenario` uses: simulation.gradient_bucket_size, else
// the preset's framework default (strategies::GradientBucket).
Bytes SimulatedBucket(const sim::Scenario& scenario);

// The simulated bucket in elements of the gradients placesim's G holds (2 bytes, 4 with
// training.main_grads_fp32): the frameworks size their buckets in elements, placesim in bytes.
int64_t BucketElements(const sim::Scenario& scenario);

// "1", "0.5": the shortest decimal that reads back as `v`.
std::string Decimal(double v);

// The export's header lines (without comment markers): what, from which scenario, the mesh.
std::vector<std::string> HeaderLines(const sim::Scenario& scenario, std::string_view what);

// Refuses a model given by its parameter count alone (no layers to configure).
void RequireArchitecture(const sim::Scenario& scenario, Findings& findings);

// The three exporters (megatron.cc, deepspeed.cc, fsdp.cc); contracts as Export's.
StatusOr<Exported> ExportMegatron(const sim::Scenario& scenario);
StatusOr<Exported> ExportDeepSpeed(const sim::Scenario& scenario);
StatusOr<Exported> ExportFsdp(const sim::Scenario& scenario);

}  // namespace placesim::exporting::internal

#endif  // PLACESIM_SIM_EXPORT_INTERNAL_H_
