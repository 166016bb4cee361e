// `placesim report` (see report.h): loads the scenario, simulates one step with a
// TimelineRecorder as its trace sink, and writes the page atomically. Chart.js is read before
// the simulation so a missing package fails fast.
#include "sim/cli/report.h"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "placesim/placesim.h"
#include "sim/cli/cli_common.h"
#include "sim/cli/commands.h"
#include "sim/cli/economics.h"
#include "sim/report/html_report.h"
#include "sim/report/timeline_recorder.h"

namespace placesim::sim {
namespace {

namespace po = boost::program_options;

std::string Subject(const Scenario& s, const std::vector<std::string>& sets) {
  const topology::MeshShape& m = s.strategy.mesh;
  std::string subject = fmt::format("{} on {} GPUs (dp {} tp {} pp {} cp {})", s.model.name,
                                    m.world(), m.dp, m.tp, m.pp, m.cp);
  for (const std::string& set : sets) subject += "; --set " + set;
  return subject;
}

}  // namespace

int RunReport(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string path;
  std::string output;
  std::string network;
  std::string chartjs_path;
  std::vector<std::string> sets;
  po::options_description desc(
      "placesim report SCENARIO -o FILE.html [options]\n"
      "Simulates one step and writes a self-contained HTML page of it: memory over time per "
      "pipeline stage, the step per role, link utilisation and a per-layer table");
  desc.add_options()("help,h", "show this help")(
      "scenario", po::value<std::string>(&path)->required(), "scenario file")(
      "output,o", po::value<std::string>(&output)->required(), "the HTML file to write")(
      "set", po::value<std::vector<std::string>>(&sets)->composing(),
      "FIELD.PATH=VALUE: override any scalar scenario field (repeatable)")(
      "network", po::value<std::string>(&network),
      "override the scenario's simulation.network_model: flow or analytic")(
      "chartjs", po::value<std::string>(&chartjs_path),
      ("Chart.js to embed (default " + report::DefaultChartJsPath() + ")").c_str());
  if (WantsHelp(args)) {
    out << desc << "\n";
    return kExitOk;
  }
  po::positional_options_description pos;
  pos.add("scenario", 1);
  if (!ParseArgs("report", args, desc, pos, err)) return kExitBadInput;
  StatusOr<std::string> chartjs = report::LoadChartJs(chartjs_path);
  if (!chartjs.ok()) return ReportError(err, "report", chartjs.status());
  api::SimulateOptions options;
  options.network = network;
  if (Status checked = api::CheckSimulateOptions(options); !checked.ok()) {
    return ReportError(err, "report", checked);
  }
  StatusOr<Scenario> scenario = api::LoadScenario(path, sets);
  if (!scenario.ok()) return ReportError(err, "", scenario.status());
  report::TimelineRecorder recorder;
  options.trace = &recorder;
  StatusOr<SimResult> result = api::Simulate(*scenario, options);
  std::string note;
  if (!result.ok() && result.status().code() == StatusCode::kOutOfRange) {
    // Too many ops to trace: the step's figures without the memory timeline and layers.
    note = "memory timeline and layers omitted: " + result.status().message();
    options.trace = nullptr;
    recorder = report::TimelineRecorder();
    result = api::Simulate(*scenario, options);
  }
  if (!result.ok()) return ReportError(err, "report", result.status());
  report::SimulationReport page =
      report::CollectSimulation(path, Subject(*scenario, sets), *result, recorder);
  page.note = note;
  if (scenario->economics) page.economics = SimulatedEconomics(*scenario, *result);
  Status written = report::WriteHtml(output, report::RenderSimulationHtml(page, *chartjs));
  if (!written.ok()) return ReportError(err, "report", written);
  return kExitOk;
}

}  // namespace placesim::sim
