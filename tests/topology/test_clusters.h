// Cluster specs shared by the topology tests: DGX-H100 nodes on the generated fabrics.
#ifndef PLACESIM_TESTS_TOPOLOGY_TEST_CLUSTERS_H_
#define PLACESIM_TESTS_TOPOLOGY_TEST_CLUSTERS_H_

#include <gtest/gtest.h>

#include "topology/cluster.h"
#include "topology/presets.h"

namespace placesim::topology::test_clusters {

inline ClusterSpec DgxH100Spec(int nodes, FabricKind fabric, double oversubscription = 1.0,
                               int radix = 64) {
  ClusterSpec spec;
  const NodeSpec* node = FindNodePreset("DGX-H100");
  EXPECT_NE(node, nullptr);
  if (node != nullptr) spec.node = *node;
  spec.nodes = nodes;
  spec.fabric.kind = fabric;
  spec.fabric.switch_radix = radix;
  spec.fabric.oversubscription = oversubscription;
  spec.fabric.switch_latency = Nanoseconds(300);
  return spec;
}

// Builds the spec; a failure is reported with the full status message.
inline Cluster MustBuild(const ClusterSpec& spec) {
  StatusOr<Cluster> c = BuildCluster(spec);
  if (!c.ok()) ADD_FAILURE() << c.status().ToString();
  PLACESIM_CHECK(c.ok());
  return std::move(c).value();
}

inline VertexId V(const Cluster& c, std::string_view name) {
  std::optional<VertexId> v = c.FindVertex(name);
  if (!v) ADD_FAILURE() << "no vertex " << name;
  PLACESIM_CHECK(v.has_value());
  return *v;
}

}  // namespace placesim::topology::test_clusters

#endif  // PLACESIM_TESTS_TOPOLOGY_TEST_CLUSTERS_H_
