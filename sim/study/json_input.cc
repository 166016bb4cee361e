// Bounded JSON input (see json_input.h). The depth scan is a small state machine over the
// bytes (inside a string or not, after a backslash or not); it runs as the file is read so
// that neither a deep nor a huge file is read further than needed to refuse it.
#include "sim/study/json_input.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace placesim::study {
namespace {

using Json = nlohmann::ordered_json;

// Tracks the nesting depth of the JSON text fed to it, outside strings.
class DepthScanner {
 public:
  // Feeds `n` bytes; false at the first bracket beyond kMaxJsonDepth (see offset()).
  bool Feed(const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i, ++offset_) {
      const char c = data[i];
      if (in_string_) {
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
      } else if (c == '"') {
        in_string_ = true;
      } else if (c == '[' || c == '{') {
        if (++depth_ > kMaxJsonDepth) return false;
      } else if ((c == ']' || c == '}') && depth_ > 0) {
        --depth_;
      }
    }
    return true;
  }
  int64_t offset() const { return offset_; }

 private:
  bool in_string_ = false, escaped_ = false;
  int depth_ = 0;
  int64_t offset_ = 0;
};

std::string Shown(const Json& j) {
  std::string s = j.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

}  // namespace

StatusOr<Json> ReadJsonFile(const std::string& path) {
  // A directory opens as a stream and then throws on the first read.
  std::error_code probe;
  if (std::filesystem::is_directory(path, probe)) {
    return InvalidArgumentError(fmt::format("{}: is a directory, not a JSON file", path));
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFoundError(fmt::format("{}: cannot read the file", path));
  std::string text;
  DepthScanner scanner;
  char buffer[1 << 16];
  while (f.read(buffer, sizeof buffer) || f.gcount() > 0) {
    const auto n = static_cast<size_t>(f.gcount());
    if (static_cast<int64_t>(text.size() + n) > kMaxJsonBytes) {
      return InvalidArgumentError(fmt::format(
          "{}: larger than the limit of {} bytes for a JSON result", path, kMaxJsonBytes));
    }
    if (!scanner.Feed(buffer, n)) {
      return InvalidArgumentError(fmt::format(
          "{}: JSON nested deeper than {} levels (at byte {}); placesim's results nest at most 6",
          path, kMaxJsonDepth, scanner.offset()));
    }
    text.append(buffer, n);
  }
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    return InvalidArgumentError(fmt::format("{}: not valid JSON (at byte {})", path, e.byte));
  } catch (const Json::out_of_range& e) {
    // A number past a double's range ("1e400") is nlohmann's out_of_range 406, not a parse
    // error; its message quotes the number, which can be as long as the file.
    std::string reason = e.what();
    if (const size_t bracket = reason.find("] "); bracket != std::string::npos) {
      reason.erase(0, bracket + 2);
    }
    if (reason.size() > 120) reason = reason.substr(0, 117) + "...";
    return InvalidArgumentError(fmt::format("{}: not valid JSON: {}", path, reason));
  }
}

std::string JsonTypeName(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number_integer()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  return "an object";
}

std::string JsonFields::PathOf(std::string_view key) const {
  return fmt::format("{}.{}", path_, key);
}

void JsonFields::Fail(std::string_view key, const std::string& value, std::string_view rule) {
  errors_->AddLine(fmt::format("{}: {}: {}: {}", file_, PathOf(key), value, rule));
}

template <typename Pred>
bool JsonFields::Check(std::string_view key, bool required, const char* want, Pred ok) {
  const auto it = j_.find(std::string(key));
  if (it == j_.end()) {
    if (required) Fail(key, "missing", fmt::format("must be {}", want));
    return !required;
  }
  if (ok(*it)) return true;
  Fail(key, fmt::format("{} ({})", Shown(*it), JsonTypeName(*it)), fmt::format("must be {}", want));
  return false;
}

bool JsonFields::String(std::string_view key, bool required) {
  return Check(key, required, "a string", [](const Json& v) { return v.is_string(); });
}
bool JsonFields::Integer(std::string_view key, bool required) {
  return Check(key, required, "an integer", [](const Json& v) { return v.is_number_integer(); });
}
bool JsonFields::IntegerOrNull(std::string_view key, bool required) {
  return Check(key, required, "an integer or null",
               [](const Json& v) { return v.is_null() || v.is_number_integer(); });
}
bool JsonFields::Object(std::string_view key, bool required) {
  return Check(key, required, "an object", [](const Json& v) { return v.is_object(); });
}
bool JsonFields::Array(std::string_view key, bool required) {
  return Check(key, required, "an array", [](const Json& v) { return v.is_array(); });
}
bool JsonFields::Scalar(std::string_view key, bool required) {
  return Check(key, required, "null, a boolean, a number or a string",
               [](const Json& v) { return v.is_primitive(); });
}
bool JsonFields::Equals(std::string_view key, std::string_view expected) {
  return Check(key, true, fmt::format("\"{}\"", expected).c_str(),
               [&](const Json& v) { return v.is_string() && v.get<std::string>() == expected; });
}
bool JsonFields::Equals(std::string_view key, int64_t expected) {
  return Check(key, true, fmt::format("{}", expected).c_str(), [&](const Json& v) {
    return v.is_number_integer() && v.get<int64_t>() == expected;
  });
}

}  // namespace placesim::study
