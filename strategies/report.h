// Reports of an analytic Plan: a human-readable table, JSON with stable keys in a fixed
// order, CSV with one row per rank role, and the placement table (state x axis).
//
// Bytes in tables are shown in both SI and IEC units with the unit named, e.g.
// "31.40 GB (29.24 GiB)" (the prefix follows the size: "50.33 MB (48.00 MiB)"); JSON and
// CSV carry exact integer byte counts.
//
// JSON keys (stable; objects keep this order):
//   scenario { model, parameter_count, strategy, mesh {dp,tp,pp,cp,ep}, world,
//              cluster_devices, training {...}, placement {params,optimizer,grads,
//              activations: {dp,tp,pp,cp,ep: "R"|"S"|"S*"|"M"|"O(host)"|"O(nvme)"}} }
//   memory   { role, params_bytes, grads_bytes, optimizer_bytes, activations_bytes,
//              gather_buffers_bytes, offload_staging_bytes, total_bytes, capacity_bytes,
//              headroom_bytes, fits, offloaded_host_bytes, offloaded_nvme_bytes,
//              host_capacity_bytes, nvme_capacity_bytes, fits_host, fits_nvme }
//            (fits is the GPU tier; host and NVMe capacities are this device's share of
//            the node's, see MemoryBreakdown)
//   comm     { bytes_per_device_per_step, collectives [ {kind, axis, state, group_size,
//              buffer_bytes, bytes_per_call, count, total_bytes, purpose} ] }
//   offload  { bytes_per_device_per_step, copies [ {direction, state, target, bytes, purpose} ] }
//   pipeline { stages, schedule, virtual_stages, micro_batches, bubble_fraction }
//   flops_per_iteration
//   roles    [ {name, first_stage, last_stage, ranks, layers, has_embedding, has_head,
//               microbatches_in_flight, params_local, memory {...}, comm {...}, offload {...}} ]
//   correctness { ok, errors, warnings, findings [ {severity, rule, state, axis, message,
//                 fix} ] }   (state and axis are null when the rule has none)
//   notes    [ strings ]
// The top-level memory, comm and offload objects describe the largest rank role.
//
// Thread-safety: pure functions.
#ifndef PLACESIM_STRATEGIES_REPORT_H_
#define PLACESIM_STRATEGIES_REPORT_H_

#include <string>

#include "base/units.h"
#include "strategies/plan.h"

namespace placesim::strategies {

// "31.40 GB (29.24 GiB)": SI then IEC, each with the largest prefix that keeps it >= 1.
std::string FormatBytes(Bytes b);

// The placement as a table: one row per state, one column per axis, symbols R/S/S*/M/O
// (O with its target). Axes of size 1 are shown with their size so the reader knows the
// placement there has no effect.
std::string FormatPlacementTable(const Plan& plan);

// Everything `placesim analyze` prints by default; ends with a newline.
std::string FormatPlanTable(const Plan& plan);

// Pretty-printed (2-space indent) JSON with the keys above; ends with a newline.
std::string FormatPlanJson(const Plan& plan);

// A header row and one row per rank role; ends with a newline.
std::string FormatPlanCsv(const Plan& plan);

}  // namespace placesim::strategies

#endif  // PLACESIM_STRATEGIES_REPORT_H_
