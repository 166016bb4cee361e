// Scenario loading: the public entry points over parse, overrides and resolve (internal/).
// The document holds the generated message behind a pointer so protobuf stays in this target.
#include "sim/scenario/scenario.h"

#include <google/protobuf/text_format.h>

#include <utility>

#include "sim/scenario/internal/overrides.h"
#include "sim/scenario/internal/parse.h"
#include "sim/scenario/internal/resolve.h"
#include "sim/scenario/proto/scenario.pb.h"

namespace placesim::sim {

struct ScenarioDocument::Impl {
  ::placesim::scenario::proto::Scenario message;
  std::string display_name = "<input>";
};

ScenarioDocument::ScenarioDocument() : impl_(std::make_unique<Impl>()) {}
ScenarioDocument::ScenarioDocument(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ScenarioDocument::~ScenarioDocument() = default;
ScenarioDocument::ScenarioDocument(const ScenarioDocument& other)
    : impl_(std::make_unique<Impl>(*other.impl_)) {}
ScenarioDocument& ScenarioDocument::operator=(const ScenarioDocument& other) {
  if (this != &other) *impl_ = *other.impl_;
  return *this;
}
// A moved-from document is left empty but valid.
ScenarioDocument::ScenarioDocument(ScenarioDocument&& other) noexcept
    : impl_(std::exchange(other.impl_, std::make_unique<Impl>())) {}
ScenarioDocument& ScenarioDocument::operator=(ScenarioDocument&& other) noexcept {
  std::swap(impl_, other.impl_);
  return *this;
}

StatusOr<ScenarioDocument> ScenarioDocument::Parse(std::string_view text, ScenarioFormat format,
                                                   std::string_view display_name) {
  auto impl = std::make_unique<Impl>();
  impl->display_name = std::string(display_name);
  RETURN_IF_ERROR(scenario_internal::ParseScenario(text, format, display_name, &impl->message));
  return ScenarioDocument(std::move(impl));
}

StatusOr<ScenarioDocument> ScenarioDocument::ReadFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, scenario_internal::ReadScenarioFile(path));
  return Parse(text, scenario_internal::FormatForPath(path), path);
}

Status ScenarioDocument::ApplyOverride(std::string_view path, std::string_view value) {
  return scenario_internal::ApplyOverride(&impl_->message, path, value);
}

Status ScenarioDocument::ApplyOverride(std::string_view assignment) {
  return scenario_internal::ApplyAssignment(&impl_->message, assignment);
}

Status ScenarioDocument::ApplyOverrides(const std::vector<std::string>& assignments) {
  return scenario_internal::ApplyAssignments(&impl_->message, assignments);
}

StatusOr<Scenario> ScenarioDocument::Resolve() const {
  return scenario_internal::ResolveScenario(impl_->message, impl_->display_name);
}

std::string ScenarioDocument::ToTextProto() const {
  std::string out;
  google::protobuf::TextFormat::PrintToString(impl_->message, &out);
  return out;
}

const std::string& ScenarioDocument::display_name() const { return impl_->display_name; }

namespace {

StatusOr<Scenario> Finish(StatusOr<ScenarioDocument> doc,
                          const std::vector<std::string>& overrides) {
  if (!doc.ok()) return doc.status();
  Status status = doc->ApplyOverrides(overrides);
  if (!status.ok()) {
    return InvalidArgumentError("bad --set override:\n" + status.message());
  }
  return doc->Resolve();
}

}  // namespace

StatusOr<Scenario> LoadScenarioFile(const std::string& path,
                                    const std::vector<std::string>& overrides) {
  return Finish(ScenarioDocument::ReadFile(path), overrides);
}

StatusOr<Scenario> LoadScenarioText(std::string_view text, ScenarioFormat format,
                                    const std::vector<std::string>& overrides,
                                    std::string_view display_name) {
  return Finish(ScenarioDocument::Parse(text, format, display_name), overrides);
}

}  // namespace placesim::sim
