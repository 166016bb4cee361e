#include "base/status.h"

#include <gtest/gtest.h>

#include "base/errors.h"

namespace placesim {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd");
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusOr, PropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  auto r = Quarter(6);  // 6/2 = 3 is odd
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().ToString(), "INVALID_ARGUMENT: odd");
}

TEST(ErrorList, ReportsEveryProblemOnItsOwnLine) {
  ErrorList errors;
  EXPECT_TRUE(errors.ToStatus().ok());
  errors.Add("cluster.nodes", "0", "must be between 1 and 65536");
  errors.AddStatus("cluster.node.hbm_capacity", InvalidArgumentError("\"80\" has no unit"));
  Status s = errors.ToStatus();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "cluster.nodes: 0: must be between 1 and 65536\n"
            "cluster.node.hbm_capacity: \"80\" has no unit");
}

TEST(JoinNames, SeparatesWithCommas) { EXPECT_EQ(JoinNames({"ddp", "zero1"}), "ddp, zero1"); }

}  // namespace
}  // namespace placesim
