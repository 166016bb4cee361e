// Whether a simulated rank's memory peaks fit each memory tier: the GPU's HBM, and the
// device's shares of its node's host memory and NVMe as the analytic plan counts them
// (strategies::MemoryBreakdown: the tier's capacity over the job's ranks on the node).
// Reported per tier so that host or NVMe overflow of offloaded states shows beside the GPU's.
// Thread-safety: pure functions.
#ifndef PLACESIM_SIM_MEMORY_TIERS_H_
#define PLACESIM_SIM_MEMORY_TIERS_H_

#include "base/units.h"
#include "strategies/plan.h"

namespace placesim::sim {

struct TierFits {
  bool gpu = true;
  bool host = true;
  bool nvme = true;
  bool all() const { return gpu && host && nvme; }
};

// `device_peak` against `gpu_capacity`; `host_peak` and `nvme_peak` against the plan's
// host_capacity and nvme_capacity shares. A tier with a zero peak always fits. O(1).
inline TierFits FitsPerTier(Bytes device_peak, Bytes host_peak, Bytes nvme_peak, Bytes gpu_capacity,
                            const strategies::MemoryBreakdown& plan_memory) {
  return TierFits{
      .gpu = device_peak <= gpu_capacity,
      .host = host_peak.count() == 0 || host_peak <= plan_memory.host_capacity,
      .nvme = nvme_peak.count() == 0 || nvme_peak <= plan_memory.nvme_capacity,
  };
}

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_MEMORY_TIERS_H_
