// Presets: the figures match the datasheets they cite. Tensor-core rates on NVIDIA
// datasheets are printed "with sparsity"; the dense rate expected here is half of it.
#include "topology/presets.h"

#include <gtest/gtest.h>

#include <set>

#include "topology/cluster.h"

namespace placesim::topology {
namespace {

const DeviceSpec& Device(std::string_view name) {
  const DeviceSpec* d = FindDevicePreset(name);
  PLACESIM_CHECK(d != nullptr);
  return *d;
}

const NodeSpec& Node(std::string_view name) {
  const NodeSpec* n = FindNodePreset(name);
  PLACESIM_CHECK(n != nullptr);
  return *n;
}

double Tf(const DeviceSpec& d, DataType t) { return d.Peak(t).ToTflops(); }

TEST(DevicePresets, A100MatchesTheA100Datasheet) {
  // NVIDIA A100 datasheet, 80GB SXM: FP32 19.5 TF; TF32 312 sparse -> 156 dense; BF16/FP16
  // 624 sparse -> 312 dense; no FP8; 80 GB at 2,039 GB/s.
  const DeviceSpec& d = Device("A100-SXM-80GB");
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kFp32), 19.5);
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kTf32), 312.0 / 2);
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kBf16), 624.0 / 2);
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kFp16), 624.0 / 2);
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kFp8), 0.0);
  EXPECT_EQ(d.hbm_capacity, GB(80));
  EXPECT_DOUBLE_EQ(d.hbm_bandwidth.ToGBps(), 2039);
}

TEST(DevicePresets, H100MatchesTheH100Datasheet) {
  // NVIDIA H100 datasheet, SXM: FP32 67 TF; TF32 989 / BF16 1,979 / FP8 3,958 TF with
  // sparsity (exact: 989.4, 1978.9, 3957.8) -> dense 494.7, 989.4, 1978.9; 80 GB, 3.35 TB/s.
  const DeviceSpec& d = Device("H100-SXM-80GB");
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kFp32), 67);
  EXPECT_NEAR(Tf(d, DataType::kTf32), 989.4 / 2, 0.01);
  EXPECT_NEAR(Tf(d, DataType::kBf16), 1978.8 / 2, 0.01);
  EXPECT_NEAR(Tf(d, DataType::kFp16), 1978.8 / 2, 0.01);
  EXPECT_NEAR(Tf(d, DataType::kFp8), 3957.8 / 2, 0.01);
  EXPECT_EQ(d.hbm_capacity, GB(80));
  EXPECT_DOUBLE_EQ(d.hbm_bandwidth.ToGBps(), 3350);
}

TEST(DevicePresets, H200HasH100ComputeWithLargerFasterMemory) {
  // NVIDIA H200 datasheet: same compute as H100 SXM; 141 GB HBM3e at 4.8 TB/s.
  const DeviceSpec& h200 = Device("H200-SXM-141GB");
  const DeviceSpec& h100 = Device("H100-SXM-80GB");
  for (int t = 0; t < kNumDataTypes; ++t) EXPECT_EQ(h200.peak[t], h100.peak[t]);
  EXPECT_EQ(h200.hbm_capacity, GB(141));
  EXPECT_DOUBLE_EQ(h200.hbm_bandwidth.ToGBps(), 4800);
}

TEST(DevicePresets, B200IsHalfOfTheHgxB200SparseFigures) {
  // HGX B200 per GPU: FP8 9 PF, BF16 4.5 PF, TF32 2.2 PF with sparsity; FP32 600 TF / 8 GPUs;
  // 1,440 GB / 8 GPUs = 180 GB at 7.7 TB/s.
  const DeviceSpec& d = Device("B200");
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kFp8), 9000.0 / 2);
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kBf16), 4500.0 / 2);
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kTf32), 2200.0 / 2);
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kFp32), 600.0 / 8);
  EXPECT_EQ(d.hbm_capacity, GB(1440.0 / 8));
  EXPECT_DOUBLE_EQ(d.hbm_bandwidth.ToGBps(), 7700);
}

TEST(DevicePresets, Nvl72GpuIsTheRackTotalOverSeventyTwo) {
  // GB200 NVL72 rack: FP8 720 PF sparse, BF16 360 PF sparse, FP32 5,760 TF, 576 TB/s.
  const DeviceSpec& d = Device("B200-NVL72");
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kFp8), 720'000.0 / 72 / 2);
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kBf16), 360'000.0 / 72 / 2);
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kFp32), 5760.0 / 72);
  EXPECT_DOUBLE_EQ(d.hbm_bandwidth.ToGBps(), 576'000.0 / 72);
}

TEST(DevicePresets, Mi300xMatchesTheAmdDataSheet) {
  // AMD MI300X data sheet, dense: FP32 matrix 163.4, TF32 653.7, BF16 1,307.4, FP8 2,614.9
  // TF; 192 GB HBM3 at 5.3 TB/s.
  const DeviceSpec& d = Device("MI300X");
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kFp32), 163.4);
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kTf32), 653.7);
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kBf16), 1307.4);
  EXPECT_DOUBLE_EQ(Tf(d, DataType::kFp8), 2614.9);
  EXPECT_EQ(d.hbm_capacity, GB(192));
  EXPECT_DOUBLE_EQ(d.hbm_bandwidth.ToGBps(), 5300);
}

TEST(DevicePresets, EveryPresetCitesASourceAndHasUsableEfficiencies) {
  std::set<std::string> names;
  for (const DeviceSpec& d : DevicePresets()) {
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    EXPECT_FALSE(d.source.empty()) << d.name;
    EXPECT_GT(d.matmul_efficiency, 0) << d.name;
    EXPECT_LE(d.matmul_efficiency, 1) << d.name;
    EXPECT_GT(d.memory_efficiency, 0) << d.name;
    EXPECT_LE(d.memory_efficiency, 1) << d.name;
    EXPECT_GT(d.kernel_overhead, Duration::Zero()) << d.name;
  }
  EXPECT_EQ(DevicePresetNames().size(), DevicePresets().size());
  EXPECT_EQ(FindDevicePreset("h100"), nullptr);  // names are case-sensitive
}

TEST(NodePresets, DgxA100MatchesTheDgxA100Datasheet) {
  // 8 GPUs; NVLink 600 GB/s bidirectional -> 300 per direction; 8x HDR 200 Gb/s = 25 GB/s;
  // PCIe Gen4 x16 = 32 GB/s; 2 TB.
  const NodeSpec& n = Node("DGX-A100");
  EXPECT_EQ(n.gpu.name, "A100-SXM-80GB");
  EXPECT_EQ(n.gpus, 8);
  EXPECT_DOUBLE_EQ(n.nvlink_bandwidth.ToGBps(), 600.0 / 2);
  EXPECT_EQ(n.nics, 8);
  EXPECT_DOUBLE_EQ(n.nic_bandwidth.ToGbps(), 200);
  EXPECT_DOUBLE_EQ(n.pcie_bandwidth.ToGBps(), 32);
  EXPECT_EQ(n.host_memory, TB(2));
}

TEST(NodePresets, DgxH100MatchesTheDgxH100Datasheet) {
  // 8 GPUs on 4 NVSwitches; 900 GB/s bidirectional -> 450 per direction; 8x 400 Gb/s =
  // 50 GB/s each; PCIe Gen5 x16 = 64 GB/s; 2 TB; 8 x 3.84 TB NVMe = 30.72 TB.
  const NodeSpec& n = Node("DGX-H100");
  EXPECT_EQ(n.gpu.name, "H100-SXM-80GB");
  EXPECT_EQ(n.gpus, 8);
  EXPECT_EQ(n.nvswitches, 4);
  EXPECT_DOUBLE_EQ(n.nvlink_bandwidth.ToGBps(), 900.0 / 2);
  EXPECT_EQ(n.nics, 8);
  EXPECT_DOUBLE_EQ(n.nic_bandwidth.ToGBps(), 400.0 / 8);
  EXPECT_DOUBLE_EQ(n.pcie_bandwidth.ToGBps(), 64);
  EXPECT_EQ(n.host_memory, TB(2));
  EXPECT_EQ(n.nvme_capacity, TB(30.72));
  // 2 sockets x 8 channels x DDR5-4800 x 8 bytes = 614.4 GB/s.
  EXPECT_DOUBLE_EQ(n.host_memory_bandwidth.ToGBps(), 2 * 8 * 4.8 * 8);
}

TEST(NodePresets, HgxH200IsTheDgxH100ChassisWithH200s) {
  const NodeSpec& h200 = Node("HGX-H200");
  const NodeSpec& h100 = Node("DGX-H100");
  EXPECT_EQ(h200.gpu.name, "H200-SXM-141GB");
  EXPECT_EQ(h200.nvlink_bandwidth, h100.nvlink_bandwidth);
  EXPECT_EQ(h200.nic_bandwidth, h100.nic_bandwidth);
  EXPECT_EQ(h200.host_memory, h100.host_memory);
}

TEST(NodePresets, Gb200Nvl72IsOneSeventyTwoGpuNvlinkDomain) {
  // 1.8 TB/s bidirectional NVLink per GPU -> 900 GB/s per direction; 36 Grace CPUs with
  // 480 GB LPDDR5X each = 17.28 TB.
  const NodeSpec& n = Node("GB200-NVL72");
  EXPECT_EQ(n.gpus, 72);
  EXPECT_DOUBLE_EQ(n.nvlink_bandwidth.ToGBps(), 1800.0 / 2);
  EXPECT_EQ(n.nics, 72);
  EXPECT_EQ(n.host_memory, GB(36 * 480));
}

TEST(DevicePresets, V100AndA100FortyMatchTheirDatasheets) {
  // Tesla V100 datasheet, SXM2: 125 TF tensor (fp16), 15.7 TF fp32, no bf16; 900 GB/s HBM2.
  for (const char* name : {"V100-SXM2-16GB", "V100-SXM2-32GB"}) {
    const DeviceSpec& v = Device(name);
    EXPECT_DOUBLE_EQ(Tf(v, DataType::kFp16), 125.0) << name;
    EXPECT_DOUBLE_EQ(Tf(v, DataType::kBf16), 0.0) << name;
    EXPECT_DOUBLE_EQ(v.hbm_bandwidth.ToGBps(), 900.0) << name;
  }
  EXPECT_EQ(Device("V100-SXM2-16GB").hbm_capacity, GB(16));
  EXPECT_EQ(Device("V100-SXM2-32GB").hbm_capacity, GB(32));
  // A100 datasheet, 40GB SXM: 312 TF bf16 dense, 40 GB HBM2 at 1,555 GB/s.
  const DeviceSpec& a = Device("A100-SXM-40GB");
  EXPECT_DOUBLE_EQ(Tf(a, DataType::kBf16), 312.0);
  EXPECT_EQ(a.hbm_capacity, GB(40));
  EXPECT_DOUBLE_EQ(a.hbm_bandwidth.ToGBps(), 1555.0);
}

TEST(NodePresets, Dgx2AndDgxA100ThreeTwentyMatchTheirDatasheets) {
  // DGX-2: 16 V100 32GB, 12 NVSwitches, 300 GB/s bidirectional NVLink -> 150 per direction,
  // 8 EDR 100 Gb/s NICs, 1.5 TB host memory.
  const NodeSpec& d2 = Node("DGX-2");
  EXPECT_EQ(d2.gpu.name, "V100-SXM2-32GB");
  EXPECT_EQ(d2.gpus, 16);
  EXPECT_EQ(d2.nvswitches, 12);
  EXPECT_DOUBLE_EQ(d2.nvlink_bandwidth.ToGBps(), 150.0);
  EXPECT_EQ(d2.nics, 8);
  EXPECT_EQ(d2.host_memory, TB(1.5));
  // DGX A100 320 GB: 8x A100 40GB (8 x 40 = 320), 1 TB host memory.
  const NodeSpec& a = Node("DGX-A100-320GB");
  EXPECT_EQ(a.gpu.name, "A100-SXM-40GB");
  EXPECT_EQ(a.gpus * a.gpu.hbm_capacity.count(), GB(320).count());
  EXPECT_EQ(a.host_memory, TB(1));
}

TEST(NodePresets, AwsInstancesMatchTheirInstancePagesAndEfaCalibration) {
  // AWS EC2 P4/P5 instance pages: p4de.24xlarge 8x A100 80GB, 4 x 100 Gb/s EFA, 1152 GiB;
  // p5.48xlarge 8x H100 80GB, 3200 Gb/s EFA (8 x 400 Gb/s as modeled), 2 TiB. EFA latency and
  // p4de's achievable bandwidth from AWS's nccl-tests tables (docs/data/
  // nccl_tests_all_reduce_{p4de,p5}_2node.csv): (mean time 8 B - 1 KiB - 24.6 us) / 4,
  // (162.3125 - 24.6) / 4 = 34.43 us and (71.135 - 24.6) / 4 = 11.63 us; 100 Gb/s x 43033 /
  // 51244 = 83.98 Gb/s (docs/calibration.md "EFA").
  const NodeSpec& p4de = Node("p4de.24xlarge");
  EXPECT_EQ(p4de.gpu.name, "A100-SXM-80GB");
  EXPECT_EQ(p4de.gpus, 8);
  EXPECT_EQ(p4de.nics, 4);
  EXPECT_EQ(p4de.host_memory, GiB(1152));
  EXPECT_NEAR(p4de.nic_latency.ToMicroseconds(), (162.3125 - 24.6) / 4, 0.01);
  EXPECT_NEAR(p4de.nic_bandwidth.ToGbps(), 100.0 * 43033 / 51244, 0.01);
  // p4d.24xlarge: p4de with A100 40GB, the same EFA.
  const NodeSpec& p4d = Node("p4d.24xlarge");
  EXPECT_EQ(p4d.gpu.name, "A100-SXM-40GB");
  EXPECT_EQ(p4d.nics, 4);
  EXPECT_EQ(p4d.nic_latency, p4de.nic_latency);
  EXPECT_EQ(p4d.nic_bandwidth, p4de.nic_bandwidth);
  const NodeSpec& p5 = Node("p5.48xlarge");
  EXPECT_EQ(p5.gpu.name, "H100-SXM-80GB");
  EXPECT_EQ(p5.gpus, 8);
  EXPECT_DOUBLE_EQ(p5.nics * p5.nic_bandwidth.ToGbps(), 3200);
  EXPECT_EQ(p5.host_memory, GiB(2048));
  EXPECT_NEAR(p5.nic_latency.ToMicroseconds(), (71.135 - 24.6) / 4, 0.01);
}

TEST(NodePresets, EveryPresetBuildsAsASingleNodeCluster) {
  for (const NodeSpec& n : NodePresets()) {
    EXPECT_FALSE(n.source.empty()) << n.name;
    ClusterSpec spec;
    spec.node = n;
    StatusOr<Cluster> c = BuildCluster(spec);
    ASSERT_TRUE(c.ok()) << n.name << ": " << c.status().ToString();
    EXPECT_EQ(c->num_gpus(), n.gpus);
  }
  EXPECT_EQ(NodePresetNames().size(), NodePresets().size());
  EXPECT_EQ(FindNodePreset("DGX-Z"), nullptr);
}

}  // namespace
}  // namespace placesim::topology
