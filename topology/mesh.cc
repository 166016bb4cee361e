// The device mesh: axis names, rank-order parsing and rank <-> coordinate arithmetic.
//
// A rank is a mixed-radix number whose digits are the coordinates of the rank-bearing axes,
// innermost (least significant) first: with order (tp, cp, pp, dp),
//   rank = tp + TP * (cp + CP * (pp + PP * dp)).
// Expert parallelism owns no digit: its coordinate is the dp coordinate modulo ep.
// Thread-safety: pure functions.
#include "topology/mesh.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace placesim::topology {
namespace {

constexpr std::array<Axis, 4> kRankAxes = {Axis::kData, Axis::kTensor, Axis::kPipeline,
                                           Axis::kContext};
constexpr const char* kExpected = "expected each of dp, tp, pp, cp exactly once";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int Coord(const MeshCoord& c, Axis a) {
  switch (a) {
    case Axis::kData:
      return c.dp;
    case Axis::kTensor:
      return c.tp;
    case Axis::kPipeline:
      return c.pp;
    case Axis::kContext:
      return c.cp;
    case Axis::kExpert:
      return c.ep;
  }
  return 0;
}

void SetCoord(MeshCoord& c, Axis a, int v) {
  switch (a) {
    case Axis::kData:
      c.dp = v;
      return;
    case Axis::kTensor:
      c.tp = v;
      return;
    case Axis::kPipeline:
      c.pp = v;
      return;
    case Axis::kContext:
      c.cp = v;
      return;
    case Axis::kExpert:
      c.ep = v;
      return;
  }
}

}  // namespace

const char* AxisName(Axis a) {
  switch (a) {
    case Axis::kData:
      return "dp";
    case Axis::kTensor:
      return "tp";
    case Axis::kPipeline:
      return "pp";
    case Axis::kContext:
      return "cp";
    case Axis::kExpert:
      return "ep";
  }
  return "unknown";
}

int MeshShape::size(Axis a) const {
  switch (a) {
    case Axis::kData:
      return dp;
    case Axis::kTensor:
      return tp;
    case Axis::kPipeline:
      return pp;
    case Axis::kContext:
      return cp;
    case Axis::kExpert:
      return ep;
  }
  return 1;
}

StatusOr<RankOrder> ParseRankOrder(std::string_view text) {
  const std::string quoted = fmt::format("rank order \"{}\"", text);
  std::vector<std::string_view> tokens;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    tokens.push_back(Trim(text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }

  RankOrder order;
  std::array<int, kNumAxes> seen{};
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string_view tok = tokens[i];
    if (tok.empty()) {
      return InvalidArgumentError(
          fmt::format("{}: entry {} is empty; {}", quoted, i + 1, kExpected));
    }
    Axis axis = Axis::kData;
    bool known = false;
    for (Axis a : kRankAxes) {
      if (tok == AxisName(a)) {
        axis = a;
        known = true;
      }
    }
    if (tok == "ep") {
      return InvalidArgumentError(fmt::format(
          "{}: axis \"ep\" owns no ranks (expert groups live inside dp); {}", quoted, kExpected));
    }
    if (!known) {
      return InvalidArgumentError(
          fmt::format("{}: unknown axis \"{}\"; {}", quoted, tok, kExpected));
    }
    if (seen[static_cast<int>(axis)]++ > 0) {
      return InvalidArgumentError(
          fmt::format("{}: axis \"{}\" appears twice; {}", quoted, tok, kExpected));
    }
    if (i < order.inner_to_outer.size()) order.inner_to_outer[i] = axis;
  }
  std::vector<std::string> missing;
  for (Axis a : kRankAxes) {
    if (seen[static_cast<int>(a)] == 0) missing.push_back(AxisName(a));
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size(); ++i) {
      list += fmt::format("{}\"{}\"", i ? ", " : "", missing[i]);
    }
    return InvalidArgumentError(fmt::format("{}: missing axis {}; {}", quoted, list, kExpected));
  }
  return order;
}

std::string ToString(const RankOrder& order) {
  std::string out;
  for (size_t i = 0; i < order.inner_to_outer.size(); ++i) {
    if (i) out += ',';
    out += AxisName(order.inner_to_outer[i]);
  }
  return out;
}

MeshCoord RankToCoord(const MeshShape& shape, const RankOrder& order, int64_t rank) {
  PLACESIM_CHECK(rank >= 0 && rank < shape.world());
  MeshCoord c;
  int64_t rest = rank;
  for (Axis a : order.inner_to_outer) {
    const int n = shape.size(a);
    SetCoord(c, a, static_cast<int>(rest % n));
    rest /= n;
  }
  c.ep = shape.ep > 0 ? c.dp % shape.ep : 0;
  return c;
}

int64_t CoordToRank(const MeshShape& shape, const RankOrder& order, const MeshCoord& coord) {
  int64_t rank = 0;
  int64_t stride = 1;
  for (Axis a : order.inner_to_outer) {
    rank += stride * Coord(coord, a);
    stride *= shape.size(a);
  }
  return rank;
}

}  // namespace placesim::topology
