// libFuzzer harness: the bytes of one rank's Chakra trace (<prefix>.0.et) through the reader,
// the validation and, for small graphs, the replay on one DGX-H100 node.
//
// Any kInvalidArgument is fine (a bad trace must be one, naming rank, node id and field), and
// kOutOfRange from a replay whose step passes int64 picoseconds; crashes, hangs, sanitizer
// reports and any other non-OK status are findings. The replay is
// capped at 256 nodes so that each input takes milliseconds. A single rank cannot match its
// sends, recvs or group collectives with anyone, so those inputs stop at validation; the
// world collectives and compute nodes of one rank replay.
// Wiring (fuzz/CMakeLists.txt): placesim_add_fuzzer(chakra_fuzz SOURCES chakra_fuzz.cc
// LIBS placesim_chakra).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sim/chakra/reader.h"
#include "sim/chakra/replay.h"
#include "sim/chakra/validate.h"
#include "topology/cluster.h"
#include "topology/presets.h"

namespace {

// kOutOfRange is the replay's documented refusal of a step past int64 picoseconds.
void RequireInvalidArgumentOrOk(const placesim::Status& s, const char* stage) {
  if (s.ok() || s.code() == placesim::StatusCode::kInvalidArgument ||
      s.code() == placesim::StatusCode::kOutOfRange) {
    return;
  }
  std::fprintf(stderr, "%s: unexpected status: %s\n", stage, std::string(s.message()).c_str());
  std::abort();
}

const placesim::topology::Cluster& Node() {
  static const placesim::topology::Cluster* cluster = [] {
    placesim::topology::ClusterSpec spec;
    spec.node = *placesim::topology::FindNodePreset("DGX-H100");
    return new placesim::topology::Cluster(placesim::topology::BuildCluster(spec).value());
  }();
  return *cluster;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  placesim::StatusOr<placesim::chakra::RankTrace> trace =
      placesim::chakra::ParseRankTrace(bytes, 0);
  RequireInvalidArgumentOrOk(trace.status(), "ParseRankTrace");
  if (!trace.ok()) return 0;
  placesim::chakra::Workload w;
  w.ranks.push_back(std::move(*trace));
  const placesim::Status valid = placesim::chakra::ValidateWorkload(w);
  RequireInvalidArgumentOrOk(valid, "ValidateWorkload");
  if (!valid.ok() || w.ranks[0].nodes.size() > 256) return 0;
  placesim::chakra::ReplayOptions options;
  options.network = "analytic";
  RequireInvalidArgumentOrOk(placesim::chakra::Replay(Node(), w, options).status(), "Replay");
  return 0;
}
