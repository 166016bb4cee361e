// Pieces every `placesim` subcommand shares: --help detection, flag parsing with
// Boost.Program_options (its exceptions end here), choice checks, error printing, CSV
// quoting and writing output files without ever leaving half of one behind.
// Thread-safety: stateless functions.
#ifndef PLACESIM_SIM_CLI_CLI_COMMON_H_
#define PLACESIM_SIM_CLI_CLI_COMMON_H_

#include <boost/program_options.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"

namespace placesim::sim {

// True when the arguments ask for help; checked before parsing so that `--help` works even
// without the required positional arguments.
bool WantsHelp(const std::vector<std::string>& args);

// The long names of `desc`'s options as typed, "--name": the candidates of "did you mean".
std::vector<std::string> LongOptionNames(const boost::program_options::options_description& desc);

// Parses `args` against `desc` and `pos` into `vm` (which may be null when the options
// write to their own variables). On failure prints "placesim COMMAND: <problem>" (for an
// unknown flag, with the closest valid one: `did you mean "--trace"?`) and a hint to
// `--help`, and returns false. Never throws.
bool ParseArgs(const std::string& command, const std::vector<std::string>& args,
               const boost::program_options::options_description& desc,
               const boost::program_options::positional_options_description& pos, std::ostream& err,
               boost::program_options::variables_map* vm = nullptr);

// True when `value` is one of `allowed`; otherwise prints
// `placesim COMMAND: --FLAG: "VALUE": unknown value; valid: a, b` and returns false.
bool CheckChoice(const std::string& command, const std::string& flag, const std::string& value,
                 const std::vector<std::string>& allowed, std::ostream& err);

// Prints "placesim PREFIX: first line" (or "placesim: first line" when `prefix` is empty)
// and the message's other lines indented by two spaces.
void PrintMessage(std::ostream& err, const std::string& prefix, const std::string& message);

// Prints a failed Status with PrintMessage and returns its exit code: 1 for an internal
// error, 2 for bad input.
int ReportError(std::ostream& err, const std::string& prefix, const Status& status);

// A CSV field, quoted (with doubled quotes) only when it holds a comma, quote or newline.
std::string CsvField(const std::string& s);

// Writes `content` to `path` through a traces::AtomicOutputFile (a temporary next to it,
// renamed over it), so a failed run never leaves a half-written file behind; its messages.
Status WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_CLI_CLI_COMMON_H_
