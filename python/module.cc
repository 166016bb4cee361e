// The `placesim` Python module: the library facade (include/placesim/placesim.h) for
// notebooks and scripts. A scenario is loaded from a file, a textproto/JSON string or a dict
// (dumped to JSON, then parsed by the facade like any JSON scenario); analyze, simulate,
// sweep, search and compare return plain dicts with the keys of the CLI's `--format json`
// (units in the key names), and to_dataframe turns a sweep's points or a search's rows into
// a pandas DataFrame.
//
// Errors: a facade Status becomes an exception carrying its message unchanged (the field
// path, the value, what is allowed): ScenarioError (a ValueError) for bad input,
// ScenarioNotFoundError (a ScenarioError) for a named thing that does not exist, such as an
// unreadable file (the facade's kNotFound), RuntimeError for placesim's own bugs.
//
// Thread-safety: the GIL is released while the facade analyzes, simulates, sweeps, searches
// or compares, so Python threads can run studies concurrently; a Scenario is immutable from
// Python (with_overrides returns a new one), so sharing one between threads is safe.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "placesim/json.h"
#include "placesim/placesim.h"
#include "strategies/report.h"

namespace py = pybind11;

namespace placesim::python {
namespace {

using Json = nlohmann::ordered_json;
using api::CompareJson;
using api::SearchJson;
using api::SimulationJson;
using api::SweepJson;

// A loaded scenario as Python sees it: the facade's source and the name its results quote.
struct PyScenario {
  api::ScenarioSource source;
  std::string name;
};

PyObject* g_scenario_error = nullptr;
PyObject* g_not_found_error = nullptr;

// Raises the Python exception for a failed Status, with its message unchanged.
[[noreturn]] void Raise(const Status& status) {
  PyObject* type = g_scenario_error;
  if (status.code() == StatusCode::kNotFound) type = g_not_found_error;
  if (status.code() == StatusCode::kInternal) type = PyExc_RuntimeError;
  PyErr_SetString(type, status.message().c_str());
  throw py::error_already_set();
}

template <typename T>
T ValueOrRaise(StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return *std::move(v);
}

void OkOrRaise(const Status& s) {
  if (!s.ok()) Raise(s);
}

// A JSON document as dicts, lists, str, int (exact), float, bool and None. Through its text
// and the json module's C parser: 2.6 times faster than building the dicts from the nlohmann
// tree with pybind11 (analyze of zero-7.5b: 100 against 257 us of CPU per call).
py::object ToPython(const std::string& json_text) {
  return py::module_::import("json").attr("loads")(json_text);
}
py::object ToPython(const Json& j) { return ToPython(j.dump()); }

sim::ScenarioFormat ParseFormat(const std::string& format) {
  if (format == "auto") return sim::ScenarioFormat::kAuto;
  if (format == "textproto") return sim::ScenarioFormat::kTextProto;
  if (format == "json") return sim::ScenarioFormat::kJson;
  Raise(InvalidArgumentError("format: \"" + format +
                             "\": unknown value; valid: auto, textproto, json"));
}

PyScenario WithOverrides(PyScenario scenario, const std::vector<std::string>& overrides) {
  if (!overrides.empty()) OkOrRaise(api::ApplyOverrides(&scenario.source, overrides));
  return scenario;
}

PyScenario LoadText(const std::string& text, const std::string& format, const std::string& name,
                    const std::vector<std::string>& overrides) {
  PyScenario s{ValueOrRaise(api::LoadScenarioText(text, ParseFormat(format), name)), name};
  return WithOverrides(std::move(s), overrides);
}

// A path (str or os.PathLike) or a dict in the scenario's JSON mapping.
PyScenario Load(const py::object& from, const std::vector<std::string>& overrides) {
  if (py::isinstance<py::dict>(from)) {
    const std::string text = py::module_::import("json").attr("dumps")(from).cast<std::string>();
    return LoadText(text, "json", "<dict>", overrides);
  }
  const std::string path = py::str(py::module_::import("os").attr("fspath")(from));
  PyScenario s{ValueOrRaise(api::LoadScenarioFile(path)), path};
  return WithOverrides(std::move(s), overrides);
}

// Every study takes a Scenario, a path or a dict.
PyScenario AsScenario(const py::object& scenario) {
  if (py::isinstance<PyScenario>(scenario)) return scenario.cast<PyScenario>();
  return Load(scenario, {});
}

api::Scenario Resolved(const PyScenario& s) { return ValueOrRaise(api::Resolve(s.source)); }

py::object Analyze(const py::object& scenario) {
  const api::Scenario resolved = Resolved(AsScenario(scenario));
  StatusOr<std::string> json = [&]() -> StatusOr<std::string> {
    py::gil_scoped_release unlocked;
    ASSIGN_OR_RETURN(api::Plan plan, api::Analyze(resolved));
    return strategies::FormatPlanJson(plan);
  }();
  return ToPython(ValueOrRaise(std::move(json)));
}

py::object Simulate(const py::object& scenario, const std::string& network) {
  const api::Scenario resolved = Resolved(AsScenario(scenario));
  api::SimulateOptions options;
  options.network = network;
  StatusOr<api::SimResult> result = [&] {
    py::gil_scoped_release unlocked;
    return api::Simulate(resolved, options);
  }();
  return ToPython(SimulationJson(ValueOrRaise(std::move(result))));
}

// One value of a vary list as the --vary syntax writes it: booleans as protobuf spells them,
// values holding a comma or a quote quoted.
std::string VaryValue(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  std::string s = py::str(v);
  if (s.find_first_of(",\"") == std::string::npos) return s;
  return "'" + s + "'";
}

// ["FIELD=V1,V2", ...] as given, or {"FIELD": [V1, V2] or "V1,V2", ...} joined into that form.
std::vector<std::string> VarySpecs(const py::object& vary) {
  std::vector<std::string> specs;
  if (!py::isinstance<py::dict>(vary)) return vary.cast<std::vector<std::string>>();
  for (const auto& [field, values] : vary.cast<py::dict>()) {
    std::string spec = py::str(field).cast<std::string>() + "=";
    if (py::isinstance<py::str>(values)) {
      spec += values.cast<std::string>();
    } else {
      bool first = true;
      for (const py::handle& v : values) {
        if (!first) spec += ',';
        spec += VaryValue(v);
        first = false;
      }
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

py::object Sweep(const py::object& scenario, const py::object& vary, const std::string& mode,
                 const std::string& network, int64_t jobs, const std::string& shard) {
  const PyScenario s = AsScenario(scenario);
  api::SweepOptions options;
  options.vary = VarySpecs(vary);
  options.shard = shard;
  if (mode == "simulate")
    options.mode = study::SweepMode::kSimulate;
  else if (mode != "analyze") {
    Raise(InvalidArgumentError("mode: \"" + mode + "\": unknown value; valid: analyze, simulate"));
  }
  options.network = network;
  options.jobs = jobs;
  StatusOr<api::SweepResult> result = [&] {
    py::gil_scoped_release unlocked;
    return api::Sweep(s.source, options);
  }();
  return ToPython(SweepJson(ValueOrRaise(std::move(result)), s.name, s.source.overrides, network));
}

py::object Search(const py::object& scenario, const std::vector<std::string>& fix,
                  int64_t simulate_top, int64_t top, const std::string& network, int64_t jobs,
                  const std::string& space) {
  const PyScenario s = AsScenario(scenario);
  const api::Scenario resolved = Resolved(s);
  api::SearchOptions options;
  options.space = space;
  options.fixes = fix;
  options.simulate_top = simulate_top;
  options.top = top;
  options.network = network;
  options.jobs = jobs;
  StatusOr<api::SearchResult> result = [&] {
    py::gil_scoped_release unlocked;
    return api::Search(resolved, options);
  }();
  return ToPython(SearchJson(ValueOrRaise(std::move(result)), options, resolved, s.name));
}

// A result file's path, or a result dict written to a private temporary file (the facade
// compares files) that lives as long as this object.
class ResultFile {
 public:
  explicit ResultFile(const py::object& result) {
    if (!py::isinstance<py::dict>(result)) {
      path_ = py::str(py::module_::import("os").attr("fspath")(result));
      name_ = path_;
      return;
    }
    std::string dir = (std::filesystem::temp_directory_path() / "placesim-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) Raise(InternalError("cannot create a temporary folder"));
    dir_ = dir;
    path_ = dir + "/result.json";
    std::ofstream(path_) << py::module_::import("json").attr("dumps")(result).cast<std::string>();
    name_ = "<dict>";
  }
  ~ResultFile() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  ResultFile(const ResultFile&) = delete;
  ResultFile& operator=(const ResultFile&) = delete;
  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }

 private:
  std::string dir_, path_, name_;
};

py::object Compare(const py::object& baseline, const py::object& current,
                   const py::object& threshold) {
  double fraction = 0;
  if (py::isinstance<py::str>(threshold)) {
    fraction = ValueOrRaise(study::ParseThreshold(threshold.cast<std::string>()));
  } else {
    fraction = threshold.cast<double>();
  }
  const ResultFile a(baseline), b(current);
  StatusOr<study::Comparison> result = [&] {
    py::gil_scoped_release unlocked;
    return api::Compare(a.path(), b.path(), fraction);
  }();
  return ToPython(CompareJson(ValueOrRaise(std::move(result)), a.name(), b.name(), fraction));
}

// A sweep's points or a search's rows, one row each; a sweep's varied values become columns
// named by their field path, other nested dicts "KEY.SUBKEY" columns.
py::object ToDataFrame(const py::dict& result) {
  py::module_ pandas;
  try {
    pandas = py::module_::import("pandas");
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_ImportError)) throw;
    throw py::import_error(
        "placesim.to_dataframe needs pandas, which is not installed: pip install pandas "
        "(or apt-get install python3-pandas); the result itself is a plain dict");
  }
  const char* key = result.contains("points") ? "points" : "rows";
  if (!result.contains(key)) {
    throw py::value_error(
        "placesim.to_dataframe takes the result of placesim.sweep (its \"points\") or "
        "placesim.search (its \"rows\")");
  }
  py::list rows;
  for (const py::handle& entry : result[key]) {
    py::dict row;
    for (const auto& [k, v] : entry.cast<py::dict>()) {
      if (!py::isinstance<py::dict>(v)) {
        row[k] = v;
        continue;
      }
      const std::string prefix =
          py::str(k).cast<std::string>() == "values" ? "" : py::str(k).cast<std::string>() + ".";
      for (const auto& [sub, value] : v.cast<py::dict>()) {
        row[py::str(prefix + py::str(sub).cast<std::string>())] = value;
      }
    }
    rows.append(row);
  }
  return pandas.attr("DataFrame")(rows);
}

}  // namespace
}  // namespace placesim::python

PYBIND11_MODULE(placesim, m) {
  using namespace placesim::python;
  m.doc() =
      "placesim: plan distributed training from Python (analyze, simulate, sweep, search, "
      "compare)";
  g_scenario_error = PyErr_NewException("placesim.ScenarioError", PyExc_ValueError, nullptr);
  g_not_found_error =
      PyErr_NewException("placesim.ScenarioNotFoundError", g_scenario_error, nullptr);
  m.attr("ScenarioError") = py::handle(g_scenario_error);
  m.attr("ScenarioNotFoundError") = py::handle(g_not_found_error);

  py::class_<PyScenario>(m, "Scenario",
                         "A parsed scenario with its overrides; immutable (with_overrides "
                         "returns a new one).")
      .def_property_readonly("name", [](const PyScenario& s) { return s.name; })
      .def_property_readonly("text", [](const PyScenario& s) { return s.source.text; })
      .def_property_readonly("overrides", [](const PyScenario& s) { return s.source.overrides; })
      .def("with_overrides", &WithOverrides, py::arg("overrides"),
           "A copy with \"FIELD.PATH=VALUE\" assignments applied (the CLI's --set).")
      .def("__repr__", [](const PyScenario& s) {
        return "<placesim.Scenario " + s.name +
               " overrides=" + std::to_string(s.source.overrides.size()) + ">";
      });

  m.def("load", &Load, py::arg("source"), py::arg("overrides") = std::vector<std::string>{},
        "A scenario from a file path (.textproto or .json) or a dict in its JSON mapping, with "
        "\"FIELD.PATH=VALUE\" overrides applied.");
  m.def("loads", &LoadText, py::arg("text"), py::arg("format") = "auto",
        py::arg("name") = "<string>", py::arg("overrides") = std::vector<std::string>{},
        "A scenario from textproto or JSON text (format: auto, textproto or json).");
  m.def("analyze", &Analyze, py::arg("scenario"),
        "The analytic plan as `placesim analyze --format json` writes it.");
  m.def("simulate", &Simulate, py::arg("scenario"), py::arg("network") = "",
        "One simulated step as `placesim simulate --format json` writes it; network: \"\" "
        "(the scenario's), flow or analytic.");
  m.def("sweep", &Sweep, py::arg("scenario"), py::arg("vary"), py::arg("mode") = "analyze",
        py::arg("network") = "scenario", py::arg("jobs") = 0, py::arg("shard") = "1/1",
        "A what-if study over scenario fields, as `placesim sweep --format json`; vary is "
        "[\"FIELD=V1,V2\", ...] or {\"FIELD\": [V1, V2], ...}.");
  m.def("search", &Search, py::arg("scenario"), py::arg("fix") = std::vector<std::string>{},
        py::arg("simulate_top") = 32, py::arg("top") = 20, py::arg("network") = "analytic",
        py::arg("jobs") = 0, py::arg("space") = "default",
        "The best strategies for the scenario's model and cluster, as `placesim search "
        "--format json`.");
  m.def("compare", &Compare, py::arg("baseline"), py::arg("current"), py::arg("threshold") = 0.02,
        "Compares two results (dicts or JSON files) of the same kind, as `placesim compare "
        "--format json`; threshold a fraction (0.02) or a percentage (\"2%\").");
  m.def("to_dataframe", &ToDataFrame, py::arg("result"),
        "A pandas DataFrame of a sweep's points or a search's rows (needs pandas).");
}
