// Chakra execution traces as plain data: what the reader (reader.h) produces, validation
// checks, the replay (replay.h) runs and the writer (writer.h) serializes. No protobuf type
// appears here; the wire format stays inside sim/chakra's .cc files.
//
// Conventions (docs/chakra.md):
//   - one RankTrace per rank, nodes in file order; a node's deps (data and control alike) name
//     node ids of the same rank.
//   - compute: num_ops operations over tensor_size bytes of memory traffic. Trace generators
//     count one op per multiply-accumulate; the replay multiplies by its flops_per_op (2).
//   - collectives: comm_size is the bytes each member contributes: the buffer for all-reduce,
//     reduce-scatter, all-to-all and broadcast, the member's shard for all-gather.
//   - comm_group names a group of the communicator-groups file; kWorld (absent) is every rank.
//   - send/recv: a send on rank s with comm_dst d and comm_tag t matches the recv on rank d
//     with comm_src s and the same tag.
// Thread-safety: plain values.
#ifndef PLACESIM_SIM_CHAKRA_TRACE_H_
#define PLACESIM_SIM_CHAKRA_TRACE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/units.h"
#include "strategies/plan.h"

namespace placesim::chakra {

// The Chakra v0.0.4 NodeType values placesim runs (et_def.proto); other values are refused.
enum class NodeType : int32_t {
  kMemLoad = 2,
  kMemStore = 3,
  kCompute = 4,
  kSend = 5,
  kRecv = 6,
  kCollective = 7,
};
const char* NodeTypeName(NodeType t);  // "MEM_LOAD_NODE", ..., as et_def.proto spells them

// Chakra's CollectiveCommType values placesim runs.
enum class CommType : int32_t {
  kAllReduce = 0,
  kAllGather = 2,
  kBroadcast = 5,
  kAllToAll = 6,
  kReduceScatter = 7,
};
const char* CommTypeName(CommType t);  // "ALL_REDUCE", ...

inline constexpr int64_t kWorld = -1;  // comm_group of a collective over every rank

struct Node {
  uint64_t id = 0;
  std::string name;
  NodeType type = NodeType::kCompute;
  std::vector<uint64_t> data_deps;
  std::vector<uint64_t> ctrl_deps;
  // kCompute.
  int64_t num_ops = 0;
  Bytes tensor_size;  // kCompute: memory traffic; kMemLoad / kMemStore: bytes moved
  // kCompute, placesim's extension (attribute "elementwise_bytes"): HBM traffic of the
  // memory-bound kernels fused into this node, timed after its roofline part. Readers that do
  // not know it (ASTRA-sim) ignore it.
  Bytes elementwise_bytes;
  bool is_cpu_op = false;  // a host computation (placesim's offloaded optimizer step)
  // kMemLoad / kMemStore, placesim's extension (attribute "nvme", 0 or 1): the far side is the
  // node's NVMe instead of its host memory.
  bool nvme = false;
  // kCollective, kSend, kRecv.
  CommType comm_type = CommType::kAllReduce;
  Bytes comm_size;
  int64_t comm_group = kWorld;
  int64_t comm_src = -1;
  int64_t comm_dst = -1;
  int64_t comm_tag = 0;
};

struct RankTrace {
  int64_t rank = 0;
  std::string version;  // GlobalMetadata.version ("0.0.4")
  std::vector<Node> nodes;
};

// A workload: every rank's trace and the communicator groups (group id -> ranks).
struct Workload {
  std::vector<RankTrace> ranks;  // ranks[r].rank == r
  std::map<int64_t, std::vector<int64_t>> groups;
};

// The placesim collective kind of a Chakra collective type.
strategies::CollectiveKind ToCollectiveKind(CommType t);

}  // namespace placesim::chakra

#endif  // PLACESIM_SIM_CHAKRA_TRACE_H_
