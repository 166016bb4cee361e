// Scenario parsing. The text format goes through Protobuf's TextFormat parser with an error
// collector (so nothing is logged and every error has a line and column). JSON is first
// parsed by nlohmann::json, which gives syntax errors a position, then checked against the
// schema by a walk that reports every unknown field and wrong type at once, and finally
// converted by Protobuf's own JSON parser. The walk follows the schema, so its depth is
// bounded by the schema's, whatever the input's nesting.
#include "sim/scenario/internal/parse.h"

#include <fmt/format.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>
#include <vector>

#include "base/errors.h"
#include "base/suggest.h"
#include "sim/scenario/internal/overrides.h"

namespace placesim::sim::scenario_internal {
namespace {

namespace pb = ::placesim::scenario::proto;
using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using Json = nlohmann::json;

constexpr std::string_view kBom = "\xEF\xBB\xBF";

std::string_view StripBom(std::string_view text) {
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
  return text;
}

bool IsBlank(std::string_view text) {
  for (char c : text) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return false;
  }
  return true;
}

// Where a message type sits in the schema, e.g. Device -> "cluster.node.gpu"; the type name
// when it appears in several places.
std::string TypeLocation(const Descriptor* target) {
  std::vector<std::string> found;
  // Depth-first over the (acyclic, small) schema from the root.
  struct Frame {
    const Descriptor* type;
    std::string path;
  };
  std::vector<Frame> stack = {{pb::Scenario::descriptor(), ""}};
  while (!stack.empty() && found.size() < 2) {
    Frame f = stack.back();
    stack.pop_back();
    if (f.type == target) {
      found.push_back(f.path.empty() ? "the scenario" : f.path);
      continue;
    }
    if (f.path.size() > 200) continue;  // guards against a recursive schema
    for (int i = 0; i < f.type->field_count(); ++i) {
      const FieldDescriptor* field = f.type->field(i);
      if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
      std::string p = f.path.empty() ? field->name() : f.path + "." + field->name();
      if (field->is_repeated()) p += "[]";
      stack.push_back({field->message_type(), p});
    }
  }
  return found.size() == 1 ? found[0] : target->name();
}

// Adds the valid names to Protobuf's terse text-format messages.
std::string ExplainTextError(const std::string& message) {
  static constexpr std::string_view kNoField = "Message type \"";
  static constexpr std::string_view kNamed = "\" has no field named \"";
  if (message.rfind(kNoField, 0) == 0) {
    size_t mid = message.find(kNamed);
    if (mid != std::string::npos) {
      std::string type_name = message.substr(kNoField.size(), mid - kNoField.size());
      size_t name_start = mid + kNamed.size();
      size_t name_end = message.find('"', name_start);
      std::string field = message.substr(name_start, name_end - name_start);
      const Descriptor* type =
          google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type_name);
      if (type != nullptr && name_end != std::string::npos) {
        return fmt::format("unknown field \"{}\" in {}; valid: {}{}", field, TypeLocation(type),
                           FieldNames(type), DidYouMean(field, FieldNameList(type)));
      }
    }
    return message;
  }
  static constexpr std::string_view kEnum = "Unknown enumeration value of \"";
  static constexpr std::string_view kForField = "\" for field \"";
  if (message.rfind(kEnum, 0) == 0) {
    size_t mid = message.find(kForField);
    if (mid == std::string::npos) return message;
    size_t name_start = mid + kForField.size();
    size_t name_end = message.find('"', name_start);
    if (name_end == std::string::npos) return message;
    std::string field = message.substr(name_start, name_end - name_start);
    // Every enum field of that name in the schema (e.g. `kind` is in Fabric, Vertex and Link).
    const google::protobuf::FileDescriptor* file = pb::Scenario::descriptor()->file();
    std::vector<std::pair<std::string, std::string>> options;  // (message, valid names)
    for (int m = 0; m < file->message_type_count(); ++m) {
      const FieldDescriptor* f = file->message_type(m)->FindFieldByName(field);
      if (f == nullptr || f->cpp_type() != FieldDescriptor::CPPTYPE_ENUM) continue;
      options.emplace_back(file->message_type(m)->name(), EnumNames(f->enum_type(), false));
    }
    if (options.empty()) return message;
    std::string joined;
    for (size_t i = 0; i < options.size(); ++i) {
      if (i) joined += "; ";
      joined += options[i].second;
      if (options.size() > 1) joined += fmt::format(" (in {})", options[i].first);
    }
    return fmt::format("{}; valid: {}", message.substr(0, message.size() - 1), joined);
  }
  return message;
}

// 1-based line and column of the byte at 0-based `offset`.
std::pair<int64_t, int64_t> LineColumn(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  int64_t line = 1, column = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

// The quoted name in `message` after `marker`, e.g. `nodez` in `... field named "nodez".`.
std::string QuotedAfter(const std::string& message, std::string_view marker) {
  size_t start = message.find(marker);
  if (start == std::string::npos) return "";
  start += marker.size();
  size_t end = message.find('"', start);
  return end == std::string::npos ? "" : message.substr(start, end - start);
}

// The field path ("model.layers") whose value starts at the text format's byte `offset`:
// the blocks opened before it and the field name before the ':' it follows. Protobuf's own
// messages give only a line and column. "" unless `offset` is where a value is due (a
// truncated file or a stray token has no field to name). Strings and # comments are skipped.
std::string FieldPathAt(std::string_view text, size_t offset) {
  std::vector<std::string> blocks;
  std::string ident, field;
  bool value_due = false;  // after "name:", before its value
  auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    const char c = text[i];
    if (c == '#') {
      while (i + 1 < offset && text[i + 1] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      for (++i; i < offset && text[i] != c; ++i) {
        if (text[i] == '\\') ++i;
      }
      value_due = false;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = i;
      while (end < text.size() && is_ident(text[end])) ++end;
      ident.assign(text.substr(i, end - i));
      i = end - 1;
      value_due = false;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.') {
      while (i + 1 < offset && (is_ident(text[i + 1]) || text[i + 1] == '.')) ++i;
      value_due = false;
    } else if (c == ':') {
      field = ident;
      value_due = true;
    } else if (c == '{' || c == '<') {
      blocks.push_back(ident);
      value_due = false;
    } else if ((c == '}' || c == '>') && !blocks.empty()) {
      blocks.pop_back();
      value_due = false;
    }
  }
  if (!value_due || field.empty()) return "";
  std::string path;
  for (const std::string& b : blocks) path += b + ".";
  return path + field;
}

class TextErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  TextErrorCollector(std::string_view name, std::string_view text) : name_(name), text_(text) {}

  void AddError(int line, int column, const std::string& message) override {
    // Protobuf reports the token after an unknown name or enum value; point at the name.
    std::string culprit = QuotedAfter(message, "has no field named \"");
    if (culprit.empty()) culprit = QuotedAfter(message, "Unknown enumeration value of \"");
    size_t offset = Offset(line, column);
    if (!culprit.empty()) {
      size_t at = text_.substr(0, offset).rfind(culprit);
      if (at != std::string_view::npos && offset - at < 4096) offset = at;
    }
    auto [l, c] = LineColumn(text_, offset);
    std::string explained = ExplainTextError(message);
    if (explained.ends_with(", got: ")) {
      explained += "end of input (is a closing '}' missing?)";
    }
    if (explained.size() > 400) explained = explained.substr(0, 397) + "...";
    // A value of the wrong type or range names its field; an unknown name names itself.
    const std::string path = culprit.empty() ? FieldPathAt(text_, offset) : "";
    errors_.AddLine(path.empty() ? fmt::format("{}:{}:{}: {}", name_, l, c, explained)
                                 : fmt::format("{}:{}:{}: {}: {}", name_, l, c, path, explained));
  }
  void AddWarning(int line, int column, const std::string& message) override {}
  const ErrorList& errors() const { return errors_; }

 private:
  // Byte offset of a 0-based (line, column); protobuf counts a tab as advancing the column
  // to the next multiple of 8, so columns are walked the same way.
  size_t Offset(int line, int column) const {
    size_t i = 0;
    for (int l = 0; l < line && i < text_.size(); ++i) {
      if (text_[i] == '\n') ++l;
    }
    for (int c = 0; c < column && i < text_.size() && text_[i] != '\n'; ++i) {
      c = text_[i] == '\t' ? (c + 8) / 8 * 8 : c + 1;
    }
    return i;
  }

  std::string name_;
  std::string_view text_;
  ErrorList errors_;
};

Status ParseText(std::string_view text, std::string_view name, pb::Scenario* out) {
  TextErrorCollector collector(name, text);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  // A shallow schema never needs deep nesting; a hostile file's nesting is cut short.
  parser.SetRecursionLimit(32);
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  bool ok = parser.Parse(&input, out);
  if (ok && collector.errors().empty()) return OkStatus();
  if (collector.errors().empty()) {
    return InvalidArgumentError(fmt::format("{}: not a valid scenario in text format", name));
  }
  return collector.errors().ToStatus();
}

std::string ShowJson(const Json& v) {
  if (v.is_structured()) return std::string(v.type_name());
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string JoinPath(const std::string& path, std::string_view field) {
  return path.empty() ? std::string(field) : path + "." + std::string(field);
}

bool IsJsonNumberString(const std::string& s) {
  if (s == "NaN" || s == "Infinity" || s == "-Infinity") return true;
  double v = 0;
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(begin, end, v);
  return !s.empty() && ec == std::errc() && ptr == end;
}

class JsonSchemaWalker {
 public:
  explicit JsonSchemaWalker(ErrorList* errors) : errors_(errors) {}

  void WalkMessage(const Json& object, const Descriptor* type, const std::string& path) {
    for (const auto& [key, value] : object.items()) {
      const FieldDescriptor* field = type->FindFieldByName(key);
      for (int i = 0; field == nullptr && i < type->field_count(); ++i) {
        if (type->field(i)->json_name() == key) field = type->field(i);
      }
      std::string here = JoinPath(path, key);
      if (field == nullptr) {
        errors_->AddLine(fmt::format("{}: unknown field \"{}\" in {}; valid: {}{}", here, key,
                                     path.empty() ? "the scenario" : path, FieldNames(type),
                                     DidYouMean(key, FieldNameList(type))));
        continue;
      }
      here = JoinPath(path, field->name());
      if (value.is_null()) continue;  // JSON null means "unset"
      if (field->is_repeated()) {
        if (!value.is_array()) {
          errors_->Add(here, ShowJson(value), "must be a list [...]");
          continue;
        }
        for (size_t i = 0; i < value.size(); ++i) {
          CheckValue(value[i], field, fmt::format("{}[{}]", here, i));
        }
      } else {
        CheckValue(value, field, here);
      }
    }
  }

 private:
  void CheckValue(const Json& v, const FieldDescriptor* field, const std::string& path) {
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_MESSAGE:
        if (!v.is_object()) {
          errors_->Add(path, ShowJson(v), "must be an object {...}");
        } else {
          WalkMessage(v, field->message_type(), path);
        }
        return;
      case FieldDescriptor::CPPTYPE_ENUM: {
        const EnumDescriptor* e = field->enum_type();
        bool ok = (v.is_string() && e->FindValueByName(v.get<std::string>()) != nullptr) ||
                  (v.is_number_integer() && v.get<int64_t>() >= std::numeric_limits<int>::min() &&
                   v.get<int64_t>() <= std::numeric_limits<int>::max() &&
                   e->FindValueByNumber(static_cast<int>(v.get<int64_t>())) != nullptr);
        if (!ok) errors_->Add(path, ShowJson(v), "unknown value; valid: " + EnumNames(e, false));
        return;
      }
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT32:
      case FieldDescriptor::CPPTYPE_UINT64:
        CheckInteger(v, field, path);
        return;
      case FieldDescriptor::CPPTYPE_DOUBLE:
      case FieldDescriptor::CPPTYPE_FLOAT:
        // The JSON mapping also allows a number in a string; NaN and infinities are refused
        // later by range checks.
        if (!v.is_number() && !(v.is_string() && IsJsonNumberString(v.get<std::string>()))) {
          errors_->Add(path, ShowJson(v), "must be a number");
        }
        return;
      case FieldDescriptor::CPPTYPE_BOOL:
        if (!v.is_boolean()) errors_->Add(path, ShowJson(v), "must be true or false");
        return;
      case FieldDescriptor::CPPTYPE_STRING:
        if (!v.is_string()) {
          errors_->Add(path, ShowJson(v),
                       "must be a string (quantities carry their unit, e.g. \"450 GB/s\")");
        }
        return;
    }
  }

  void CheckInteger(const Json& v, const FieldDescriptor* field, const std::string& path) {
    double lo = 0, hi = 0;
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        lo = std::numeric_limits<int32_t>::min();
        hi = std::numeric_limits<int32_t>::max();
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        hi = std::numeric_limits<uint32_t>::max();
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        lo = -9223372036854775808.0;
        hi = 9223372036854775807.0;
        break;
      default:
        hi = 18446744073709551615.0;
        break;
    }
    std::string rule = "must be " + IntegerRange(field);
    bool in_range = false;
    if (v.is_number_integer() && !v.is_number_unsigned()) {
      int64_t x = v.get<int64_t>();
      in_range = static_cast<double>(x) >= lo && static_cast<double>(x) <= hi;
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_INT64) in_range = true;
    } else if (v.is_number_unsigned()) {
      uint64_t x = v.get<uint64_t>();
      in_range = field->cpp_type() == FieldDescriptor::CPPTYPE_UINT64 ||
                 (field->cpp_type() == FieldDescriptor::CPPTYPE_INT64
                      ? x <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                      : static_cast<double>(x) <= hi);
    } else if (v.is_number_float()) {
      double x = v.get<double>();
      // Protobuf reads 3.0 as 3 but refuses 3.5; beyond 2^53 a double is no exact integer.
      if (!std::isfinite(x) || x != std::floor(x)) {
        errors_->Add(path, ShowJson(v), rule);
        return;
      }
      in_range = x >= lo && x < hi && std::fabs(x) <= 9007199254740992.0;
    } else if (v.is_string()) {
      // The JSON mapping allows quoted integers (int64 values beyond 2^53 need them).
      const std::string& s = v.get_ref<const std::string&>();
      std::string_view digits = s;
      if (!digits.empty() && digits.front() == '-') digits.remove_prefix(1);
      bool all_digits = !digits.empty() && digits.size() <= 20;
      for (char c : digits) all_digits = all_digits && c >= '0' && c <= '9';
      if (all_digits) {
        long double x = std::strtold(s.c_str(), nullptr);
        in_range = x >= lo && x <= hi;
        if (field->cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
          in_range = x >= -9223372036854775808.0L && x <= 9223372036854775807.0L;
        }
      }
    }
    if (!in_range) errors_->Add(path, ShowJson(v), rule);
  }

  ErrorList* errors_;
};

Status ParseJson(std::string_view text, std::string_view name, pb::Scenario* out) {
  Json doc;
  try {
    doc = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    // nlohmann reports the byte it stopped at (1-based); the message after its own
    // "...: " prefix is the reason.
    size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    auto [line, column] = LineColumn(text, offset);
    std::string reason = e.what();
    size_t colon = reason.find(": ");
    if (colon != std::string::npos) reason = reason.substr(colon + 2);
    return InvalidArgumentError(
        fmt::format("{}:{}:{}: JSON syntax error: {}", name, line, column, reason));
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("{}: not valid JSON: {}", name, e.what()));
  }
  if (!doc.is_object()) {
    return InvalidArgumentError(fmt::format(
        "{}:1:1: a JSON scenario must be an object {{...}}, not {}", name, doc.type_name()));
  }
  ErrorList errors;
  JsonSchemaWalker walker(&errors);
  walker.WalkMessage(doc, pb::Scenario::descriptor(), "");
  if (!errors.empty()) {
    ErrorList framed;
    for (const std::string& line : errors.lines()) {
      framed.AddLine(fmt::format("{}: {}", name, line));
    }
    return framed.ToStatus();
  }

  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(text.data(), text.size()), out, options);
  if (!status.ok()) {
    // Protobuf's messages look like "(cluster.nodes): invalid value ..." and carry no
    // position; the field path stands in for it.
    std::string message(status.message());
    if (!message.empty() && message.front() == '(') {
      size_t close = message.find(')');
      if (close != std::string::npos) {
        std::string rest = message.substr(close + 1);
        if (!rest.empty() && rest.front() == ':') rest = rest.substr(1);
        while (!rest.empty() && rest.front() == ' ') rest = rest.substr(1);
        message = message.substr(1, close - 1) + ": " + rest;
      }
    }
    return InvalidArgumentError(
        fmt::format("{}: {} (protobuf's JSON parser gives a field path, not a line and column)",
                    name, message));
  }
  return OkStatus();
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

ScenarioFormat FormatForPath(std::string_view path) {
  size_t dot = path.rfind('.');
  size_t slash = path.rfind('/');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) {
    return ScenarioFormat::kAuto;
  }
  std::string ext = Lower(path.substr(dot + 1));
  if (ext == "json") return ScenarioFormat::kJson;
  if (ext == "textproto" || ext == "txtpb" || ext == "pbtxt" || ext == "textpb" || ext == "txt") {
    return ScenarioFormat::kTextProto;
  }
  return ScenarioFormat::kAuto;
}

Status ParseScenario(std::string_view text, ScenarioFormat format, std::string_view name,
                     pb::Scenario* out) {
  out->Clear();
  if (static_cast<int64_t>(text.size()) > kMaxScenarioBytes) {
    return InvalidArgumentError(
        fmt::format("{}: the scenario is {:.1f} MiB; scenario files are limited to {} MiB", name,
                    static_cast<double>(text.size()) / (1 << 20), kMaxScenarioBytes >> 20));
  }
  text = StripBom(text);
  if (IsBlank(text)) {
    return InvalidArgumentError(fmt::format(
        "{}: the scenario is empty; it needs at least a cluster, a model and a strategy", name));
  }
  if (format == ScenarioFormat::kAuto) {
    size_t first = text.find_first_not_of(" \t\r\n");
    format = text[first] == '{' ? ScenarioFormat::kJson : ScenarioFormat::kTextProto;
  }
  Status status =
      format == ScenarioFormat::kJson ? ParseJson(text, name, out) : ParseText(text, name, out);
  if (!status.ok()) out->Clear();
  return status;
}

StatusOr<std::string> ReadScenarioFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return NotFoundError(fmt::format("{}: is a directory, not a scenario file", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    return NotFoundError(fmt::format("{}: cannot open the scenario file: {}", path,
                                     std::generic_category().message(err)));
  }
  std::string data;
  char buffer[1 << 16];
  while (in) {
    in.read(buffer, sizeof(buffer));
    data.append(buffer, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(data.size()) > kMaxScenarioBytes) {
      return InvalidArgumentError(
          fmt::format("{}: the file is larger than {} MiB, the limit for scenario files", path,
                      kMaxScenarioBytes >> 20));
    }
  }
  if (in.bad()) {
    return NotFoundError(fmt::format("{}: cannot read the scenario file", path));
  }
  return data;
}

}  // namespace placesim::sim::scenario_internal
