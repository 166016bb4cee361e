// HTML reports: see html_report.h. The page is one template (PageHtml) around the report's
// sections; every chart is a Chart.js configuration built here as JSON and drawn by one small
// generic driver script (kDriverJs), so the charts' data is plain JSON in the page.
#include "sim/report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>

#include "strategies/schedule.h"
#include "strategies/search.h"
#include "topology/spec.h"
#include "traces/atomic_output_file.h"

#ifndef PLACESIM_CHARTJS_PATH
#define PLACESIM_CHARTJS_PATH "/usr/share/javascript/chart.js/chart.min.js"
#endif

namespace placesim::report {
namespace {

using Json = nlohmann::ordered_json;

// Colours by series position; fixed so the same input gives the same bytes.
constexpr std::array<const char*, 10> kPalette = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                  "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                  "#9c755f", "#bab0ac"};

const char* Colour(size_t i) { return kPalette[i % kPalette.size()]; }

// Records script errors and blocked requests into the page before anything else runs.
constexpr const char* kGuardJs = R"JS(
window.__reportErrors = [];
window.addEventListener('error', function (e) {
  window.__reportErrors.push('error: ' + (e.message || e.type));
});
document.addEventListener('securitypolicyviolation', function (e) {
  window.__reportErrors.push('blocked request: ' + e.blockedURI);
});
)JS";

// Draws every chart of #report-data, then marks each canvas and the body (see the header).
constexpr const char* kDriverJs = R"JS(
(function () {
  var errors = window.__reportErrors;
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var charts = [];
  data.charts.forEach(function (spec) {
    var canvas = document.getElementById(spec.id);
    var options = spec.config.options || (spec.config.options = {});
    options.animation = false;
    options.responsive = true;
    options.maintainAspectRatio = false;
    options.plugins = options.plugins || {};
    options.plugins.tooltip = {callbacks: {label: function (ctx) {
      var raw = ctx.raw || {};
      var prefix = raw.label ? raw.label + ': ' : (ctx.dataset.label + ': ');
      return prefix + (ctx.parsed.x !== undefined && raw.x !== undefined ?
          '(' + ctx.parsed.x + ', ' + ctx.parsed.y + ')' : ctx.formattedValue);
    }}};
    try {
      charts.push([canvas, new Chart(canvas, spec.config)]);
    } catch (e) {
      errors.push(spec.id + ': ' + e.message);
    }
  });
  setTimeout(function () {
    var drawn = 0;
    charts.forEach(function (pair) {
      var canvas = pair[0], chart = pair[1], points = 0, ink = 0;
      chart.data.datasets.forEach(function (d, i) {
        points += chart.getDatasetMeta(i).data.length;
      });
      var pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      for (var i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) ink++;
      var ok = points > 0 && ink > 0;
      canvas.setAttribute('data-drawn', ok ? 'yes' : 'no');
      canvas.setAttribute('data-ink', String(ink));
      if (ok) drawn++;
    });
    document.body.setAttribute('data-charts', String(data.charts.length));
    document.body.setAttribute('data-charts-drawn', String(drawn));
    document.getElementById('errors').textContent = errors.join('\n');
    var ok = drawn === data.charts.length && errors.length === 0;
    document.body.setAttribute('data-report-status', ok ? 'ok' : 'failed');
  }, 50);
})();
)JS";

constexpr const char* kCss = R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
.subject { color: #555; margin-bottom: 12px; } .note { color: #a33; }
.chart { position: relative; height: 320px; max-width: 1100px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 16px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; } td.text, th.text { text-align: left; }
#errors { color: #a33; }
)CSS";

// The charts of one page and the HTML of its sections, in order.
struct Page {
  std::string title;
  std::string subject;
  std::string body;
  Json charts = Json::array();

  // Appends a canvas for `config` (a Chart.js configuration), titled `heading`.
  void AddChart(const std::string& heading, Json config, const char* css_class = "chart") {
    const std::string id = fmt::format("chart-{}", charts.size());
    body +=
        fmt::format("<div><h3>{}</h3><div class=\"{}\"><canvas id=\"{}\"></canvas></div></div>\n",
                    EscapeHtml(heading), css_class, id);
    charts.push_back({{"id", id}, {"config", std::move(config)}});
  }
};

// JSON safe inside <script>: '<' only occurs in strings, where \u003c means the same.
std::string ScriptJson(const Json& j) {
  std::string s = j.dump();
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string PageHtml(const Page& page, std::string_view chartjs) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n";
  html += fmt::format("<title>{}</title>\n<style>{}</style>\n<script>{}</script>\n</head>\n",
                      EscapeHtml(page.title), kCss, kGuardJs);
  html += "<body data-report-status=\"pending\">\n";
  html += fmt::format("<h1>{}</h1>\n<div class=\"subject\">{}</div>\n", EscapeHtml(page.title),
                      EscapeHtml(page.subject));
  html += page.body;
  html += "<pre id=\"errors\"></pre>\n";
  html += "<script type=\"application/json\" id=\"report-data\">" +
          ScriptJson(Json{{"charts", page.charts}}) + "</script>\n";
  html += "<script>\n";
  html += chartjs;
  html += "\n</script>\n<script>";
  html += kDriverJs;
  html += "</script>\n</body>\n</html>\n";
  return html;
}

// A table: header cells, then rows; the first `text_columns` columns align left.
std::string TableHtml(const std::vector<std::string>& header,
                      const std::vector<std::vector<std::string>>& rows, size_t text_columns) {
  auto cell = [&](const char* tag, size_t c, const std::string& v) {
    return fmt::format("<{0}{1}>{2}</{0}>", tag, c < text_columns ? " class=\"text\"" : "",
                       EscapeHtml(v));
  };
  std::string s = "<table>\n<tr>";
  for (size_t c = 0; c < header.size(); ++c) s += cell("th", c, header[c]);
  s += "</tr>\n";
  for (const auto& r : rows) {
    s += "<tr>";
    for (size_t c = 0; c < r.size(); ++c) s += cell("td", c, r[c]);
    s += "</tr>\n";
  }
  return s + "</table>\n";
}

// The "Cost and energy" table of a simulated step (docs/economics.md): one row per figure,
// only those the scenario asked for.
std::string EconomicsTableHtml(const sim::economics::Figures& f) {
  std::vector<std::vector<std::string>> rows = {
      {"power per GPU", fmt::format("{:.0f} W (compute-busy {:.1f}%; idle {:.0f} W, TDP {:.0f} W)",
                                    f.gpu_power.watts(), 100.0 * f.utilization, f.gpu_idle.watts(),
                                    f.gpu_tdp.watts())},
      {"facility power", fmt::format("{:.1f} kW ({} GPUs, PUE {:.2f})",
                                     f.facility_power.watts() / 1e3, f.gpus, f.pue)},
      {"energy per hour", fmt::format("{:.2f} kWh", f.energy_per_hour.ToKilowattHours())}};
  if (f.cost_per_hour_usd)
    rows.push_back({"cost per hour", fmt::format("${:.2f}", *f.cost_per_hour_usd)});
  if (f.energy_per_step) {
    rows.push_back({"energy per step", fmt::format("{:.4g} J", f.energy_per_step->joules())});
  }
  if (f.steps) {
    rows.push_back({"steps to train", fmt::format("{}", *f.steps)});
    rows.push_back(
        {"time to train", fmt::format("{:.1f} hours ({:.2f} days)", *f.time_to_train_s / 3600,
                                      *f.time_to_train_s / 86400)});
    rows.push_back({"GPU-hours", fmt::format("{:.1f}", *f.gpu_hours)});
    rows.push_back(
        {"energy to train", fmt::format("{:.2f} kWh", f.energy_to_train->ToKilowattHours())});
  }
  if (f.cost_usd) rows.push_back({"cost to train", fmt::format("${:.2f}", *f.cost_usd)});
  if (f.co2_kg) rows.push_back({"CO2 to train", fmt::format("{:.1f} kg CO2e", *f.co2_kg)});
  return TableHtml({"figure", "value"}, rows, 1);
}

// Division, not ToMilliseconds()'s multiplication by 1e-9, so whole milliseconds print whole.
double Ms(Duration d) { return static_cast<double>(d.picoseconds()) / 1e9; }
std::string MsText(Duration d) { return fmt::format("{:.3f}", Ms(d)); }
double Gib(Bytes b) { return b.ToGiB(); }

// The unit of a simulation page's time axes: seconds for steps of 10 s or more, else ms.
struct TimeUnit {
  const char* name;
  double picoseconds;
  double Of(Duration d) const { return static_cast<double>(d.picoseconds()) / picoseconds; }
};
TimeUnit UnitFor(Duration step) {
  return step >= Seconds(10) ? TimeUnit{"s", 1e12} : TimeUnit{"ms", 1e9};
}

Json Axis(const std::string& title, bool stacked = false) {
  Json a = {{"title", {{"display", true}, {"text", title}}}};
  if (stacked) a["stacked"] = true;
  return a;
}

Json Dataset(const std::string& label, Json data, size_t colour) {
  return {{"label", label},
          {"data", std::move(data)},
          {"backgroundColor", Colour(colour)},
          {"borderColor", Colour(colour)}};
}

// ------------------------------------------------------------------------- simulation
void AddStepBreakdown(const sim::SimResult& r, TimeUnit unit, Page& page) {
  Json labels = Json::array();
  std::array<Json, 5> series;
  for (auto& s : series) s = Json::array();
  bool copies = false;
  bool host = false;
  for (const sim::RoleResult& role : r.roles) {
    labels.push_back(role.role);
    const Duration waits = std::max(role.idle - role.exposed_comm, Duration());
    series[0].push_back(unit.Of(role.compute_busy));
    series[1].push_back(unit.Of(role.exposed_comm));
    series[2].push_back(unit.Of(waits));
    series[3].push_back(unit.Of(role.copy_busy));
    series[4].push_back(unit.Of(role.host_busy));
    copies = copies || role.copy_busy > Duration();
    host = host || role.host_busy > Duration();
  }
  const std::array<const char*, 5> names = {"compute", "exposed communication",
                                            "pipeline idle and waits", "copy stream busy",
                                            "host stream busy"};
  const std::array<const char*, 5> stacks = {"step", "step", "step", "copy", "host"};
  Json datasets = Json::array();
  for (size_t i = 0; i < series.size(); ++i) {
    if ((i == 3 && !copies) || (i == 4 && !host)) continue;
    Json d = Dataset(names[i], series[i], i);
    d["stack"] = stacks[i];
    datasets.push_back(std::move(d));
  }
  Json config = {{"type", "bar"},
                 {"data", {{"labels", labels}, {"datasets", datasets}}},
                 {"options",
                  {{"indexAxis", "y"},
                   {"scales", {{"x", Axis(unit.name, true)}, {"y", Axis("role", true)}}}}}};
  page.AddChart(fmt::format("Step breakdown per role ({})", unit.name), std::move(config));
}

void AddLinks(const sim::SimResult& r, Page& page) {
  if (r.links.empty()) return;
  Json labels = Json::array();
  Json max = Json::array();
  Json avg = Json::array();
  std::vector<std::vector<std::string>> rows;
  for (const sim::LinkKindStats& l : r.links) {
    labels.push_back(topology::LinkKindName(l.kind));
    max.push_back(100 * l.utilization_max);
    avg.push_back(100 * l.utilization_avg);
    rows.push_back({topology::LinkKindName(l.kind), std::to_string(l.links),
                    std::to_string(l.links_used), ToString(l.bytes),
                    fmt::format("{:.1f}%", 100 * l.utilization_max),
                    fmt::format("{:.1f}%", 100 * l.utilization_avg), std::to_string(l.peak_flows)});
  }
  Json datasets = {Dataset("busiest link", max, 0), Dataset("mean over links used", avg, 1)};
  Json config = {{"type", "bar"},
                 {"data", {{"labels", labels}, {"datasets", datasets}}},
                 {"options", {{"scales", {{"y", Axis("utilisation of the step (%)")}}}}}};
  page.AddChart("Link utilisation by kind", std::move(config));
  page.body +=
      TableHtml({"kind", "links", "used", "bytes", "busiest", "mean", "peak flows"}, rows, 1);
}

void AddMemoryChart(const StageMemory& m, TimeUnit unit, Page& page) {
  Json datasets = Json::array();
  for (size_t t = 0; t < sim::kNumMemoryTags; ++t) {
    const bool used = std::any_of(m.samples.begin(), m.samples.end(),
                                  [&](const MemorySample& s) { return s.live[t] != Bytes(); });
    if (!used) continue;
    Json points = Json::array();
    for (const MemorySample& s : m.samples) {
      points.push_back({{"x", unit.Of(s.at)}, {"y", Gib(s.live[t])}});
    }
    Json d = Dataset(strategies::MemoryTagName(static_cast<strategies::MemoryTag>(t)),
                     std::move(points), t);
    d["fill"] = datasets.empty() ? Json("origin") : Json("-1");
    d["stepped"] = true;
    d["pointRadius"] = 0;
    d["stack"] = "live";
    datasets.push_back(std::move(d));
  }
  if (datasets.empty()) return;
  const double end = m.samples.empty() ? 0.0 : unit.Of(m.samples.back().at);
  Json cap =
      Dataset("HBM capacity",
              {{{"x", 0.0}, {"y", Gib(m.capacity)}}, {{"x", end}, {"y", Gib(m.capacity)}}}, 2);
  cap["borderDash"] = {6, 4};
  cap["pointRadius"] = 0;
  cap["fill"] = false;
  cap["stack"] = "capacity";
  datasets.push_back(std::move(cap));
  Json config = {
      {"type", "line"},
      {"data", {{"datasets", datasets}}},
      {"options",
       {{"scales",
         {{"x",
           {{"type", "linear"},
            {"title", {{"display", true}, {"text", fmt::format("time in step ({})", unit.name)}}}}},
          {"y", Axis("GiB", true)}}}}}};
  page.AddChart(fmt::format("{}: device memory by state", m.role), std::move(config));
}

std::string LayerName(int64_t layer) {
  switch (layer) {
    case strategies::kEmbeddingLayer:
      return "embedding";
    case strategies::kOutputLayer:
      return "output layer";
    case strategies::kNoLayer:
      return "outside layers";
    default:
      return std::to_string(layer);
  }
}

std::string LayerTable(const std::vector<LayerRow>& layers) {
  std::vector<std::vector<std::string>> rows;
  for (const LayerRow& l : layers) {
    const LayerTimes& t = l.times;
    rows.push_back({std::to_string(l.stage), LayerName(l.layer), MsText(t.forward),
                    MsText(t.backward), MsText(t.recompute), MsText(t.comm), MsText(t.other)});
  }
  return TableHtml({"stage", "layer", "forward ms", "backward ms", "recompute ms",
                    "communication ms", "other ms"},
                   rows, 2);
}

std::string RoleTable(const sim::SimResult& r) {
  std::vector<std::vector<std::string>> rows;
  for (const sim::RoleResult& role : r.roles) {
    rows.push_back({role.role, std::to_string(role.stage), std::to_string(role.ranks),
                    MsText(role.step_time), MsText(role.compute_busy), MsText(role.exposed_comm),
                    MsText(role.idle), ToString(role.peak_memory), ToString(role.capacity)});
  }
  return TableHtml({"role", "stage", "ranks", "step ms", "compute ms", "exposed comm ms", "idle ms",
                    "peak memory", "HBM"},
                   rows, 1);
}

std::string Summary(const sim::SimResult& r) {
  std::string s = fmt::format(
      "<p>Step time <b>{} ms</b>, MFU <b>{:.1f}%</b>, HFU {:.1f}%, {:.0f} tokens/s.</p>\n",
      MsText(r.step_time), 100 * r.mfu, 100 * r.hfu, r.tokens_per_second);
  for (const strategies::Finding& f : r.findings) {
    s += fmt::format("<p class=\"note\">{}: {}</p>\n", EscapeHtml(f.rule), EscapeHtml(f.message));
  }
  return s;
}

// ------------------------------------------------------------------------------ sweep
std::string PointCell(const study::SweepPoint& p) {
  std::string s = p.ok ? "ok" : "error: " + p.error;
  return s;
}

// Curves of `metric` against the first axis, one per combination of the other axes' values.
template <typename F>
Json SweepCurves(const api::SweepResult& sweep, F metric) {
  std::map<std::vector<std::string>, size_t> series_of;
  Json datasets = Json::array();
  const std::vector<std::string>& xs = sweep.axes.front().values;
  for (const study::SweepPoint& p : sweep.points) {
    std::vector<std::string> key(p.values.begin() + 1, p.values.end());
    auto [it, added] = series_of.emplace(key, datasets.size());
    if (added) {
      std::string label;
      for (size_t a = 1; a < sweep.axes.size(); ++a) {
        label +=
            fmt::format("{}{}={}", label.empty() ? "" : ", ", sweep.axes[a].field, p.values[a]);
      }
      Json d = Dataset(label.empty() ? "value" : label, Json::array(), datasets.size());
      for (size_t i = 0; i < xs.size(); ++i) d["data"].push_back(nullptr);
      d["spanGaps"] = false;
      datasets.push_back(std::move(d));
    }
    const size_t x =
        static_cast<size_t>(std::find(xs.begin(), xs.end(), p.values.front()) - xs.begin());
    std::optional<double> v = p.ok ? metric(p) : std::nullopt;
    if (x < xs.size() && v) datasets[it->second]["data"][x] = *v;
  }
  return datasets;
}

template <typename F>
void AddSweepChart(const api::SweepResult& sweep, const std::string& heading,
                   const std::string& unit, F metric, Page& page) {
  Json datasets = SweepCurves(sweep, metric);
  Json config = {
      {"type", "line"},
      {"data", {{"labels", sweep.axes.front().values}, {"datasets", datasets}}},
      {"options", {{"scales", {{"x", Axis(sweep.axes.front().field)}, {"y", Axis(unit)}}}}}};
  page.AddChart(heading, std::move(config));
}

std::string SweepTable(const api::SweepResult& sweep, bool simulated) {
  std::vector<std::string> header = {"#"};
  for (const auto& a : sweep.axes) header.push_back(a.field);
  header.insert(header.end(), {"status", "memory/device", "fits"});
  if (simulated) header.insert(header.end(), {"step ms", "MFU", "sim peak memory"});
  std::vector<std::vector<std::string>> rows;
  auto opt = [](const auto& v, auto f) { return v ? f(*v) : std::string("-"); };
  auto bytes = [](Bytes b) { return ToString(b); };
  for (const study::SweepPoint& p : sweep.points) {
    std::vector<std::string> row = {std::to_string(p.index)};
    row.insert(row.end(), p.values.begin(), p.values.end());
    row.push_back(PointCell(p));
    row.push_back(opt(p.memory_total, bytes));
    row.push_back(opt(p.fits, [](bool f) { return std::string(f ? "yes" : "no"); }));
    if (simulated) {
      row.push_back(opt(p.step_time, [](Duration d) { return MsText(d); }));
      row.push_back(opt(p.mfu, [](double m) { return fmt::format("{:.1f}%", 100 * m); }));
      row.push_back(opt(p.sim_peak_memory, bytes));
    }
    rows.push_back(std::move(row));
  }
  return TableHtml(header, rows, 1 + sweep.axes.size() + 1);
}

// ----------------------------------------------------------------------------- search
Json SearchPoint(const study::RankedCandidate& c, TimeUnit unit) {
  return {{"x", Gib(c.screened.memory)},
          {"y", unit.Of(c.step())},
          {"label", strategies::CandidateLabel(c.screened.candidate)}};
}

}  // namespace

std::string DefaultChartJsPath() { return PLACESIM_CHARTJS_PATH; }

StatusOr<std::string> LoadChartJs(const std::string& path) {
  const std::string file = path.empty() ? DefaultChartJsPath() : path;
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || text.str().empty()) {
    return NotFoundError(fmt::format(
        "{}: cannot read Chart.js, which reports embed; install Debian's libjs-chart.js "
        "(`./dev deps` does)",
        file));
  }
  std::string js = text.str();
  std::string lower = js;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("</script") != std::string::npos) {
    return InvalidArgumentError(
        fmt::format("{}: contains \"</script\", which cannot be inlined in a page", file));
  }
  return js;
}

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

SimulationReport CollectSimulation(std::string title, std::string subject,
                                   const sim::SimResult& result, const TimelineRecorder& recorder) {
  SimulationReport report;
  report.title = std::move(title);
  report.subject = std::move(subject);
  report.result = result;
  for (const sim::RoleResult& role : result.roles) {
    // The default trace ranks: each role's simulated rank is its process (pid = rank).
    const auto pid = static_cast<uint32_t>(role.simulated_rank);
    report.memory.push_back({role.role, role.stage, role.capacity,
                             Downsample(recorder.memory(pid), role.step_time, kMaxMemoryPoints)});
    for (const auto& [layer, times] : recorder.layers(pid)) {
      report.layers.push_back({role.stage, layer, times});
    }
  }
  return report;
}

std::string RenderSimulationHtml(const SimulationReport& report, std::string_view chartjs) {
  Page page{report.title, report.subject, "", Json::array()};
  const sim::SimResult& r = report.result;
  page.body += Summary(r);
  if (!report.note.empty()) {
    page.body += fmt::format("<p class=\"note\">{}</p>\n", EscapeHtml(report.note));
  }
  page.body += "<h2>Step</h2>\n";
  const TimeUnit unit = UnitFor(r.step_time);
  AddStepBreakdown(r, unit, page);
  page.body += RoleTable(r);
  page.body += "<h2>Links</h2>\n";
  AddLinks(r, page);
  if (report.economics) {
    page.body += "<h2>Cost and energy</h2>\n";
    page.body += EconomicsTableHtml(*report.economics);
  }
  page.body += "<h2>Device memory over the step, per pipeline stage</h2>\n<div class=\"grid\">\n";
  for (const StageMemory& m : report.memory) AddMemoryChart(m, unit, page);
  page.body += "</div>\n";
  if (!report.layers.empty()) {
    page.body +=
        "<h2>Per layer</h2>\n<p>Busy time of the simulated rank's ops per layer, summed over "
        "micro-batches (simulated durations; communication is busy, not exposed, time; other = "
        "optimizer, copies and host work).</p>\n";
    page.body += LayerTable(report.layers);
  }
  return PageHtml(page, chartjs);
}

std::string RenderSweepHtml(std::string_view title, const api::SweepResult& sweep,
                            std::string_view chartjs) {
  const bool simulated = sweep.mode == study::SweepMode::kSimulate;
  Page page{std::string(title),
            fmt::format("sweep of {} points ({} mode, {} failed)", sweep.points.size(),
                        study::SweepModeName(sweep.mode), sweep.failed()),
            "", Json::array()};
  if (!sweep.axes.empty()) {
    page.body += "<div class=\"grid\">\n";
    using P = study::SweepPoint;
    if (simulated) {
      Duration longest;
      for (const P& p : sweep.points) longest = std::max(longest, p.step_time.value_or(Duration()));
      const TimeUnit unit = UnitFor(longest);
      AddSweepChart(
          sweep, "Step time", unit.name,
          [unit](const P& p) -> std::optional<double> {
            return p.step_time ? std::optional<double>(unit.Of(*p.step_time)) : std::nullopt;
          },
          page);
      AddSweepChart(
          sweep, "MFU", "%",
          [](const P& p) -> std::optional<double> {
            return p.mfu ? std::optional<double>(100 * *p.mfu) : std::nullopt;
          },
          page);
    }
    AddSweepChart(
        sweep, simulated ? "Peak device memory (simulated)" : "Memory per device", "GiB",
        [simulated](const P& p) -> std::optional<double> {
          const std::optional<Bytes>& b = simulated ? p.sim_peak_memory : p.memory_total;
          return b ? std::optional<double>(Gib(*b)) : std::nullopt;
        },
        page);
    page.body += "</div>\n";
  }
  page.body += "<h2>Points</h2>\n" + SweepTable(sweep, simulated);
  return PageHtml(page, chartjs);
}

std::vector<size_t> ParetoFront(const api::SearchResult& search) {
  std::vector<size_t> order(search.ranked.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& x = search.ranked[a];
    const auto& y = search.ranked[b];
    if (x.screened.memory != y.screened.memory) return x.screened.memory < y.screened.memory;
    return x.step() < y.step();
  });
  std::vector<size_t> front;
  for (size_t i : order) {
    if (front.empty() || search.ranked[i].step() < search.ranked[front.back()].step()) {
      front.push_back(i);
    }
  }
  return front;
}

std::string RenderSearchHtml(std::string_view title, const api::SearchResult& search,
                             std::string_view chartjs) {
  const strategies::SearchStats& s = search.stats;
  Page page{std::string(title),
            fmt::format("{} candidates, {} feasible, {} simulated; the best {} shown (--top)",
                        s.candidates, s.feasible, search.simulated, search.ranked.size()),
            "", Json::array()};
  Duration longest;
  for (const study::RankedCandidate& c : search.ranked) longest = std::max(longest, c.step());
  const TimeUnit unit = UnitFor(longest);
  Json simulated = Json::array();
  Json estimated = Json::array();
  for (const study::RankedCandidate& c : search.ranked) {
    (c.simulated_step ? simulated : estimated).push_back(SearchPoint(c, unit));
  }
  const std::vector<size_t> front = ParetoFront(search);
  Json line = Json::array();
  std::vector<std::vector<std::string>> rows;
  for (size_t i : front) {
    const study::RankedCandidate& c = search.ranked[i];
    line.push_back(SearchPoint(c, unit));
    rows.push_back({strategies::CandidateLabel(c.screened.candidate), std::to_string(i + 1),
                    MsText(c.step()), c.simulated_step ? "simulated" : "estimate",
                    ToString(c.screened.memory), ToString(c.screened.capacity)});
  }
  Json datasets = Json::array();
  Json pareto = Dataset("Pareto front", line, 2);
  pareto["showLine"] = true;
  pareto["pointRadius"] = 5;
  datasets.push_back(std::move(pareto));
  if (!simulated.empty()) {
    Json d = Dataset("simulated", simulated, 0);
    d["pointRadius"] = 4;
    datasets.push_back(std::move(d));
  }
  if (!estimated.empty()) datasets.push_back(Dataset("estimated (not simulated)", estimated, 1));
  Json config = {{"type", "scatter"},
                 {"data", {{"datasets", datasets}}},
                 {"options",
                  {{"scales",
                    {{"x", Axis("memory per device (GiB)")},
                     {"y", Axis(fmt::format("step time ({})", unit.name))}}}}}};
  if (!search.ranked.empty()) page.AddChart("Step time against memory", std::move(config));
  page.body += "<h2>Pareto front</h2>\n" +
               TableHtml({"strategy", "rank", "step ms", "from", "memory", "HBM"}, rows, 1);
  return PageHtml(page, chartjs);
}

Status WriteHtml(const std::string& path, std::string_view html) {
  StatusOr<std::unique_ptr<traces::AtomicOutputFile>> file = traces::AtomicOutputFile::Create(path);
  if (!file.ok()) return file.status();
  (*file)->stream().write(html.data(), static_cast<std::streamsize>(html.size()));
  return (*file)->Commit();
}

}  // namespace placesim::report
