// Reflection-based field overrides. Each override is checked completely (path, index, value)
// against a const view of the message before anything is written, so a failed override
// leaves the message exactly as it was.
#include "sim/scenario/internal/overrides.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <variant>
#include <vector>

#include "base/errors.h"
#include "base/suggest.h"
#include "sim/collectives/registry.h"
#include "sim/network/network_model.h"
#include "sim/scenario/proto/scenario.pb.h"

namespace placesim::sim::scenario_internal {
namespace {

namespace pb = ::placesim::scenario::proto;

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

struct Segment {
  std::string_view name;
  bool indexed = false;
  int index = 0;
};

struct Step {
  const FieldDescriptor* field = nullptr;
  bool indexed = false;
  int index = 0;
};

// The enums whose values name registered plug-ins answer a name they lack in their registry's
// words, as the scenario's resolution does (`unknown collective algorithm "foo"; valid: auto,
// ring, ...`), so a file and --set say the same. OK for other enums, and for a name the
// registry knows (the caller then reports the enum's own list).
Status UnknownPluginName(const EnumDescriptor* type, std::string_view name) {
  if (type == pb::CollectiveAlgorithm_descriptor()) {
    return collectives::BuiltinRegistry().Select(name).status();
  }
  if (type == pb::NetworkModel_descriptor()) return BuiltinNetworkModels().Lookup(name).status();
  return OkStatus();
}

// A value parsed for one field, ready to be written.
using ScalarValue = std::variant<int32_t, int64_t, uint32_t, uint64_t, double, float, bool,
                                 std::string, const EnumValueDescriptor*>;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string_view StripQuotes(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) {
    return s.substr(1, s.size() - 2);
  }
  return s;
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// Splits a path into segments; fails on empty segments, bad names or bad indices.
Status SplitPath(std::string_view path, std::vector<Segment>* out) {
  if (path.empty()) {
    return InvalidArgumentError(
        "empty field path: an override is FIELD.PATH=VALUE, e.g. cluster.nodes=32");
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    if (dot == std::string_view::npos) dot = path.size();
    std::string_view text = path.substr(start, dot - start);
    Segment seg;
    size_t bracket = text.find('[');
    seg.name = text.substr(0, bracket);
    if (bracket != std::string_view::npos) {
      std::string_view idx = text.substr(bracket + 1);
      if (idx.empty() || idx.back() != ']') {
        return InvalidArgumentError(
            fmt::format("{}: bad index in \"{}\": write name[INDEX], e.g. links[0]", path, text));
      }
      idx.remove_suffix(1);
      int v = 0;
      auto [ptr, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), v);
      if (idx.empty() || ec != std::errc() || ptr != idx.data() + idx.size() || v < 0) {
        return InvalidArgumentError(
            fmt::format("{}: bad index \"{}\": must be a non-negative integer", path, idx));
      }
      seg.indexed = true;
      seg.index = v;
    }
    if (!IsIdentifier(seg.name)) {
      return InvalidArgumentError(
          fmt::format("{}: \"{}\" is not a field name: a path is dotted field names, e.g. "
                      "cluster.node.gpus or cluster.links[0].bandwidth",
                      path, text));
    }
    out->push_back(seg);
    start = dot + 1;
  }
  return OkStatus();
}

// The path up to and including segment `n` (for messages), "the scenario" for the root.
std::string Where(const std::vector<Segment>& segs, size_t n) {
  if (n == 0) return "the scenario";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    if (i) out += '.';
    out += segs[i].name;
    if (segs[i].indexed) out += fmt::format("[{}]", segs[i].index);
  }
  return out;
}

const FieldDescriptor* FindField(const Descriptor* type, std::string_view name) {
  std::string n(name);
  const FieldDescriptor* f = type->FindFieldByName(n);
  if (f == nullptr) f = type->FindFieldByCamelcaseName(n);
  return f;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

// The enum's value prefix, e.g. "RECOMPUTE_" (from its ..._UNSPECIFIED value).
std::string EnumPrefix(const EnumDescriptor* type) {
  static constexpr std::string_view kUnspecified = "UNSPECIFIED";
  if (type->value_count() == 0) return "";
  const std::string& first = type->value(0)->name();
  if (first.size() >= kUnspecified.size() &&
      first.compare(first.size() - kUnspecified.size(), kUnspecified.size(), kUnspecified) == 0) {
    return first.substr(0, first.size() - kUnspecified.size());
  }
  return "";
}

bool IsUnspecified(const EnumValueDescriptor* v) { return v->number() == 0; }

template <typename T>
Status ParseInteger(const FieldDescriptor* field, std::string_view path, std::string_view text,
                    T* out) {
  int64_t wide = 0;
  uint64_t uwide = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (!text.empty() && text.front() == '+') ++begin;
  bool is_signed = std::numeric_limits<T>::is_signed;
  std::from_chars_result r{};
  if (is_signed) {
    r = std::from_chars(begin, end, wide);
  } else {
    r = std::from_chars(begin, end, uwide);
  }
  bool digits_only = begin != end && r.ptr == end;
  if (!digits_only && r.ec != std::errc::result_out_of_range) {
    return InvalidArgumentError(fmt::format("{}: \"{}\": must be {} written in decimal digits",
                                            path, text, IntegerRange(field)));
  }
  bool in_range = r.ec == std::errc() &&
                  (is_signed ? (wide >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                                wide <= static_cast<int64_t>(std::numeric_limits<T>::max()))
                             : uwide <= static_cast<uint64_t>(std::numeric_limits<T>::max()));
  if (!in_range) {
    return InvalidArgumentError(
        fmt::format("{}: {}: out of range: must be {}", path, text, IntegerRange(field)));
  }
  *out = is_signed ? static_cast<T>(wide) : static_cast<T>(uwide);
  return OkStatus();
}

Status ParseValue(const FieldDescriptor* field, std::string_view path, std::string_view raw,
                  ScalarValue* out) {
  std::string_view text = StripQuotes(Trim(raw));
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      int32_t v = 0;
      RETURN_IF_ERROR(ParseInteger(field, path, text, &v));
      *out = v;
      return OkStatus();
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t v = 0;
      RETURN_IF_ERROR(ParseInteger(field, path, text, &v));
      *out = v;
      return OkStatus();
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      uint32_t v = 0;
      RETURN_IF_ERROR(ParseInteger(field, path, text, &v));
      *out = v;
      return OkStatus();
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v = 0;
      RETURN_IF_ERROR(ParseInteger(field, path, text, &v));
      *out = v;
      return OkStatus();
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      double v = 0;
      const char* begin = text.data();
      const char* end = text.data() + text.size();
      if (!text.empty() && text.front() == '+') ++begin;
      auto [ptr, ec] = std::from_chars(begin, end, v);
      if (begin == end || ec != std::errc() || ptr != end || !std::isfinite(v) ||
          (field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT &&
           std::fabs(v) > std::numeric_limits<float>::max())) {
        return InvalidArgumentError(
            fmt::format("{}: \"{}\": must be a finite decimal number, e.g. 0.5", path, text));
      }
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
        *out = static_cast<float>(v);
      } else {
        *out = v;
      }
      return OkStatus();
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      std::string u = Upper(text);
      if (u == "TRUE") {
        *out = true;
      } else if (u == "FALSE") {
        *out = false;
      } else {
        return InvalidArgumentError(fmt::format("{}: \"{}\": must be true or false", path, text));
      }
      return OkStatus();
    }
    case FieldDescriptor::CPPTYPE_STRING:
      *out = std::string(text);
      return OkStatus();
    case FieldDescriptor::CPPTYPE_ENUM: {
      const EnumValueDescriptor* v = FindEnumValue(field->enum_type(), text);
      if (v == nullptr) {
        if (Status unknown = UnknownPluginName(field->enum_type(), text); !unknown.ok()) {
          return InvalidArgumentError(fmt::format("{}: {}", path, unknown.message()));
        }
        return InvalidArgumentError(fmt::format("{}: \"{}\": unknown value; valid: {}", path, text,
                                                EnumNames(field->enum_type(), true)));
      }
      *out = v;
      return OkStatus();
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return InternalError(fmt::format("{}: unsupported field type", path));
}

void SetValue(Message* msg, const FieldDescriptor* field, int index, const ScalarValue& value) {
  const Reflection* r = msg->GetReflection();
  bool rep = field->is_repeated();
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int32_t>) {
          rep ? r->SetRepeatedInt32(msg, field, index, v) : r->SetInt32(msg, field, v);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          rep ? r->SetRepeatedInt64(msg, field, index, v) : r->SetInt64(msg, field, v);
        } else if constexpr (std::is_same_v<T, uint32_t>) {
          rep ? r->SetRepeatedUInt32(msg, field, index, v) : r->SetUInt32(msg, field, v);
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          rep ? r->SetRepeatedUInt64(msg, field, index, v) : r->SetUInt64(msg, field, v);
        } else if constexpr (std::is_same_v<T, double>) {
          rep ? r->SetRepeatedDouble(msg, field, index, v) : r->SetDouble(msg, field, v);
        } else if constexpr (std::is_same_v<T, float>) {
          rep ? r->SetRepeatedFloat(msg, field, index, v) : r->SetFloat(msg, field, v);
        } else if constexpr (std::is_same_v<T, bool>) {
          rep ? r->SetRepeatedBool(msg, field, index, v) : r->SetBool(msg, field, v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          rep ? r->SetRepeatedString(msg, field, index, v) : r->SetString(msg, field, v);
        } else {
          rep ? r->SetRepeatedEnum(msg, field, index, v) : r->SetEnum(msg, field, v);
        }
      },
      value);
}

}  // namespace

std::vector<std::string> FieldNameList(const Descriptor* type) {
  std::vector<std::string> names;
  for (int i = 0; i < type->field_count(); ++i) names.push_back(type->field(i)->name());
  return names;
}

std::string FieldNames(const Descriptor* type) { return JoinNames(FieldNameList(type)); }

std::string ShortEnumName(const EnumValueDescriptor* value) {
  std::string prefix = EnumPrefix(value->type());
  std::string name = value->name();
  if (!prefix.empty() && name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string EnumNames(const EnumDescriptor* type, bool short_names) {
  std::string out;
  for (int i = 0; i < type->value_count(); ++i) {
    const EnumValueDescriptor* v = type->value(i);
    if (IsUnspecified(v)) continue;
    if (!out.empty()) out += ", ";
    out += short_names ? ShortEnumName(v) : v->name();
  }
  return out;
}

const EnumValueDescriptor* FindEnumValue(const EnumDescriptor* type, std::string_view name) {
  std::string u = Upper(name);
  if (u.empty()) return nullptr;
  std::string prefixed = EnumPrefix(type) + u;
  for (int i = 0; i < type->value_count(); ++i) {
    const EnumValueDescriptor* v = type->value(i);
    if (IsUnspecified(v)) continue;
    if (v->name() == u || v->name() == prefixed) return v;
  }
  return nullptr;
}

std::string IntegerRange(const FieldDescriptor* field) {
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return fmt::format("an integer from {} to {}", std::numeric_limits<int32_t>::min(),
                         std::numeric_limits<int32_t>::max());
    case FieldDescriptor::CPPTYPE_INT64:
      return fmt::format("an integer from {} to {}", std::numeric_limits<int64_t>::min(),
                         std::numeric_limits<int64_t>::max());
    case FieldDescriptor::CPPTYPE_UINT32:
      return fmt::format("an integer from 0 to {}", std::numeric_limits<uint32_t>::max());
    case FieldDescriptor::CPPTYPE_UINT64:
      return fmt::format("an integer from 0 to {}", std::numeric_limits<uint64_t>::max());
    default:
      return "an integer";
  }
}

Status ApplyOverride(Message* root, std::string_view path_in, std::string_view value) {
  std::string_view path = Trim(path_in);
  std::vector<Segment> segs;
  RETURN_IF_ERROR(SplitPath(path, &segs));

  // Pass 1: resolve the path against a const view; nothing is written.
  std::vector<Step> steps;
  const Message* view = root;
  for (size_t i = 0; i < segs.size(); ++i) {
    const Segment& seg = segs[i];
    const Descriptor* type = view->GetDescriptor();
    const FieldDescriptor* field = FindField(type, seg.name);
    if (field == nullptr) {
      return InvalidArgumentError(fmt::format("{}: unknown field \"{}\" in {}; valid: {}{}", path,
                                              seg.name, Where(segs, i), FieldNames(type),
                                              DidYouMean(seg.name, FieldNameList(type))));
    }
    const std::string here = Where(segs, i + 1);
    if (field->is_repeated() && !seg.indexed) {
      return InvalidArgumentError(
          fmt::format("{}: {} is a list: index one element, e.g. {}[0]", path, here, seg.name));
    }
    if (!field->is_repeated() && seg.indexed) {
      return InvalidArgumentError(
          fmt::format("{}: {} is not a list and takes no index", path, seg.name));
    }
    const Reflection* refl = view->GetReflection();
    if (seg.indexed) {
      int size = refl->FieldSize(*view, field);
      if (seg.index >= size) {
        return InvalidArgumentError(
            fmt::format("{}: index {} is out of range: {}.{} has {} element{}{}", path, seg.index,
                        Where(segs, i), seg.name, size, size == 1 ? "" : "s",
                        size > 0 ? fmt::format(" (indices 0 to {})", size - 1) : ""));
      }
    }
    bool last = i + 1 == segs.size();
    bool is_message = field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (last && is_message) {
      return InvalidArgumentError(
          fmt::format("{}: {} is a message, not a scalar; set one of its fields: {}", path, here,
                      FieldNames(field->message_type())));
    }
    if (!last && !is_message) {
      return InvalidArgumentError(
          fmt::format("{}: {} is a scalar and has no field \"{}\"", path, here, segs[i + 1].name));
    }
    steps.push_back(Step{field, seg.indexed, seg.index});
    if (!last) {
      view = seg.indexed ? &refl->GetRepeatedMessage(*view, field, seg.index)
                         : &refl->GetMessage(*view, field);
    }
  }
  ScalarValue parsed;
  RETURN_IF_ERROR(ParseValue(steps.back().field, path, value, &parsed));

  // Pass 2: write, creating sub-messages on demand.
  Message* msg = root;
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    const Reflection* refl = msg->GetReflection();
    msg = steps[i].indexed ? refl->MutableRepeatedMessage(msg, steps[i].field, steps[i].index)
                           : refl->MutableMessage(msg, steps[i].field);
  }
  SetValue(msg, steps.back().field, steps.back().index, parsed);
  return OkStatus();
}

Status ApplyAssignment(Message* root, std::string_view assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    return InvalidArgumentError(
        fmt::format("\"{}\": an override is FIELD.PATH=VALUE, e.g. cluster.nodes=32", assignment));
  }
  return ApplyOverride(root, assignment.substr(0, eq), assignment.substr(eq + 1));
}

Status ApplyAssignments(Message* root, const std::vector<std::string>& assignments) {
  ErrorList errors;
  for (const std::string& a : assignments) errors.AddStatus("", ApplyAssignment(root, a));
  return errors.ToStatus();
}

}  // namespace placesim::sim::scenario_internal
