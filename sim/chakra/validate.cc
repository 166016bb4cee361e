// Structural checks of a Chakra workload (validate.h).
#include "sim/chakra/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace placesim::chakra {
namespace {

Status NodeError(const RankTrace& t, const Node& n, std::string_view field, std::string msg) {
  return InvalidArgumentError(
      fmt::format("rank {}: node {} (\"{}\"): {}: {}", t.rank, n.id, n.name, field, msg));
}

// Dangling deps and cycles of one rank (Kahn's algorithm over the node indices).
Status CheckGraph(const RankTrace& t) {
  std::unordered_map<uint64_t, size_t> index;
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    if (!index.emplace(t.nodes[i].id, i).second) {
      return NodeError(t, t.nodes[i], "id", "given to two nodes; ids must be unique per rank");
    }
  }
  std::vector<std::vector<size_t>> users(t.nodes.size());
  std::vector<int64_t> pending(t.nodes.size(), 0);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const Node& n = t.nodes[i];
    for (const auto* deps : {&n.data_deps, &n.ctrl_deps}) {
      for (uint64_t d : *deps) {
        auto it = index.find(d);
        if (it == index.end()) {
          return NodeError(t, n, deps == &n.data_deps ? "data_deps" : "ctrl_deps",
                           fmt::format("names node {}, which rank {} does not have", d, t.rank));
        }
        users[it->second].push_back(i);
        ++pending[i];
      }
    }
  }
  std::vector<size_t> ready;
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    if (pending[i] == 0) ready.push_back(i);
  }
  size_t done = 0;
  while (!ready.empty()) {
    const size_t i = ready.back();
    ready.pop_back();
    ++done;
    for (size_t u : users[i]) {
      if (--pending[u] == 0) ready.push_back(u);
    }
  }
  if (done == t.nodes.size()) return Status();
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    if (pending[i] > 0) {
      return NodeError(t, t.nodes[i], "data_deps/ctrl_deps",
                       "on a dependency cycle (or waits for one): the graph must be acyclic");
    }
  }
  return Status();
}

Status CheckPeer(const Workload& w, const RankTrace& t, const Node& n) {
  const bool send = n.type == NodeType::kSend;
  const int64_t peer = send ? n.comm_dst : n.comm_src;
  const int64_t world = static_cast<int64_t>(w.ranks.size());
  if (peer < 0 || peer >= world || peer == t.rank) {
    return NodeError(t, n, send ? "comm_dst" : "comm_src",
                     fmt::format("{} must be another rank of the trace, in [0, {})", peer, world));
  }
  return Status();
}

Status CheckGroup(const Workload& w, const RankTrace& t, const Node& n) {
  if (n.comm_group == kWorld) return Status();
  auto it = w.groups.find(n.comm_group);
  if (it == w.groups.end()) {
    return NodeError(t, n, "comm_group",
                     fmt::format("group {} is not in the communicator-groups file{}", n.comm_group,
                                 w.groups.empty() ? " (none given: pass --comm-groups)" : ""));
  }
  if (std::find(it->second.begin(), it->second.end(), t.rank) == it->second.end()) {
    return NodeError(t, n, "comm_group",
                     fmt::format("group {} ({}) does not hold rank {}", n.comm_group,
                                 fmt::join(it->second, ", "), t.rank));
  }
  return Status();
}

// Every member issues the same sequence of collective types on each group.
Status CheckCollectiveSequences(const Workload& w) {
  std::map<int64_t, std::vector<std::vector<const Node*>>> per_group;  // group -> rank -> calls
  for (const RankTrace& t : w.ranks) {
    for (const Node& n : t.nodes) {
      if (n.type != NodeType::kCollective) continue;
      auto& by_rank = per_group[n.comm_group];
      by_rank.resize(w.ranks.size());
      by_rank[static_cast<size_t>(t.rank)].push_back(&n);
    }
  }
  for (const auto& [group, by_rank] : per_group) {
    const std::vector<int64_t> members = GroupMembers(w, group);
    const int64_t first = members.front();
    const auto& ref = by_rank[static_cast<size_t>(first)];
    for (int64_t m : members) {
      const auto& calls = by_rank[static_cast<size_t>(m)];
      const RankTrace& t = w.ranks[static_cast<size_t>(m)];
      if (calls.size() != ref.size()) {
        return InvalidArgumentError(fmt::format(
            "rank {}: comm_group {}: issues {} collectives on the group but rank {} issues {}; "
            "every member must take part in every call",
            m, group == kWorld ? "(all ranks)" : fmt::format("{}", group), calls.size(), first,
            ref.size()));
      }
      for (size_t k = 0; k < calls.size(); ++k) {
        if (calls[k]->comm_type != ref[k]->comm_type) {
          return NodeError(t, *calls[k], "comm_type",
                           fmt::format("{} is call {} on its group, but rank {} node {} is {}",
                                       CommTypeName(calls[k]->comm_type), k, first, ref[k]->id,
                                       CommTypeName(ref[k]->comm_type)));
        }
      }
    }
  }
  return Status();
}

Status CheckSendRecvMatching(const Workload& w) {
  // (src, dst, tag) -> (sends, recvs), with one node of each for the message.
  std::map<std::tuple<int64_t, int64_t, int64_t>,
           std::pair<std::vector<const Node*>, std::vector<const Node*>>>
      msgs;
  for (const RankTrace& t : w.ranks) {
    for (const Node& n : t.nodes) {
      if (n.type == NodeType::kSend) msgs[{t.rank, n.comm_dst, n.comm_tag}].first.push_back(&n);
      if (n.type == NodeType::kRecv) msgs[{n.comm_src, t.rank, n.comm_tag}].second.push_back(&n);
    }
  }
  for (const auto& [key, sr] : msgs) {
    const auto [src, dst, tag] = key;
    if (sr.first.size() == 1 && sr.second.size() == 1) continue;
    const bool recv_side = sr.first.size() < sr.second.size();
    const int64_t rank = recv_side ? dst : src;
    const Node& n = *(recv_side ? sr.second : sr.first).front();
    return NodeError(w.ranks[static_cast<size_t>(rank)], n, "comm_tag",
                     fmt::format("{} sends and {} recvs from rank {} to rank {} with tag {}; each "
                                 "send needs exactly one matching recv",
                                 sr.first.size(), sr.second.size(), src, dst, tag));
  }
  return Status();
}

}  // namespace

std::vector<int64_t> GroupMembers(const Workload& w, int64_t group) {
  if (group != kWorld) return w.groups.at(group);
  std::vector<int64_t> all(w.ranks.size());
  std::iota(all.begin(), all.end(), int64_t{0});
  return all;
}

Status ValidateWorkload(const Workload& w) {
  if (w.ranks.empty()) return InvalidArgumentError("trace: no ranks");
  for (const RankTrace& t : w.ranks) {
    RETURN_IF_ERROR(CheckGraph(t));
    for (const Node& n : t.nodes) {
      if (n.type == NodeType::kSend || n.type == NodeType::kRecv) {
        RETURN_IF_ERROR(CheckPeer(w, t, n));
      }
      if (n.type == NodeType::kCollective) RETURN_IF_ERROR(CheckGroup(w, t, n));
    }
  }
  RETURN_IF_ERROR(CheckCollectiveSequences(w));
  return CheckSendRecvMatching(w);
}

}  // namespace placesim::chakra
