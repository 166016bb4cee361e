// Reading Chakra traces: the record framing, attribute decoding and the groups file.
// Attributes are looked up by name and accepted in any integer encoding (int64 and uint64
// comm_size both occur in the wild), a group given as comm_group (integer) or pg_name (the
// generator's decimal string).
#include "sim/chakra/reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "sim/chakra/proto/et_def.pb.h"

namespace placesim::chakra {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxBytes = int64_t{1} << 50;

// Reads a base-128 varint at bytes[pos]; nullopt when it runs past the end or over 10 bytes.
std::optional<uint64_t> ReadVarint(std::string_view bytes, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && pos < bytes.size(); shift += 7) {
    const auto c = static_cast<uint8_t>(bytes[pos++]);
    v |= uint64_t{c & 0x7fu} << shift;
    if ((c & 0x80u) == 0) return v;
  }
  return std::nullopt;
}

// The integer value of an attribute, whatever integer or bool field holds it; nullopt for
// strings, floats, lists and values above int64's range.
std::optional<int64_t> IntOf(const wire::AttributeProto& a) {
  using A = wire::AttributeProto;
  switch (a.value_case()) {
    case A::kInt32Val:
      return a.int32_val();
    case A::kInt64Val:
      return a.int64_val();
    case A::kUint32Val:
      return a.uint32_val();
    case A::kUint64Val:
      if (a.uint64_val() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return std::nullopt;
      }
      return static_cast<int64_t>(a.uint64_val());
    case A::kSint32Val:
      return a.sint32_val();
    case A::kSint64Val:
      return a.sint64_val();
    case A::kFixed32Val:
      return a.fixed32_val();
    case A::kFixed64Val:
      if (a.fixed64_val() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return std::nullopt;
      }
      return static_cast<int64_t>(a.fixed64_val());
    case A::kSfixed32Val:
      return a.sfixed32_val();
    case A::kSfixed64Val:
      return a.sfixed64_val();
    case A::kBoolVal:
      return a.bool_val() ? 1 : 0;
    case A::kStringVal: {
      // pg_name holds a group id as text.
      const std::string& s = a.string_val();
      if (s.empty() || s.size() > 18 || !std::all_of(s.begin(), s.end(), ::isdigit)) {
        return std::nullopt;
      }
      return std::stoll(s);
    }
    default:
      return std::nullopt;
  }
}

std::string Printable(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

class NodeDecoder {
 public:
  NodeDecoder(int64_t rank, const wire::Node& n) : rank_(rank), n_(n) {}

  StatusOr<Node> Decode() {
    node_.id = n_.id();
    node_.name = Printable(n_.name());
    node_.data_deps.assign(n_.data_deps().begin(), n_.data_deps().end());
    node_.ctrl_deps.assign(n_.ctrl_deps().begin(), n_.ctrl_deps().end());
    RETURN_IF_ERROR(DecodeType());
    for (const wire::AttributeProto& a : n_.attr()) RETURN_IF_ERROR(DecodeAttr(a));
    return std::move(node_);
  }

 private:
  Status Error(std::string_view field, std::string_view problem) const {
    return InvalidArgumentError(fmt::format("rank {}: node {} (\"{}\"): {}: {}", rank_, n_.id(),
                                            node_.name, field, problem));
  }

  Status DecodeType() {
    const int32_t t = n_.type();
    if (t < static_cast<int32_t>(NodeType::kMemLoad) ||
        t > static_cast<int32_t>(NodeType::kCollective)) {
      return Error("type",
                   fmt::format("{} is not a node type placesim runs; allowed: MEM_LOAD_NODE "
                               "(2), MEM_STORE_NODE (3), COMP_NODE (4), COMM_SEND_NODE "
                               "(5), COMM_RECV_NODE (6), COMM_COLL_NODE (7)",
                               t));
    }
    node_.type = static_cast<NodeType>(t);
    return Status();
  }

  Status DecodeAttr(const wire::AttributeProto& a) {
    const std::string& name = a.name();
    const bool known = name == "num_ops" || name == "tensor_size" || name == "comm_type" ||
                       name == "comm_size" || name == "comm_group" || name == "pg_name" ||
                       name == "comm_src" || name == "comm_dst" || name == "comm_tag" ||
                       name == "is_cpu_op" || name == "elementwise_bytes" || name == "nvme";
    if (!known) return Status();  // inputs, outputs, op_type, ...: not needed to replay
    const std::optional<int64_t> v = IntOf(a);
    if (!v.has_value()) {
      return Error(name, "must be an integer (any integer encoding) within int64's range");
    }
    const bool signed_ok = name == "comm_src" || name == "comm_dst" || name == "comm_tag";
    if (*v < 0 && !signed_ok) return Error(name, fmt::format("{} must be >= 0", *v));
    // Byte counts beyond a pebibyte are corrupt, and keep S x n and 2 S of an all-gather or
    // all-reduce far from int64's range.
    const bool bytes = name == "tensor_size" || name == "comm_size" || name == "elementwise_bytes";
    if (bytes && *v > kMaxBytes) {
      return Error(name,
                   fmt::format("{} bytes is more than the 2^50 (1 PiB) placesim accepts", *v));
    }
    if (name == "num_ops") node_.num_ops = *v;
    if (name == "tensor_size") node_.tensor_size = Bytes::Count(*v);
    if (name == "elementwise_bytes") node_.elementwise_bytes = Bytes::Count(*v);
    if (name == "comm_size") node_.comm_size = Bytes::Count(*v);
    if (name == "comm_group" || name == "pg_name") node_.comm_group = *v;
    if (name == "comm_src") node_.comm_src = *v;
    if (name == "comm_dst") node_.comm_dst = *v;
    if (name == "comm_tag") node_.comm_tag = *v;
    if (name == "is_cpu_op") node_.is_cpu_op = *v != 0;
    if (name == "nvme") node_.nvme = *v != 0;
    if (name == "comm_type") return DecodeCommType(*v);
    return Status();
  }

  Status DecodeCommType(int64_t v) {
    switch (v) {
      case 0:
      case 2:
      case 5:
      case 6:
      case 7:
        node_.comm_type = static_cast<CommType>(v);
        return Status();
      default:
        return Error(
            "comm_type",
            fmt::format("{} is not a collective placesim runs; allowed: ALL_REDUCE (0), "
                        "ALL_GATHER (2), BROADCAST (5), ALL_TO_ALL (6), REDUCE_SCATTER (7)",
                        v));
    }
  }

  int64_t rank_;
  const wire::Node& n_;
  Node node_;
};

StatusOr<std::string> ReadFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgumentError(fmt::format("{}: cannot open \"{}\"", what, path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return InvalidArgumentError(fmt::format("{}: cannot read \"{}\"", what, path));
  return ss.str();
}

}  // namespace

StatusOr<RankTrace> ParseRankTrace(std::string_view bytes, int64_t rank) {
  RankTrace out;
  out.rank = rank;
  size_t pos = 0;
  int64_t record = 0;
  uint64_t last_id = 0;
  bool any_node = false;
  while (pos < bytes.size()) {
    const size_t start = pos;
    const std::string after =
        any_node ? fmt::format("after node {}", last_id) : std::string("before the first node");
    const std::optional<uint64_t> len = ReadVarint(bytes, pos);
    if (!len.has_value() || *len > bytes.size() - pos) {
      return InvalidArgumentError(fmt::format(
          "rank {}: truncated file: the record at byte {} ({}) declares {} bytes, {} remain", rank,
          start, after, len.has_value() ? fmt::format("{}", *len) : "an unterminated length",
          bytes.size() - pos));
    }
    const std::string_view body = bytes.substr(pos, static_cast<size_t>(*len));
    pos += static_cast<size_t>(*len);
    if (record++ == 0) {
      wire::GlobalMetadata meta;
      if (!meta.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
        return InvalidArgumentError(fmt::format(
            "rank {}: the first record (byte 0) is not a Chakra GlobalMetadata message", rank));
      }
      out.version = Printable(meta.version());
      continue;
    }
    wire::Node n;
    if (!n.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      return InvalidArgumentError(fmt::format(
          "rank {}: the record at byte {} ({}) is not a Chakra Node message", rank, start, after));
    }
    ASSIGN_OR_RETURN(Node node, NodeDecoder(rank, n).Decode());
    last_id = node.id;
    any_node = true;
    out.nodes.push_back(std::move(node));
  }
  if (record == 0) {
    return InvalidArgumentError(fmt::format(
        "rank {}: empty file: a Chakra trace opens with a GlobalMetadata record", rank));
  }
  return out;
}

StatusOr<std::map<int64_t, std::vector<int64_t>>> ParseCommGroups(std::string_view json,
                                                                  std::string_view what) {
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError(
        fmt::format("{}: not a JSON object of group id -> ranks (e.g. {{\"1\": [0, 1]}})", what));
  }
  std::map<int64_t, std::vector<int64_t>> groups;
  for (const auto& [key, members] : doc.items()) {
    const bool numeric =
        !key.empty() && key.size() <= 18 && std::all_of(key.begin(), key.end(), ::isdigit);
    if (!numeric) {
      return InvalidArgumentError(
          fmt::format("{}: group \"{}\": the id must be a decimal integer >= 0", what, key));
    }
    const int64_t id = std::stoll(key);
    if (!members.is_array() || members.empty()) {
      return InvalidArgumentError(
          fmt::format("{}: group {}: must be a non-empty array of ranks", what, id));
    }
    std::set<int64_t> seen;
    for (const auto& m : members) {
      if (!m.is_number_integer() || m.get<int64_t>() < 0 || !seen.insert(m.get<int64_t>()).second) {
        return InvalidArgumentError(fmt::format(
            "{}: group {}: member {}: must be distinct integer ranks >= 0", what, id, m.dump()));
      }
      groups[id].push_back(m.get<int64_t>());
    }
  }
  return groups;
}

StatusOr<int64_t> CountRanks(const std::string& prefix) {
  const fs::path p(prefix);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string stem = p.filename().string() + ".";
  std::error_code ec;
  int64_t highest = -1;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= stem.size() + 3 || name.compare(0, stem.size(), stem) != 0 ||
        name.compare(name.size() - 3, 3, ".et") != 0) {
      continue;
    }
    const std::string num = name.substr(stem.size(), name.size() - stem.size() - 3);
    if (num.size() > 9 || !std::all_of(num.begin(), num.end(), ::isdigit)) continue;
    highest = std::max<int64_t>(highest, std::stoll(num));
  }
  if (highest < 0) {
    return InvalidArgumentError(fmt::format("trace prefix \"{}\": no file {}<rank>.et in \"{}\"",
                                            prefix, stem, dir.string()));
  }
  for (int64_t r = 0; r < highest; ++r) {
    if (!fs::exists(fmt::format("{}.{}.et", prefix, r), ec)) {
      return InvalidArgumentError(fmt::format(
          "rank {}: missing: \"{}.{}.et\" does not exist but rank {} does (ranks run 0..{})", r,
          prefix, r, highest, highest));
    }
  }
  return highest + 1;
}

StatusOr<Workload> ReadWorkload(const std::string& prefix, const std::string& groups_file) {
  ASSIGN_OR_RETURN(const int64_t world, CountRanks(prefix));
  Workload w;
  for (int64_t r = 0; r < world; ++r) {
    const std::string path = fmt::format("{}.{}.et", prefix, r);
    ASSIGN_OR_RETURN(std::string bytes, ReadFile(path, fmt::format("rank {}", r)));
    ASSIGN_OR_RETURN(RankTrace t, ParseRankTrace(bytes, r));
    w.ranks.push_back(std::move(t));
  }
  if (groups_file.empty()) return w;
  ASSIGN_OR_RETURN(std::string json, ReadFile(groups_file, "--comm-groups"));
  ASSIGN_OR_RETURN(w.groups, ParseCommGroups(json, groups_file));
  for (const auto& [id, members] : w.groups) {
    for (int64_t m : members) {
      if (m >= world) {
        return InvalidArgumentError(fmt::format(
            "{}: group {}: rank {} has no trace file (\"{}.{}.et\"); the trace has ranks 0..{}",
            groups_file, id, m, prefix, m, world - 1));
      }
    }
  }
  return w;
}

}  // namespace placesim::chakra
