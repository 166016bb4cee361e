// Reading JSON that a user hands to `compare` and `merge`: the size and nesting limits that
// keep a hostile file from costing unbounded time, memory or stack, and typed access to its
// fields whose errors name the JSON path ("$.points[3].status").
//
// Limits (README "Resource limits"): at most kMaxJsonBytes bytes and kMaxJsonDepth levels of
// nested arrays and objects. The depth is checked while the bytes are read, before any parse,
// so a file nested a million deep is refused after reading kMaxJsonDepth + 1 brackets and the
// recursive walks over a parsed document (compare's flattening) never go deeper.
//
// Thread-safety: the functions are reentrant.
#ifndef PLACESIM_SIM_STUDY_JSON_INPUT_H_
#define PLACESIM_SIM_STUDY_JSON_INPUT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/errors.h"
#include "base/status.h"

namespace placesim::study {

// The results placesim writes nest at most 6 levels; Google Benchmark's JSON, 3.
inline constexpr int kMaxJsonDepth = 64;
// Parsed, a document takes about ten times its text: 256 MiB holds a sweep of about 200,000
// simulated points with economics (about 1.3 KB each) in about 2.5 GB of memory.
inline constexpr int64_t kMaxJsonBytes = int64_t{256} << 20;  // 256 MiB

// Reads and parses `path`. Errors (each message starting with the path): kNotFound when it
// cannot be opened; kInvalidArgument for a directory, a file over kMaxJsonBytes, nesting
// deeper than kMaxJsonDepth (with the byte offset), or text that is not JSON (with the
// parser's position). Complexity: O(bytes); the parse is iterative, so no depth costs stack.
StatusOr<nlohmann::ordered_json> ReadJsonFile(const std::string& path);

// The JSON type of `j` as a user reads it: "a string", "an integer", "a number", "an object".
std::string JsonTypeName(const nlohmann::ordered_json& j);

// Typed fields of one object at `path` ("$", "$.points[3]"). Each check that fails adds
// "FILE: PATH.KEY: VALUE: must be TYPE" to `errors` and returns false.
class JsonFields {
 public:
  JsonFields(const nlohmann::ordered_json& object, std::string file, std::string path,
             ErrorList* errors)
      : j_(object), file_(std::move(file)), path_(std::move(path)), errors_(errors) {}

  bool String(std::string_view key, bool required = true);
  bool Integer(std::string_view key, bool required = true);
  bool IntegerOrNull(std::string_view key, bool required = true);
  bool Object(std::string_view key, bool required = true);
  bool Array(std::string_view key, bool required = true);
  // null, a boolean, a number or a string: what a table cell can show.
  bool Scalar(std::string_view key, bool required = true);
  // The string value `expected` (a document kind).
  bool Equals(std::string_view key, std::string_view expected);
  // The integer value `expected` (a format version).
  bool Equals(std::string_view key, int64_t expected);

  std::string PathOf(std::string_view key) const;

 private:
  template <typename Pred>
  bool Check(std::string_view key, bool required, const char* want, Pred ok);
  void Fail(std::string_view key, const std::string& value, std::string_view rule);

  const nlohmann::ordered_json& j_;
  std::string file_, path_;
  ErrorList* errors_;
};

}  // namespace placesim::study

#endif  // PLACESIM_SIM_STUDY_JSON_INPUT_H_
