// Algorithm selection and the built-ins' registration (see registry.h).
#include "sim/collectives/registry.h"

#include <fmt/format.h>

#include <cstdint>

#include "sim/collectives/impl/builtins.h"

namespace placesim::sim::collectives {

StatusOr<int> Registry::Select(std::string_view name) const {
  if (name == kAutoName) return kAuto;
  return Lookup(name);
}

StatusOr<const CommPlan*> Registry::Choose(const CollectiveCall& call, const GroupLayout& layout,
                                           int forced, PlanSource& plans) const {
  if (forced != kAuto && at(forced).AppliesTo(call, layout)) return plans.PlanOf(forced);
  // One pass over the algorithms that apply: the first preferred, the first fallback, and the
  // challengers (a bit per id), each asked once.
  int preferred = kAuto;
  int fallback = kAuto;
  uint64_t challengers = 0;
  PLACESIM_CHECK(size() <= 64);
  for (int id = 0; id < size(); ++id) {
    if (!at(id).AppliesTo(call, layout)) continue;
    switch (at(id).AutoRoleFor(call, layout)) {
      case AutoRole::kPreferred:
        if (preferred == kAuto) preferred = id;
        break;
      case AutoRole::kFallback:
        if (fallback == kAuto) fallback = id;
        break;
      case AutoRole::kChallenger:
        challengers |= uint64_t{1} << id;
        break;
      case AutoRole::kNever:
        break;
    }
  }
  int choice = preferred != kAuto ? preferred : fallback;
  if (choice == kAuto) {
    return InternalError(fmt::format("no collective algorithm applies to a {} over groups of {}",
                                     strategies::CollectiveKindName(call.kind), layout.n));
  }
  ASSIGN_OR_RETURN(const CommPlan* plan, plans.PlanOf(choice));
  for (int id = 0; challengers != 0; ++id, challengers >>= 1) {
    if ((challengers & 1) == 0) continue;
    ASSIGN_OR_RETURN(const CommPlan* challenger, plans.PlanOf(id));
    if (at(id).Estimate(*challenger, call) < at(choice).Estimate(*plan, call)) {
      choice = id;
      plan = challenger;
    }
  }
  return plan;
}

void RegisterBuiltins(Registry& registry) {
  registry.Register(MakeRing());
  registry.Register(MakeDoubleBinaryTree());
  registry.Register(MakeHierarchical());
  registry.Register(MakePairwise());
}

const Registry& BuiltinRegistry() { return BuiltOnce<Registry, RegisterBuiltins>(); }

}  // namespace placesim::sim::collectives
