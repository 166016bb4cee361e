// Helpers of the Chakra tests: hand-built traces, raw protobuf encoding (to write what
// placesim's writer never does: uint64 comm_size, unknown node types, corrupt records), the
// ASTRA-sim reference scenario and the shared ASTRA-sim inputs (../shared/interop/chakra).
#ifndef PLACESIM_TESTS_CHAKRA_CHAKRA_TEST_UTIL_H_
#define PLACESIM_TESTS_CHAKRA_CHAKRA_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim/chakra/trace.h"

namespace placesim::chakra::test {

inline std::string SourcePath(const std::string& rel) {
  return std::string(PLACESIM_SOURCE_DIR) + "/" + rel;
}

// The ASTRA-sim HGX reference cluster as a scenario (8 GPUs, one switch, 400 GB/s and
// 936.25 ns per link, 900 TFLOP/s and 3350 GB/s ideal roofline).
inline std::string AstraScenario() {
  return SourcePath("tests/data/chakra/astra-hgx-8gpu-gpt.textproto");
}

// ../shared/interop/chakra, or "" when this checkout has none. PLACESIM_SHARED_DIR, when set,
// names the shared folder instead (a git worktree sits elsewhere than the main checkout).
inline std::string SharedChakra() {
  const char* env = std::getenv("PLACESIM_SHARED_DIR");
  const std::filesystem::path shared =
      env != nullptr && *env != '\0' ? std::filesystem::path(env)
                                     : std::filesystem::path(PLACESIM_SOURCE_DIR) / ".." / "shared";
  const std::filesystem::path p = shared / "interop" / "chakra";
  return std::filesystem::exists(p) ? p.string() : std::string();
}

// Raw protobuf wire encoding.
inline void Varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
inline void VarintField(std::string& out, int field, uint64_t v) {
  Varint(out, static_cast<uint64_t>(field) << 3);
  Varint(out, v);
}
inline void BytesField(std::string& out, int field, const std::string& bytes) {
  Varint(out, (static_cast<uint64_t>(field) << 3) | 2);
  Varint(out, bytes.size());
  out += bytes;
}
// An AttributeProto with an integer in oneof field `value_field` (9 int64_val, 13 uint64_val).
inline std::string IntAttr(const std::string& name, int value_field, uint64_t v) {
  std::string a;
  BytesField(a, 1, name);
  VarintField(a, value_field, v);
  return a;
}
inline std::string StringAttr(const std::string& name, const std::string& v) {
  std::string a;
  BytesField(a, 1, name);
  BytesField(a, 29, v);
  return a;
}
// A length-delimited record.
inline std::string Record(const std::string& body) {
  std::string out;
  Varint(out, body.size());
  return out + body;
}
inline std::string Metadata() {
  std::string m;
  BytesField(m, 1, "0.0.4");
  return Record(m);
}

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A node of `type` with an id and deps, for hand-built workloads.
inline Node MakeNode(uint64_t id, NodeType type, std::vector<uint64_t> deps = {}) {
  Node n;
  n.id = id;
  // Built from one to_string rather than `"n" + std::to_string(id)`: GCC 12 warns
  // (-Wrestrict) on the inlined replace of that operator+, a false positive.
  n.name = std::to_string(id);
  n.name.insert(n.name.begin(), 'n');
  n.type = type;
  n.data_deps = std::move(deps);
  return n;
}

}  // namespace placesim::chakra::test

#endif  // PLACESIM_TESTS_CHAKRA_CHAKRA_TEST_UTIL_H_
