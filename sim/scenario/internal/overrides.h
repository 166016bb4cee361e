// `--set FIELD.PATH=VALUE` on any Protobuf message through reflection, with no code per field.
// Internal to sim/scenario: it sees the generated messages.
//
// Path grammar:  PATH    := SEGMENT ('.' SEGMENT)*
//                SEGMENT := FIELD_NAME ('[' INDEX ']')?
// FIELD_NAME is the schema's snake_case name (the JSON lowerCamelCase name is accepted too);
// INDEX is a decimal index into an existing element of a repeated field. The last segment
// must name a scalar (number, bool, string or enum) field.
//
// Thread-safety: the functions keep no state; one message must not be changed concurrently.
#ifndef PLACESIM_SIM_SCENARIO_INTERNAL_OVERRIDES_H_
#define PLACESIM_SIM_SCENARIO_INTERNAL_OVERRIDES_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace placesim::sim::scenario_internal {

// Sets the scalar field at `path` in `root` from `value` (see scenario.h for how each type is
// parsed). On error `root` is unchanged, except that empty sub-messages along the path may
// have been created (they read the same as unset ones).
Status ApplyOverride(google::protobuf::Message* root, std::string_view path,
                     std::string_view value);

// Splits "PATH=VALUE" at the first '=' and applies it.
Status ApplyAssignment(google::protobuf::Message* root, std::string_view assignment);

// Applies each assignment; reports every failure at once (one line each).
Status ApplyAssignments(google::protobuf::Message* root,
                        const std::vector<std::string>& assignments);

// Field names of `type` in declaration order, joined as "a, b, c".
std::string FieldNames(const google::protobuf::Descriptor* type);
// The same names as a list: the candidates of "did you mean".
std::vector<std::string> FieldNameList(const google::protobuf::Descriptor* type);

// The valid names of an enum, without its UNSPECIFIED value: full names ("RECOMPUTE_NONE,
// RECOMPUTE_FULL") or short lower-case ones ("none, full").
std::string EnumNames(const google::protobuf::EnumDescriptor* type, bool short_names);

// The short lower-case name of an enum value ("RECOMPUTE_FULL" -> "full").
std::string ShortEnumName(const google::protobuf::EnumValueDescriptor* value);

// Finds an enum value by full or short name, any case, '-' read as '_'; nullptr when none
// (UNSPECIFIED is never matched).
const google::protobuf::EnumValueDescriptor* FindEnumValue(
    const google::protobuf::EnumDescriptor* type, std::string_view name);

// "an integer from -2147483648 to 2147483647" for the field's integer type.
std::string IntegerRange(const google::protobuf::FieldDescriptor* field);

}  // namespace placesim::sim::scenario_internal

#endif  // PLACESIM_SIM_SCENARIO_INTERNAL_OVERRIDES_H_
