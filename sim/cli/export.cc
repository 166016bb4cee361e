// `placesim export` (see export.h): flags and file handling over sim/export.
#include "sim/cli/export.h"

#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include "base/errors.h"
#include "base/status.h"
#include "placesim/placesim.h"
#include "sim/cli/cli_common.h"
#include "sim/cli/commands.h"
#include "sim/export/export.h"

namespace placesim::sim {

int WriteExport(const Scenario& scenario, const std::string& to, const std::string& output,
                const std::string& command, std::ostream& out, std::ostream& err) {
  StatusOr<exporting::Framework> framework = exporting::ParseFramework(to);
  if (!framework.ok()) return ReportError(err, command, framework.status());
  StatusOr<exporting::Exported> exported = exporting::Export(scenario, *framework);
  if (!exported.ok()) return ReportError(err, command, exported.status());
  for (const std::string& note : exported->notes) {
    PrintMessage(err, command, "note: " + note);
  }
  if (output.empty()) {
    out << exported->text;
    return kExitOk;
  }
  Status written = WriteFileAtomically(output, exported->text);
  if (!written.ok()) return ReportError(err, command, written);
  return kExitOk;
}

int RunExport(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  namespace po = boost::program_options;
  std::string path, to, output;
  std::vector<std::string> sets;
  po::options_description desc(
      "placesim export SCENARIO --to FRAMEWORK [options]\n"
      "The scenario's plan as the framework's own configuration");
  desc.add_options()("help,h", "show this help")(
      "scenario", po::value<std::string>(&path)->required(), "scenario file")(
      "to", po::value<std::string>(&to)->required(),
      ("framework: " + JoinNames(exporting::FrameworkNames()) +
       " (Megatron-LM arguments, DeepSpeed config JSON, PyTorch FSDP snippet)")
          .c_str())("set", po::value<std::vector<std::string>>(&sets)->composing(),
                    "FIELD.PATH=VALUE: override a scenario field (repeatable)")(
      "output,o", po::value<std::string>(&output), "write to FILE (atomically) instead of stdout");
  if (WantsHelp(args)) {
    out << desc << "\n";
    return kExitOk;
  }
  po::positional_options_description pos;
  pos.add("scenario", 1);
  if (!ParseArgs("export", args, desc, pos, err)) return kExitBadInput;
  // A bad --to is reported before the scenario is read.
  if (StatusOr<exporting::Framework> f = exporting::ParseFramework(to); !f.ok()) {
    return ReportError(err, "export", f.status());
  }
  StatusOr<Scenario> scenario = api::LoadScenario(path, sets);
  if (!scenario.ok()) return ReportError(err, "", scenario.status());
  return WriteExport(*scenario, to, output, "export", out, err);
}

}  // namespace placesim::sim
