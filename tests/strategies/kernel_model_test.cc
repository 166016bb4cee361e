// Holds the kernel model (strategies/cost/kernel_model.h) to its microbenchmark calibration
// (docs/calibration.md): every H100 GEMM point measured for the profile, the fused attention
// points, and the shape effects the model exists for (thin shards and small micro-batches
// slower per FLOP, wave quantization on parts that have it).
// Thread-safety: tests run single-threaded.
#include "strategies/cost/kernel_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "strategies/presets.h"
#include "topology/presets.h"

namespace placesim::strategies::cost {
namespace {

using topology::DataType;
using topology::DeviceSpec;

const DeviceSpec& H100() { return *topology::FindDevicePreset("H100-SXM-80GB"); }

double Tflops(Flops f, Duration t) { return f.count() / t.ToSeconds() / 1e12; }

struct GemmPoint {
  DataType type;
  int64_t m, n, k;
  double measured_tflops;
};

// Measured on one H100 80GB HBM3 SXM (driver 580.159.04, PyTorch 2.11.0+cu130, cuBLAS via
// torch.mm and torch._scaled_mm), sustained clocks, mean of two shuffled passes:
// docs/data/h100_gemm_sustained.csv, produced by scripts/microbench.py. Points that ran under
// 35 us are left out: back-to-back torch calls from Python issue no faster than ~20-30 us
// there (a 1024^3 GEMM, 3 us of GPU work, takes 21 us), so they measure the host.
const std::vector<GemmPoint>& H100GemmPoints() {
  static const std::vector<GemmPoint>* const kPoints = new std::vector<GemmPoint>{
      {DataType::kBf16, 128, 4096, 16384, 280.4},    {DataType::kBf16, 128, 4608, 12288, 273.8},
      {DataType::kBf16, 128, 6144, 12288, 326.1},    {DataType::kBf16, 128, 12288, 4096, 310.9},
      {DataType::kBf16, 128, 12288, 6144, 325.3},    {DataType::kBf16, 128, 16384, 4096, 313.6},
      {DataType::kBf16, 256, 4096, 16384, 513.9},    {DataType::kBf16, 256, 4608, 12288, 529.7},
      {DataType::kBf16, 256, 6144, 12288, 535.6},    {DataType::kBf16, 256, 12288, 4096, 557.0},
      {DataType::kBf16, 256, 12288, 6144, 534.0},    {DataType::kBf16, 256, 16384, 4096, 554.0},
      {DataType::kBf16, 512, 4096, 16384, 652.5},    {DataType::kBf16, 512, 4608, 12288, 631.0},
      {DataType::kBf16, 512, 6144, 12288, 641.4},    {DataType::kBf16, 512, 12288, 4096, 672.9},
      {DataType::kBf16, 512, 12288, 6144, 627.5},    {DataType::kBf16, 512, 16384, 4096, 646.3},
      {DataType::kBf16, 1024, 4096, 4096, 621.0},    {DataType::kBf16, 1024, 4096, 16384, 705.8},
      {DataType::kBf16, 1024, 4608, 12288, 656.9},   {DataType::kBf16, 1024, 6144, 12288, 677.3},
      {DataType::kBf16, 1024, 12288, 1536, 611.8},   {DataType::kBf16, 1024, 12288, 4096, 672.8},
      {DataType::kBf16, 1024, 12288, 6144, 681.6},   {DataType::kBf16, 1024, 16384, 4096, 678.2},
      {DataType::kBf16, 2048, 4096, 4096, 642.1},    {DataType::kBf16, 2048, 4096, 16384, 721.2},
      {DataType::kBf16, 2048, 4608, 12288, 701.9},   {DataType::kBf16, 2048, 6144, 12288, 686.0},
      {DataType::kBf16, 2048, 12288, 1536, 649.8},   {DataType::kBf16, 2048, 12288, 4096, 680.8},
      {DataType::kBf16, 2048, 12288, 6144, 691.4},   {DataType::kBf16, 2048, 16384, 4096, 688.0},
      {DataType::kBf16, 4096, 4096, 4096, 668.5},    {DataType::kBf16, 4096, 4096, 16384, 704.3},
      {DataType::kBf16, 4096, 4608, 12288, 703.2},   {DataType::kBf16, 4096, 6144, 12288, 720.4},
      {DataType::kBf16, 4096, 12288, 1536, 637.4},   {DataType::kBf16, 4096, 12288, 4096, 689.9},
      {DataType::kBf16, 4096, 12288, 6144, 687.4},   {DataType::kBf16, 4096, 16384, 4096, 672.6},
      {DataType::kBf16, 6144, 6144, 6144, 690.1},    {DataType::kBf16, 8192, 4096, 4096, 693.3},
      {DataType::kBf16, 8192, 4096, 16384, 699.8},   {DataType::kBf16, 8192, 4608, 12288, 686.7},
      {DataType::kBf16, 8192, 6144, 12288, 669.3},   {DataType::kBf16, 8192, 8192, 8192, 673.3},
      {DataType::kBf16, 8192, 12288, 1536, 668.2},   {DataType::kBf16, 8192, 12288, 4096, 692.1},
      {DataType::kBf16, 8192, 12288, 6144, 671.0},   {DataType::kBf16, 8192, 16384, 4096, 679.8},
      {DataType::kBf16, 12288, 12288, 12288, 698.4}, {DataType::kBf16, 16384, 4096, 4096, 667.1},
      {DataType::kBf16, 16384, 4096, 16384, 687.7},  {DataType::kBf16, 16384, 4608, 12288, 717.2},
      {DataType::kBf16, 16384, 6144, 12288, 719.3},  {DataType::kBf16, 16384, 12288, 1536, 658.9},
      {DataType::kBf16, 16384, 12288, 4096, 669.3},  {DataType::kBf16, 16384, 12288, 6144, 705.9},
      {DataType::kBf16, 16384, 16384, 4096, 668.7},  {DataType::kBf16, 16384, 16384, 16384, 693.6},
      {DataType::kFp8, 256, 4096, 16384, 914.8},     {DataType::kFp8, 256, 6144, 12288, 957.6},
      {DataType::kFp8, 256, 12288, 6144, 943.7},     {DataType::kFp8, 256, 16384, 4096, 962.8},
      {DataType::kFp8, 512, 4096, 16384, 1179.9},    {DataType::kFp8, 512, 4608, 12288, 1132.9},
      {DataType::kFp8, 512, 6144, 12288, 1147.3},    {DataType::kFp8, 512, 12288, 4096, 1034.9},
      {DataType::kFp8, 512, 12288, 6144, 1151.9},    {DataType::kFp8, 512, 16384, 4096, 1107.5},
      {DataType::kFp8, 1024, 4096, 16384, 1261.0},   {DataType::kFp8, 1024, 4608, 12288, 1164.7},
      {DataType::kFp8, 1024, 6144, 12288, 1228.4},   {DataType::kFp8, 1024, 12288, 1536, 958.9},
      {DataType::kFp8, 1024, 12288, 4096, 1169.0},   {DataType::kFp8, 1024, 12288, 6144, 1140.3},
      {DataType::kFp8, 1024, 16384, 4096, 1135.4},   {DataType::kFp8, 2048, 4096, 4096, 1151.4},
      {DataType::kFp8, 2048, 4096, 16384, 1206.3},   {DataType::kFp8, 2048, 4608, 12288, 1244.4},
      {DataType::kFp8, 2048, 6144, 12288, 1191.2},   {DataType::kFp8, 2048, 12288, 1536, 1024.4},
      {DataType::kFp8, 2048, 12288, 4096, 1154.1},   {DataType::kFp8, 2048, 12288, 6144, 1172.5},
      {DataType::kFp8, 2048, 16384, 4096, 1120.5},   {DataType::kFp8, 4096, 4096, 4096, 1158.0},
      {DataType::kFp8, 4096, 4096, 16384, 1166.0},   {DataType::kFp8, 4096, 4608, 12288, 1231.2},
      {DataType::kFp8, 4096, 6144, 12288, 1133.0},   {DataType::kFp8, 4096, 12288, 1536, 991.3},
      {DataType::kFp8, 4096, 12288, 4096, 1217.9},   {DataType::kFp8, 4096, 12288, 6144, 1219.6},
      {DataType::kFp8, 4096, 16384, 4096, 1246.9},   {DataType::kFp8, 6144, 6144, 6144, 1193.4},
      {DataType::kFp8, 8192, 4096, 4096, 1176.7},    {DataType::kFp8, 8192, 4096, 16384, 1172.8},
      {DataType::kFp8, 8192, 4608, 12288, 1239.2},   {DataType::kFp8, 8192, 6144, 12288, 1257.0},
      {DataType::kFp8, 8192, 8192, 8192, 1191.9},    {DataType::kFp8, 8192, 12288, 1536, 1058.5},
      {DataType::kFp8, 8192, 12288, 4096, 1228.5},   {DataType::kFp8, 8192, 12288, 6144, 1206.6},
      {DataType::kFp8, 8192, 16384, 4096, 1226.8},   {DataType::kFp8, 12288, 12288, 12288, 1243.8},
      {DataType::kFp8, 16384, 4096, 4096, 1265.8},   {DataType::kFp8, 16384, 4096, 16384, 1307.0},
      {DataType::kFp8, 16384, 4608, 12288, 1190.4},  {DataType::kFp8, 16384, 6144, 12288, 1211.5},
      {DataType::kFp8, 16384, 12288, 1536, 1048.7},  {DataType::kFp8, 16384, 12288, 4096, 1161.8},
      {DataType::kFp8, 16384, 12288, 6144, 1202.3},  {DataType::kFp8, 16384, 16384, 4096, 1223.3},
      {DataType::kFp8, 16384, 16384, 16384, 1252.0},
  };
  return *kPoints;
}

// fp8 GEMMs with a short reduction (K = 1536) and one thin bf16 shape run 11-16% below the
// model: their per-tile epilogue (scaling and writing C) is a larger share of a short K loop
// than the one fixed cost per kernel the model charges. They are held to 20%, the rest to 10%.
bool KnownShortfall(const GemmPoint& p) {
  return (p.type == DataType::kFp8 && p.k == 1536) ||
         (p.type == DataType::kBf16 && p.m == 256 && p.n == 4096 && p.k == 16384);
}

TEST(KernelModel, H100GemmThroughputWithinTenPercentOfMeasured) {
  double total_error = 0;
  for (const GemmPoint& p : H100GemmPoints()) {
    const GemmShape g{p.m, p.n, p.k};
    const double predicted = Tflops(g.flops(), GemmTime(H100(), p.type, g));
    const double error = predicted / p.measured_tflops - 1;
    total_error += std::abs(error);
    EXPECT_LE(std::abs(error), KnownShortfall(p) ? 0.20 : 0.10)
        << topology::DataTypeName(p.type) << " " << p.m << "x" << p.n << "x" << p.k
        << ": predicted " << predicted << " TFLOP/s, measured " << p.measured_tflops;
  }
  // Mean |error| over all 115 points: 3.5% when calibrated (docs/calibration.md).
  EXPECT_LT(total_error / static_cast<double>(H100GemmPoints().size()), 0.05);
}

// The rows of a CSV in docs/data whose first field is `kind`, split at commas.
std::vector<std::vector<std::string>> CsvRows(const std::string& path, const std::string& kind) {
  std::ifstream csv(std::string(PLACESIM_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(csv.good()) << path << " is missing";
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(csv, line);) {
    std::istringstream row(line);
    std::vector<std::string> fields;
    for (std::string cell; std::getline(row, cell, ',');) fields.push_back(cell);
    if (!fields.empty() && fields[0] == kind) rows.push_back(std::move(fields));
  }
  return rows;
}

// The H200 SXM's GEMMs, measured 2026-11-27 by the same script at sustained clocks (about
// 690 W, 1.4-1.5 GHz; docs/data/h200_gemm_sustained.csv): each shape's time is the mean of
// its two passes, and shapes under 35 us are left out as for the H100 (114 remain). The
// profile's 0.68 bf16 and 0.61 fp8 are the least mean |error| on a 0.01 grid (2.7% when
// calibrated). Beyond 10% (held to 20%): fp8 with K = 1536, as on the H100, and the thin M =
// 256 products with K >= 6144 (bf16 256 x 4608 x 12288 +14%, 256 x 4096 x 16384 +12%, 256 x
// 12288 x 6144 +10%; fp8 256 x 4096 x 16384 +10%).
TEST(KernelModel, H200GemmThroughputWithinTenPercentOfMeasured) {
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t>, std::vector<double>> seconds;
  for (const auto& f : CsvRows("docs/data/h200_gemm_sustained.csv", "gemm")) {
    ASSERT_GE(f.size(), 7u);
    seconds[{f[2], std::stoll(f[3]), std::stoll(f[4]), std::stoll(f[5])}].push_back(
        std::stod(f[6]));
  }
  const DeviceSpec& h200 = *topology::FindDevicePreset("H200-SXM-141GB");
  double total_error = 0;
  int points = 0;
  for (const auto& [shape, runs] : seconds) {
    const auto& [type_name, m, n, k] = shape;
    double mean = 0;
    for (const double t : runs) mean += t / static_cast<double>(runs.size());
    if (mean < 35e-6) continue;
    const DataType type = type_name == "fp8" ? DataType::kFp8 : DataType::kBf16;
    const GemmShape g{m, n, k};
    // Predicted TFLOP/s over measured, minus 1: the measured time over the predicted one.
    const double relative = mean / GemmTime(h200, type, g).ToSeconds() - 1;
    const bool shortfall = (type == DataType::kFp8 && k == 1536) || (m == 256 && k >= 6144);
    EXPECT_LE(std::abs(relative), shortfall ? 0.20 : 0.10)
        << type_name << " " << m << "x" << n << "x" << k << ": measured " << mean << " s";
    total_error += std::abs(relative);
    ++points;
  }
  EXPECT_EQ(points, 114);
  EXPECT_LT(total_error / points, 0.05);
}

struct AttentionPoint {
  int64_t seq;
  double forward_efficiency;   // of the work done (causal: half the scores), of bf16 peak
  double backward_efficiency;  // 2.5 x the forward work
  int64_t head_dim = 128;
};

// The kernel model's forward and backward efficiency of `kernel` on H100 at the measured
// shapes (32 heads of p.head_dim, b x s = 16384 tokens, causal), against the measured ones.
void ExpectH100AttentionNear(topology::AttentionKernel kernel,
                             const std::vector<AttentionPoint>& points, double backward_512_tol) {
  const double peak = H100().Peak(DataType::kBf16).per_second();
  for (const AttentionPoint& p : points) {
    const AttentionShape a{(16384 / p.seq) * 32, p.seq, p.seq, p.head_dim, true};
    const double forward =
        a.forward_work().count() / FusedAttentionForwardTime(H100(), kernel, a).ToSeconds() / peak;
    const double backward = 2.5 * a.forward_work().count() /
                            FusedAttentionBackwardTime(H100(), kernel, a).ToSeconds() / peak;
    EXPECT_NEAR(forward / p.forward_efficiency, 1.0, 0.10)
        << AttentionKernelName(kernel) << " forward, s = " << p.seq << ", d = " << p.head_dim;
    EXPECT_NEAR(backward / p.backward_efficiency, 1.0, p.seq == 512 ? backward_512_tol : 0.10)
        << AttentionKernelName(kernel) << " backward, s = " << p.seq << ", d = " << p.head_dim;
  }
}

TEST(KernelModel, H100CausalFusedAttentionWithinTenPercentOfMeasured) {
  // cuDNN fused attention through torch SDPA, causal, 32 heads of 128, b x s = 16384 tokens
  // (docs/data/h100_microbench.csv): efficiency = work / time / 989.4 TFLOP/s.
  // The 512-key backward runs 22% below the model (its one saturation curve fits the rest).
  ExpectH100AttentionNear(topology::AttentionKernel::kCudnn,
                          {{512, 0.358, 0.180},
                           {1024, 0.464, 0.298},
                           {2048, 0.537, 0.400},
                           {4096, 0.589, 0.479},
                           {8192, 0.611, 0.522}},
                          0.25);
}

TEST(KernelModel, H100FlashAttention2WithinTenPercentOfMeasured) {
  // SDPA's FLASH_ATTENTION backend (FlashAttention-2), same run and rows as cuDNN above,
  // read by scripts/attention-fit.py: forward = W / t_fwd, backward = 2.5 W / (t_fwd+bwd -
  // t_fwd), W = 2 b h s^2 d; e.g. s = 4096: W = 2 x 4 x 32 x 4096^2 x 128 = 5.50e11 in
  // 1.6985 ms forward = 0.327 of 989.4 TFLOP/s, and 2.5 W in 7.4539 - 1.6985 ms = 0.241.
  ExpectH100AttentionNear(topology::AttentionKernel::kFlashAttention2,
                          {{512, 0.200, 0.114},
                           {1024, 0.260, 0.159},
                           {2048, 0.305, 0.207},
                           {4096, 0.327, 0.241},
                           {8192, 0.326, 0.278}},
                          0.10);
}

// Head widths other than 128 (docs/data/h100_attention_headdim.csv, written by
// scripts/attention_headdim.py: two back-to-back runs, each configuration's time the mean of
// the two; efficiencies as above, W = 2 b h s^2 d, printed by scripts/attention-width-fit.py;
// e.g. cuDNN, d = 64, s = 8192: W = 2 x 2 x 32 x 8192^2 x 64 = 5.50e11 in 1.2225 and 1.1841 ms
// forward, mean 1.2033 ms: 0.462 of 989.4 TFLOP/s). Widths 80 and 160 are
// not among the compiled widths the factors were taken at: they check the padding (80 runs
// as 96, 160 as 192).
TEST(KernelModel, H100CudnnAttentionAcrossHeadWidthsWithinTenPercentOfMeasured) {
  ExpectH100AttentionNear(topology::AttentionKernel::kCudnn,
                          {{2048, 0.205, 0.176, 32},
                           {8192, 0.235, 0.221, 32},
                           {2048, 0.406, 0.315, 64},
                           {8192, 0.462, 0.417, 64},
                           {2048, 0.364, 0.279, 80},
                           {8192, 0.415, 0.352, 80},
                           {2048, 0.429, 0.324, 96},
                           {8192, 0.493, 0.418, 96},
                           {2048, 0.489, 0.237, 160},
                           {8192, 0.565, 0.294, 160},
                           {2048, 0.581, 0.282, 192},
                           {8192, 0.665, 0.351, 192},
                           {2048, 0.597, 0.324, 256},
                           {8192, 0.688, 0.403, 256}},
                          0.10);
}

TEST(KernelModel, H100FlashAttention2AcrossHeadWidthsWithinTenPercentOfMeasured) {
  ExpectH100AttentionNear(topology::AttentionKernel::kFlashAttention2,
                          {{2048, 0.185, 0.148, 32},
                           {8192, 0.206, 0.189, 32},
                           {2048, 0.268, 0.194, 64},
                           {8192, 0.295, 0.253, 64},
                           {2048, 0.235, 0.154, 80},
                           {8192, 0.265, 0.199, 80},
                           {2048, 0.299, 0.189, 96},
                           {8192, 0.330, 0.248, 96},
                           {2048, 0.215, 0.161, 160},
                           {8192, 0.243, 0.202, 160},
                           {2048, 0.286, 0.199, 192},
                           {8192, 0.315, 0.244, 192},
                           {2048, 0.290, 0.192, 256},
                           {8192, 0.316, 0.248, 256}},
                          0.10);
}

TEST(KernelModel, H200AttentionWithinThirteenPercentOfTheH100Profiles) {
  // docs/data/h200_attention_headdim.csv: scripts/attention_headdim.py once on an H200 SXM
  // (2026-11-27), every head width and sequence of both kernels, multi-head rows. The H200
  // runs the H100's profiles (same GH100 die and clocks); efficiencies as above. 123 of the
  // 128 forward and backward figures are within 10%; the other five are at 1,024 keys, the
  // worst FlashAttention-2's 256-wide forward (the model 12.4% under).
  const double peak = H100().Peak(DataType::kBf16).per_second();
  const DeviceSpec& h200 = *topology::FindDevicePreset("H200-SXM-141GB");
  int points = 0;
  for (const auto& f : CsvRows("docs/data/h200_attention_headdim.csv", "attn")) {
    ASSERT_GE(f.size(), 12u);
    if (f[7] == "error" || f[3] != f[11]) continue;  // a refused shape; grouped-query rows
    const auto kernel = f[1] == "CUDNN_ATTENTION" ? topology::AttentionKernel::kCudnn
                                                  : topology::AttentionKernel::kFlashAttention2;
    const int64_t b = std::stoll(f[2]), heads = std::stoll(f[3]), s = std::stoll(f[4]);
    const AttentionShape a{b * heads, s, s, std::stoll(f[5]), true};
    const double forward = std::stod(f[7]), both = std::stod(f[9]);
    const double work = a.forward_work().count();
    const double predicted_fwd =
        work / FusedAttentionForwardTime(h200, kernel, a).ToSeconds() / peak;
    const double predicted_bwd =
        2.5 * work / FusedAttentionBackwardTime(h200, kernel, a).ToSeconds() / peak;
    EXPECT_NEAR(predicted_fwd / (work / forward / peak), 1.0, 0.13) << f[1] << " " << f[5];
    EXPECT_NEAR(predicted_bwd / (2.5 * work / (both - forward) / peak), 1.0, 0.13)
        << f[1] << " d " << f[5] << " s " << f[4];
    ++points;
  }
  EXPECT_EQ(points, 64);
}

TEST(KernelModel, FusedAttentionPadsHeadWidthsToTheCompiledOnes) {
  // 80 runs as 96 and 160 as 192: the same time as the padded width; 320 is past the widest
  // compiled width (256) and runs as it is, at 256's factor: (320 / 256) of 256's time.
  using topology::AttentionKernel;
  EXPECT_EQ(PaddedHeadWidth(1), 32);
  EXPECT_EQ(PaddedHeadWidth(80), 96);
  EXPECT_EQ(PaddedHeadWidth(128), 128);
  EXPECT_EQ(PaddedHeadWidth(129), 192);
  EXPECT_EQ(PaddedHeadWidth(320), 320);
  const auto forward = [](int64_t d) {
    return FusedAttentionForwardTime(H100(), AttentionKernel::kCudnn,
                                     AttentionShape{128, 4096, 4096, d, true}) -
           Microseconds(6);
  };
  EXPECT_EQ(forward(80), forward(96));
  EXPECT_EQ(forward(160), forward(192));
  EXPECT_NEAR(forward(320) / forward(256), 320.0 / 256.0, 1e-9);
}

TEST(KernelModel, LatentAttentionRunsAtTheMeanOfItsTwoPaddedWidths) {
  // DeepSeek-V3's heads: queries and keys of 192, values of 128. The work is 2 B q k (192 +
  // 128), 1.25 times a 128-wide head's 2 B q k (128 + 128); the factor is taken at the mean
  // width 160, between 128 (1.00) and 192 (cuDNN backward 0.68): 0.84. So the backward takes
  // 1.25 / 0.84 times the 128-wide head's.
  using topology::AttentionKernel;
  const AttentionShape mla{128, 4096, 4096, 192, true, 128};
  const AttentionShape mha{128, 4096, 4096, 128, true};
  EXPECT_DOUBLE_EQ(mla.forward_work().count() / mha.forward_work().count(), 1.25);
  const auto backward = [](const AttentionShape& a) {
    return FusedAttentionBackwardTime(H100(), AttentionKernel::kCudnn, a) - Microseconds(6);
  };
  EXPECT_NEAR(backward(mla) / backward(mha), 1.25 / 0.84, 1e-9);
}

TEST(KernelModel, FlashAttention2TakesTheProfilesRatioOfCudnnsTimeOnH100) {
  // Without the 6 us launch each fused kernel takes work / (peak x e x k / (k + k_half)), so
  // at s = 4096 keys FlashAttention-2 over cuDNN is, from the two H100 profiles,
  //   forward   (0.64 x 4096 / 4480) / (0.35 x 4096 / 4480)   = 0.64 / 0.35           = 1.829
  //   backward  (0.55 x 4096 / 4864) / (0.30 x 4096 / 4992)   = 0.55 / 0.30 x 4992/4864 = 1.882
  using topology::AttentionKernel;
  const AttentionShape a{4 * 32, 4096, 4096, 128, true};
  const Duration launch = Microseconds(6);
  const auto forward = [&](AttentionKernel k) {
    return FusedAttentionForwardTime(H100(), k, a) - launch;
  };
  const auto backward = [&](AttentionKernel k) {
    return FusedAttentionBackwardTime(H100(), k, a) - launch;
  };
  EXPECT_NEAR(forward(AttentionKernel::kFlashAttention2) / forward(AttentionKernel::kCudnn),
              0.64 / 0.35, 1e-6);
  EXPECT_NEAR(backward(AttentionKernel::kFlashAttention2) / backward(AttentionKernel::kCudnn),
              0.55 / 0.30 * 4992.0 / 4864.0, 1e-6);
}

TEST(KernelModel, EachDeviceDefaultsToTheKernelItsStackRuns) {
  // The default (an unset training.attention_kernel) is today's profile: cuDNN on Hopper and
  // Blackwell, FlashAttention-2 on A100 (whose figures are FlashAttention-2's paper's), none
  // on V100.
  using topology::AttentionKernel;
  const auto default_of = [](const char* device) {
    return topology::FindDevicePreset(device)->kernels.default_attention;
  };
  EXPECT_EQ(default_of("H100-SXM-80GB"), AttentionKernel::kCudnn);
  EXPECT_EQ(default_of("H200-SXM-141GB"), AttentionKernel::kCudnn);
  EXPECT_EQ(default_of("B200"), AttentionKernel::kCudnn);
  EXPECT_EQ(default_of("A100-SXM-80GB"), AttentionKernel::kFlashAttention2);
  const topology::KernelProfile& v100 = topology::FindDevicePreset("V100-SXM2-32GB")->kernels;
  EXPECT_EQ(v100.Attention(AttentionKernel::kDeviceDefault), nullptr);
  EXPECT_EQ(v100.Attention(AttentionKernel::kCudnn), nullptr);
  EXPECT_EQ(v100.Attention(AttentionKernel::kFlashAttention2), nullptr);
  const AttentionShape a{128, 2048, 2048, 128, true};
  EXPECT_EQ(FusedAttentionForwardTime(H100(), AttentionKernel::kDeviceDefault, a),
            FusedAttentionForwardTime(H100(), AttentionKernel::kCudnn, a));
}

TEST(KernelModel, TheAttentionKernelMovesTheStepEfficiencyOnlyWithFlashAttention) {
  // GPT-3 175B shapes, tp 8, one 2048-token micro-batch on H100: FlashAttention-2's slower
  // attention core lowers the step's efficiency; with flash_attention off the core runs as
  // GEMMs and the kernel named has no effect.
  using topology::AttentionKernel;
  const ModelSpec gpt3 = *FindModelPreset("gpt3-175b");
  TrainingSpec training;
  training.flash_attention = true;
  topology::MeshShape mesh;
  mesh.tp = 8;
  const auto efficiency = [&](AttentionKernel k, bool flash) {
    TrainingSpec t = training;
    t.attention_kernel = k;
    t.flash_attention = flash;
    return StepMatmulEfficiency(gpt3.transformer, t, mesh, H100(), DataType::kBf16);
  };
  const double cudnn = efficiency(AttentionKernel::kCudnn, true);
  EXPECT_DOUBLE_EQ(efficiency(AttentionKernel::kDeviceDefault, true), cudnn);
  EXPECT_LT(efficiency(AttentionKernel::kFlashAttention2, true), cudnn);
  EXPECT_DOUBLE_EQ(efficiency(AttentionKernel::kFlashAttention2, false),
                   efficiency(AttentionKernel::kCudnn, false));
}

TEST(KernelModel, ThinGemmsAreMemoryBoundAndSlowerPerFlop) {
  // M = 128 tokens against a 4096 x 16384 weight: 2 x 128 x 4096 x 16384 = 17.2 GFLOP moves
  // 2 (128 x 16384 + 4096 x 16384) + 2 x 128 x 4096 = 139.5 MB; at 0.80 x 3.35 TB/s that is
  // 52.1 us against 24.8 us of compute at 0.70 x 989.4 TF, so memory paces it: 58.1 us with the
  // 6 us launch, 296 TFLOP/s, far under the 690 of a large square.
  const GemmShape thin{128, 4096, 16384};
  const double bytes = 2.0 * (128 * 16384 + 4096 * 16384) + 2.0 * 128 * 4096;
  const double expected_us = bytes / (0.80 * 3350e9) * 1e6 + 6;
  EXPECT_NEAR(GemmTime(H100(), DataType::kBf16, thin).ToMicroseconds(), expected_us, 0.01);
  const GemmShape square{8192, 8192, 8192};
  EXPECT_LT(Tflops(thin.flops(), GemmTime(H100(), DataType::kBf16, thin)),
            0.5 * Tflops(square.flops(), GemmTime(H100(), DataType::kBf16, square)));
}

TEST(KernelModel, AmpereQuantizesWaves) {
  // A100: 108 SMs, 128-wide tiles. 1536 x 1152 has 12 x 9 = 108 tiles (one full wave);
  // 1536 x 1280 has 12 x 10 = 120 tiles: two waves for 11% more work, so the time doubles
  // (less the shared 6 us launch). Compute-bound at K = 8192.
  const DeviceSpec& a100 = *topology::FindDevicePreset("A100-SXM-80GB");
  const Duration one = GemmTime(a100, DataType::kBf16, {1536, 1152, 8192});
  const Duration two = GemmTime(a100, DataType::kBf16, {1536, 1280, 8192});
  EXPECT_NEAR((two - Microseconds(6)) / (one - Microseconds(6)), 2.0, 1e-6);
}

TEST(KernelModel, SmallMicroBatchesLowerTheStepEfficiency) {
  // The step's efficiency falls as its GEMMs thin out: GPT-3 175B shapes under tp 8, micro-batch
  // 1 of 2048 tokens, versus tp 8 at 128 tokens (s = 128), on H100.
  const ModelSpec gpt3 = *FindModelPreset("gpt3-175b");
  TrainingSpec training;
  training.micro_batch = 1;
  training.flash_attention = true;
  topology::MeshShape mesh;
  mesh.tp = 8;
  const double full =
      StepMatmulEfficiency(gpt3.transformer, training, mesh, H100(), DataType::kBf16);
  TransformerSpec short_seq = gpt3.transformer;
  short_seq.seq_len = 128;
  const double thin = StepMatmulEfficiency(short_seq, training, mesh, H100(), DataType::kBf16);
  EXPECT_GT(full, 0.6);
  EXPECT_LE(full, 0.75);  // the saturated 0.70, plus a little from causal attention
  EXPECT_LT(thin, full - 0.1);
}

TEST(KernelModel, WithoutAProfileTheFlatEfficiencyHolds) {
  DeviceSpec custom = H100();
  custom.kernels = topology::KernelProfile{};
  custom.matmul_efficiency = 0.42;
  const ModelSpec gpt3 = *FindModelPreset("gpt3-175b");
  TrainingSpec training;
  topology::MeshShape mesh;
  EXPECT_DOUBLE_EQ(StepMatmulEfficiency(gpt3.transformer, training, mesh, custom, DataType::kBf16),
                   0.42);
  // A model given only by its parameter count has no shapes: the device's flat figure.
  EXPECT_DOUBLE_EQ(StepMatmulEfficiency(TransformerSpec{}, training, mesh, H100(), DataType::kBf16),
                   H100().matmul_efficiency);
}

}  // namespace
}  // namespace placesim::strategies::cost
