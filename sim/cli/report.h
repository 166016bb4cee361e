// `placesim report SCENARIO -o FILE.html`: simulates one step and writes the HTML report of it
// (sim/report/html_report.h); `--report FILE` on sweep and search writes theirs.
#ifndef PLACESIM_SIM_CLI_REPORT_H_
#define PLACESIM_SIM_CLI_REPORT_H_

#include <ostream>
#include <string>
#include <vector>

namespace placesim::sim {

int RunReport(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_CLI_REPORT_H_
