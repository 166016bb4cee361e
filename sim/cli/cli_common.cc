#include "sim/cli/cli_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <sstream>

#include "base/errors.h"
#include "base/suggest.h"
#include "traces/atomic_output_file.h"

namespace placesim::sim {

namespace po = boost::program_options;

bool WantsHelp(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--help") != args.end() ||
         std::find(args.begin(), args.end(), "-h") != args.end();
}

std::vector<std::string> LongOptionNames(const po::options_description& desc) {
  std::vector<std::string> names;
  for (const auto& option : desc.options()) {
    // Program_options names an option "--name" in its messages; compare like with like.
    if (!option->long_name().empty()) names.push_back("--" + option->long_name());
  }
  return names;
}

namespace {

// The first positional argument past what `pos` takes: the one a user should remove.
std::string ExtraPositional(const std::vector<std::string>& args,
                            const po::options_description& desc,
                            const po::positional_options_description& pos) {
  try {
    const po::parsed_options parsed =
        po::command_line_parser(args).options(desc).allow_unregistered().run();
    const std::vector<std::string> positional =
        po::collect_unrecognized(parsed.options, po::include_positional);
    const size_t taken = pos.max_total_count();
    if (taken < positional.size()) return positional[taken];
  } catch (const po::error&) {
    // The first parse failed for this reason alone; nothing better to name.
  }
  return "?";
}

std::string DescribeArity(unsigned count) {
  if (count == 0) return "the command takes no positional arguments";
  return count == 1 ? "the command takes one positional argument"
                    : "the command takes " + std::to_string(count) + " positional arguments";
}

}  // namespace

bool ParseArgs(const std::string& command, const std::vector<std::string>& args,
               const po::options_description& desc, const po::positional_options_description& pos,
               std::ostream& err, po::variables_map* vm) {
  po::variables_map local;
  po::variables_map& target = vm ? *vm : local;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), target);
    po::notify(target);
  } catch (const po::unknown_option& e) {
    err << "placesim " << command << ": " << e.what()
        << DidYouMean(e.get_option_name(), LongOptionNames(desc)) << "\n"
        << "run `placesim " << command << " --help` for its options\n";
    return false;
  } catch (const po::too_many_positional_options_error&) {
    err << "placesim " << command << ": unexpected argument \"" << ExtraPositional(args, desc, pos)
        << "\" (" << DescribeArity(pos.max_total_count()) << ")\n"
        << "run `placesim " << command << " --help` for its options\n";
    return false;
  } catch (const po::error& e) {
    err << "placesim " << command << ": " << e.what() << "\n"
        << "run `placesim " << command << " --help` for its options\n";
    return false;
  }
  return true;
}

bool CheckChoice(const std::string& command, const std::string& flag, const std::string& value,
                 const std::vector<std::string>& allowed, std::ostream& err) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return true;
  err << "placesim " << command << ": --" << flag << ": \"" << value
      << "\": unknown value; valid: " << JoinNames(allowed) << DidYouMean(value, allowed) << "\n";
  return false;
}

void PrintMessage(std::ostream& err, const std::string& prefix, const std::string& message) {
  std::istringstream lines(message);
  std::string line;
  bool first = true;
  while (std::getline(lines, line)) {
    if (first) {
      err << "placesim" << (prefix.empty() ? "" : " " + prefix) << ": ";
    } else {
      err << "  ";
    }
    err << line << "\n";
    first = false;
  }
}

int ReportError(std::ostream& err, const std::string& prefix, const Status& status) {
  PrintMessage(err, prefix, status.message());
  return status.code() == StatusCode::kInternal ? 1 : 2;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  ASSIGN_OR_RETURN(std::unique_ptr<traces::AtomicOutputFile> file,
                   traces::AtomicOutputFile::Create(path));
  file->stream() << content;
  return file->Commit();
}

}  // namespace placesim::sim
