// Golden end-to-end tests: every shipped example (examples/*.textproto, examples/*.json) is run
// through the command line in-process (RunCli, exactly what the `placesim` binary does) and
// its output compared with the stored files in tests/golden/:
//
//   <example file>.analyze.json       `placesim analyze EXAMPLE --format json`, every example
//   <example file>.summary.json       `placesim simulate EXAMPLE --format json`, every example
//                                     that `simulate` accepts
//   <example file>.trace.json         the `--trace --trace-ranks 0` timeline of that run (rank 0
//                                     alone: a pipeline would otherwise trace every stage's
//                                     rank, tens of megabytes for the 1T example), canonical (keys
//                                     sorted, one event per line), for traces up to 128 KiB
//   <example file>.trace.digest.json  for larger traces: the SHA-256, byte count and event
//                                     counts of the trace file exactly as placesim wrote it
//                                     (its output is byte-deterministic, so the raw bytes are
//                                     themselves canonical)
//
// An example without a summary golden must be refused by `simulate` (exit code 2): when the
// simulator learns a new strategy family, this test asks for its goldens.
// JSON is compared as values, not text: integers, strings and booleans exactly, floating-point
// numbers to a relative 1e-9 (the last bits of a double may differ between compilers and
// architectures; the simulator's integer-picosecond clock does not). A failure lists the first
// differing JSON paths with the expected and actual values.
//
// The goldens change whenever the simulator's output changes on purpose. Regenerate them with
// scripts/refresh-goldens.sh (see its header) and review the diff before committing.
//
// Files are found through PLACESIM_SOURCE_DIR, never the working directory; traces are written
// under testing::TempDir(), one file per test process.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/commands.h"

namespace placesim::sim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path& SourceDir() {
  static const fs::path dir(PLACESIM_SOURCE_DIR);
  return dir;
}
fs::path ExamplesDir() { return SourceDir() / "examples"; }
fs::path GoldenDir() { return SourceDir() / "tests" / "golden"; }

constexpr char kRefreshHint[] =
    "if the change is intended, run scripts/refresh-goldens.sh and review the diff";

// The shipped examples, by file name, sorted.
std::vector<std::string> ListExamples() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(ExamplesDir(), ec)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".textproto" || ext == ".json")) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool ReadFile(const fs::path& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  text->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

CliRun RunCommand(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliRun r;
  r.code = RunCli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// ------------------------------------------------------------------------------ JSON diff
std::string Show(const json& v) {
  std::string s = v.dump();
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  return s;
}

std::string Child(const std::string& path, const std::string& key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  return plain ? path + "." + key : path + "[" + json(key).dump() + "]";
}

bool NumbersMatch(const json& a, const json& b) {
  if (!a.is_number_float() && !b.is_number_float()) {
    // Both integers: exact, across signedness.
    if (a.is_number_unsigned() || b.is_number_unsigned()) {
      return a.get<uint64_t>() == b.get<uint64_t>() && a.get<int64_t>() >= 0 &&
             b.get<int64_t>() >= 0;
    }
    return a.get<int64_t>() == b.get<int64_t>();
  }
  const double x = a.get<double>();
  const double y = b.get<double>();
  return x == y || std::abs(x - y) <= 1e-9 * std::max(std::abs(x), std::abs(y));
}

// Appends "PATH: expected E, got A" for each difference, up to `limit` lines.
void Diff(const json& expected, const json& actual, const std::string& path, size_t limit,
          std::vector<std::string>* out) {
  if (out->size() >= limit) return;
  if (expected.is_number() && actual.is_number()) {
    if (!NumbersMatch(expected, actual)) {
      out->push_back(path + ": expected " + Show(expected) + ", got " + Show(actual));
    }
    return;
  }
  if (expected.type() != actual.type()) {
    out->push_back(path + ": expected " + Show(expected) + ", got " + Show(actual));
    return;
  }
  if (expected.is_object()) {
    for (const auto& [key, value] : expected.items()) {
      if (!actual.contains(key)) {
        out->push_back(Child(path, key) + ": missing (expected " + Show(value) + ")");
        if (out->size() >= limit) return;
      } else {
        Diff(value, actual.at(key), Child(path, key), limit, out);
      }
    }
    for (const auto& [key, value] : actual.items()) {
      if (out->size() >= limit) return;
      if (!expected.contains(key)) {
        out->push_back(Child(path, key) + ": unexpected (got " + Show(value) + ")");
      }
    }
    return;
  }
  if (expected.is_array()) {
    const size_t n = std::min(expected.size(), actual.size());
    for (size_t i = 0; i < n && out->size() < limit; ++i) {
      Diff(expected[i], actual[i], path + "[" + std::to_string(i) + "]", limit, out);
    }
    if (expected.size() != actual.size() && out->size() < limit) {
      out->push_back(path + ": expected " + std::to_string(expected.size()) + " elements, got " +
                     std::to_string(actual.size()));
    }
    return;
  }
  if (expected != actual) {
    out->push_back(path + ": expected " + Show(expected) + ", got " + Show(actual));
  }
}

// Compares `actual_text` with the golden file as JSON values. Returns "" when they match, else
// a readable report.
std::string CompareWithGolden(const fs::path& golden, const std::string& actual_text) {
  std::string golden_text;
  if (!ReadFile(golden, &golden_text)) {
    return "missing golden " + golden.string() + "; run scripts/refresh-goldens.sh";
  }
  const json expected = json::parse(golden_text, nullptr, /*allow_exceptions=*/false);
  if (expected.is_discarded()) return "golden " + golden.string() + " is not valid JSON";
  const json actual = json::parse(actual_text, nullptr, /*allow_exceptions=*/false);
  if (actual.is_discarded()) return "the output is not valid JSON:\n" + actual_text;
  constexpr size_t kLimit = 20;
  std::vector<std::string> diffs;
  Diff(expected, actual, "$", kLimit, &diffs);
  if (diffs.empty()) return "";
  std::string report = "output differs from " + golden.filename().string() + " (first " +
                       std::to_string(diffs.size()) + " differences):\n";
  for (const std::string& d : diffs) report += "  " + d + "\n";
  return report + kRefreshHint;
}

// -------------------------------------------------------------------------------- SHA-256
// FIPS 180-4 SHA-256, for the digest goldens of large traces (the same digest as sha256sum).
std::string Sha256Hex(const std::string& data) {
  static constexpr std::array<uint32_t, 64> k = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
      0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
      0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
      0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
      0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
      0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
      0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
      0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
      0xc67178f2};
  std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  auto rotr = [](uint32_t x, int n) { return (x >> n) | (x << (32 - n)); };
  std::string msg = data;
  const uint64_t bit_length = static_cast<uint64_t>(data.size()) * 8;
  msg.push_back(static_cast<char>(0x80));
  while (msg.size() % 64 != 56) msg.push_back('\0');
  for (int i = 7; i >= 0; --i) msg.push_back(static_cast<char>((bit_length >> (8 * i)) & 0xff));
  std::array<uint32_t, 64> w{};
  for (size_t block = 0; block < msg.size(); block += 64) {
    for (int i = 0; i < 16; ++i) {
      w[i] = 0;
      for (int j = 0; j < 4; ++j) {
        w[i] = (w[i] << 8) | static_cast<uint8_t>(msg[block + 4 * i + j]);
      }
    }
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::array<uint32_t, 8> v = h;
    for (int i = 0; i < 64; ++i) {
      const uint32_t s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
      const uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
      const uint32_t t1 = v[7] + s1 + ch + k[i] + w[i];
      const uint32_t s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
      const uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
      const uint32_t t2 = s0 + maj;
      v = {t1 + t2, v[0], v[1], v[2], v[3] + t1, v[4], v[5], v[6]};
    }
    for (int i = 0; i < 8; ++i) h[i] += v[i];
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (uint32_t word : h) {
    for (int shift = 28; shift >= 0; shift -= 4) hex.push_back(kHex[(word >> shift) & 0xf]);
  }
  return hex;
}

// What a digest golden records about a trace file: its SHA-256, size and event counts.
json TraceDigest(const std::string& trace_text) {
  json digest;
  digest["sha256"] = Sha256Hex(trace_text);
  digest["bytes"] = trace_text.size();
  const json trace = json::parse(trace_text, nullptr, /*allow_exceptions=*/false);
  const json& events =
      trace.is_object() && trace.contains("traceEvents") ? trace["traceEvents"] : trace;
  digest["events"] = events.is_array() ? events.size() : 0;
  json by_phase = json::object();
  if (events.is_array()) {
    for (const json& e : events) {
      const std::string ph = e.is_object() && e.contains("ph") ? e["ph"].get<std::string>() : "";
      by_phase[ph] = by_phase.value(ph, 0) + 1;
    }
  }
  digest["events_by_phase"] = std::move(by_phase);
  return digest;
}

// A trace path private to this test process.
fs::path TracePath(const std::string& example) {
  return fs::path(testing::TempDir()) /
         ("placesim-golden-" + std::to_string(::getpid()) + "-" + example + ".trace.json");
}

// --------------------------------------------------------------------------------- tests
class GoldenTest : public testing::TestWithParam<std::string> {
 protected:
  std::string ExamplePath() const { return (ExamplesDir() / GetParam()).string(); }
  fs::path Golden(const std::string& suffix) const { return GoldenDir() / (GetParam() + suffix); }
};

TEST_P(GoldenTest, AnalyzeMatchesGolden) {
  const CliRun r = RunCommand({"analyze", ExamplePath(), "--format", "json"});
  // 3 = the strategy violates a correctness condition; the report is still the output.
  ASSERT_TRUE(r.code == kExitOk || r.code == kExitIncorrectStrategy)
      << "exit code " << r.code << "\n"
      << r.err;
  const std::string report = CompareWithGolden(Golden(".analyze.json"), r.out);
  EXPECT_TRUE(report.empty()) << report;
}

TEST_P(GoldenTest, SimulateMatchesGolden) {
  const fs::path trace_path = TracePath(GetParam());
  const CliRun r = RunCommand({"simulate", ExamplePath(), "--format", "json", "--trace",
                               trace_path.string(), "--trace-ranks", "0"});
  if (!fs::exists(Golden(".summary.json"))) {
    // Examples the simulator does not cover (expert parallelism) are refused, with a reason.
    EXPECT_EQ(r.code, kExitBadInput)
        << "`simulate` now accepts " << GetParam() << " but tests/golden has no " << GetParam()
        << ".summary.json; run scripts/refresh-goldens.sh";
    EXPECT_FALSE(r.err.empty());
    fs::remove(trace_path);
    return;
  }
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const std::string summary = CompareWithGolden(Golden(".summary.json"), r.out);
  EXPECT_TRUE(summary.empty()) << summary;

  std::string trace_text;
  ASSERT_TRUE(ReadFile(trace_path, &trace_text)) << "no trace written to " << trace_path;
  fs::remove(trace_path);
  if (fs::exists(Golden(".trace.json"))) {
    const std::string trace = CompareWithGolden(Golden(".trace.json"), trace_text);
    EXPECT_TRUE(trace.empty()) << trace;
  } else {
    const std::string digest =
        CompareWithGolden(Golden(".trace.digest.json"), TraceDigest(trace_text).dump());
    EXPECT_TRUE(digest.empty()) << digest;
  }
}

std::string ParamName(const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Examples, GoldenTest, testing::ValuesIn(ListExamples()), ParamName);

TEST(Golden, EveryGoldenFileBelongsToAShippedExample) {
  const std::vector<std::string> examples = ListExamples();
  ASSERT_FALSE(examples.empty()) << "no examples under " << ExamplesDir();
  const std::array<std::string, 4> suffixes = {".analyze.json", ".summary.json", ".trace.json",
                                               ".trace.digest.json"};
  for (const auto& entry : fs::directory_iterator(GoldenDir())) {
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() != ".json") continue;
    bool known = false;
    for (const std::string& example : examples) {
      for (const std::string& suffix : suffixes) known = known || file == example + suffix;
    }
    EXPECT_TRUE(known) << "tests/golden/" << file
                       << " names no shipped example; run scripts/refresh-goldens.sh";
  }
}

TEST(Golden, EveryTraceGoldenHasASummary) {
  for (const auto& entry : fs::directory_iterator(GoldenDir())) {
    const std::string file = entry.path().filename().string();
    for (const std::string suffix : {".trace.json", ".trace.digest.json"}) {
      if (file.size() > suffix.size() && file.ends_with(suffix)) {
        const std::string example = file.substr(0, file.size() - suffix.size());
        EXPECT_TRUE(fs::exists(GoldenDir() / (example + ".summary.json"))) << file;
      }
    }
  }
}

TEST(Golden, SimulateIsByteIdenticalAcrossRuns) {
  // Same input => the same bytes, summary and trace alike.
  const std::string example = (ExamplesDir() / "llama3-8b-fsdp.textproto").string();
  std::array<std::string, 2> summaries, traces;
  for (int i = 0; i < 2; ++i) {
    const fs::path trace_path = TracePath("repeat-" + std::to_string(i));
    const CliRun r =
        RunCommand({"simulate", example, "--format", "json", "--trace", trace_path.string()});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    summaries[i] = r.out;
    ASSERT_TRUE(ReadFile(trace_path, &traces[i]));
    fs::remove(trace_path);
  }
  EXPECT_EQ(summaries[0], summaries[1]);
  EXPECT_TRUE(traces[0] == traces[1]) << "the two traces differ";
}

TEST(Golden, Sha256MatchesTheStandardTestVectors) {
  // FIPS 180-4 examples: "" and "abc", and a two-block message.
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Golden, DiffNamesTheFirstDifferingPaths) {
  const json expected = {{"step_time_s", 1.5}, {"comm", {{"by_kind", {{"all-gather", 3}}}}}};
  const json actual = {{"step_time_s", 1.5 + 1e-12}, {"comm", {{"by_kind", {{"all-gather", 4}}}}}};
  std::vector<std::string> diffs;
  Diff(expected, actual, "$", 20, &diffs);
  // 1e-12 on 1.5 is within the relative 1e-9; the integer is not.
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0], "$.comm.by_kind[\"all-gather\"]: expected 3, got 4");
}

}  // namespace
}  // namespace placesim::sim
