// Writing Chakra traces (writer.h).
#include "sim/chakra/writer.h"

#include <fmt/format.h>

#include <memory>

#include "sim/chakra/proto/et_def.pb.h"
#include "traces/atomic_output_file.h"

namespace placesim::chakra {
namespace {

void AppendVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void AppendRecord(std::string& out, const google::protobuf::MessageLite& m) {
  const std::string body = m.SerializeAsString();
  AppendVarint(out, body.size());
  out += body;
}

wire::AttributeProto* Attr(wire::Node& n, const char* name) {
  wire::AttributeProto* a = n.add_attr();
  a->set_name(name);
  return a;
}

wire::Node ToWire(const Node& n) {
  wire::Node w;
  w.set_id(n.id);
  w.set_name(n.name);
  w.set_type(static_cast<int32_t>(n.type));
  for (uint64_t d : n.data_deps) w.add_data_deps(d);
  for (uint64_t d : n.ctrl_deps) w.add_ctrl_deps(d);
  switch (n.type) {
    case NodeType::kCompute:
      Attr(w, "num_ops")->set_int64_val(n.num_ops);
      Attr(w, "tensor_size")->set_uint64_val(static_cast<uint64_t>(n.tensor_size.count()));
      if (n.elementwise_bytes.count() > 0) {
        Attr(w, "elementwise_bytes")->set_int64_val(n.elementwise_bytes.count());
      }
      if (n.is_cpu_op) Attr(w, "is_cpu_op")->set_int32_val(1);
      break;
    case NodeType::kMemLoad:
    case NodeType::kMemStore:
      Attr(w, "tensor_size")->set_uint64_val(static_cast<uint64_t>(n.tensor_size.count()));
      if (n.nvme) Attr(w, "nvme")->set_int32_val(1);
      break;
    case NodeType::kCollective:
      Attr(w, "comm_type")->set_int64_val(static_cast<int64_t>(n.comm_type));
      Attr(w, "comm_size")->set_int64_val(n.comm_size.count());
      if (n.comm_group != kWorld)
        Attr(w, "pg_name")->set_string_val(fmt::format("{}", n.comm_group));
      Attr(w, "is_cpu_op")->set_int32_val(0);
      break;
    case NodeType::kSend:
    case NodeType::kRecv:
      Attr(w, "comm_size")->set_int64_val(n.comm_size.count());
      Attr(w, "comm_tag")->set_int32_val(static_cast<int32_t>(n.comm_tag));
      if (n.type == NodeType::kSend) {
        Attr(w, "comm_dst")->set_int32_val(static_cast<int32_t>(n.comm_dst));
      } else {
        Attr(w, "comm_src")->set_int32_val(static_cast<int32_t>(n.comm_src));
      }
      Attr(w, "is_cpu_op")->set_int32_val(0);
      break;
  }
  return w;
}

Status WriteFile(const std::string& path, const std::string& bytes) {
  ASSIGN_OR_RETURN(std::unique_ptr<traces::AtomicOutputFile> f,
                   traces::AtomicOutputFile::Create(path));
  f->stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return f->Commit();
}

}  // namespace

std::string SerializeRankTrace(const RankTrace& t) {
  std::string out;
  wire::GlobalMetadata meta;
  meta.set_version(t.version.empty() ? "0.0.4" : t.version);
  AppendRecord(out, meta);
  for (const Node& n : t.nodes) AppendRecord(out, ToWire(n));
  return out;
}

std::string CommGroupsJson(const std::map<int64_t, std::vector<int64_t>>& groups) {
  std::string out = "{";
  for (const auto& [id, members] : groups) {
    if (out.size() > 1) out += ", ";
    out += fmt::format("\"{}\": [{}]", id, fmt::join(members, ", "));
  }
  return out + "}\n";
}

Status WriteWorkload(const Workload& w, const std::string& prefix, std::span<const int64_t> ranks) {
  const auto world = static_cast<int64_t>(w.ranks.size());
  std::vector<int64_t> all;
  if (ranks.empty()) {
    for (int64_t r = 0; r < world; ++r) all.push_back(r);
    ranks = all;
  }
  for (int64_t r : ranks) {
    if (r < 0 || r >= world) {
      return InvalidArgumentError(
          fmt::format("--trace-ranks: rank {} is not in [0, {})", r, world));
    }
    RETURN_IF_ERROR(WriteFile(fmt::format("{}.{}.et", prefix, r),
                              SerializeRankTrace(w.ranks[static_cast<size_t>(r)])));
  }
  return WriteFile(prefix + ".json", CommGroupsJson(w.groups));
}

}  // namespace placesim::chakra
