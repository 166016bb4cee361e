// Helpers shared by the tests that drive `placesim` subcommands in-process: the path of a
// shipped example, running a command and capturing its exit code and output, and writing a
// scenario to a temporary file.
#ifndef PLACESIM_TESTS_SIM_CLI_TEST_UTIL_H_
#define PLACESIM_TESTS_SIM_CLI_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace placesim::sim::cli_test {

// A file of examples/, found through PLACESIM_SOURCE_DIR, never the working directory.
inline std::string Example(const std::string& name) {
  return std::string(PLACESIM_SOURCE_DIR) + "/examples/" + name;
}

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

// Any subcommand entry point: RunCli, RunSweep, RunMerge, RunCompare, RunSearch.
using Command = int (*)(const std::vector<std::string>&, std::ostream&, std::ostream&);

inline Outcome RunCommand(Command command, const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int code = command(args, out, err);
  return {code, out.str(), err.str()};
}

// A path under TempDir() private to the running test: ctest runs tests in parallel
// processes, so two tests must never write the same file.
inline std::string TempPath(const std::string& name) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string prefix = info ? std::string(info->test_suite_name()) + "." + info->name() + "-" : "";
  for (char& c : prefix) {
    if (c == '/') c = '_';  // parameterized test names
  }
  return ::testing::TempDir() + "/" + prefix + name;
}

// Whether an atomic write of `path` left a temporary beside it: traces::AtomicOutputFile names
// them "<path>.<pid>.<n>.tmp".
inline bool LeftTemporary(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string prefix = p.filename().string() + ".";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(p.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(prefix) && name.ends_with(".tmp")) return true;
  }
  return false;
}

// Writes `text` to TempPath(name) and returns the path.
inline std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace placesim::sim::cli_test

#endif  // PLACESIM_TESTS_SIM_CLI_TEST_UTIL_H_
