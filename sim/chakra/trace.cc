// Names of the Chakra enums placesim runs, as et_def.proto spells them.
#include "sim/chakra/trace.h"

namespace placesim::chakra {

const char* NodeTypeName(NodeType t) {
  switch (t) {
    case NodeType::kMemLoad:
      return "MEM_LOAD_NODE";
    case NodeType::kMemStore:
      return "MEM_STORE_NODE";
    case NodeType::kCompute:
      return "COMP_NODE";
    case NodeType::kSend:
      return "COMM_SEND_NODE";
    case NodeType::kRecv:
      return "COMM_RECV_NODE";
    case NodeType::kCollective:
      return "COMM_COLL_NODE";
  }
  return "?";
}

const char* CommTypeName(CommType t) {
  switch (t) {
    case CommType::kAllReduce:
      return "ALL_REDUCE";
    case CommType::kAllGather:
      return "ALL_GATHER";
    case CommType::kBroadcast:
      return "BROADCAST";
    case CommType::kAllToAll:
      return "ALL_TO_ALL";
    case CommType::kReduceScatter:
      return "REDUCE_SCATTER";
  }
  return "?";
}

strategies::CollectiveKind ToCollectiveKind(CommType t) {
  switch (t) {
    case CommType::kAllReduce:
      return strategies::CollectiveKind::kAllReduce;
    case CommType::kAllGather:
      return strategies::CollectiveKind::kAllGather;
    case CommType::kBroadcast:
      return strategies::CollectiveKind::kBroadcast;
    case CommType::kAllToAll:
      return strategies::CollectiveKind::kAllToAll;
    case CommType::kReduceScatter:
      return strategies::CollectiveKind::kReduceScatter;
  }
  return strategies::CollectiveKind::kAllReduce;
}

}  // namespace placesim::chakra
