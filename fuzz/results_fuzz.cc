// libFuzzer harness: the JSON readers of `placesim compare` and `placesim merge`, through the
// command line's own entry point (RunCli) on a file holding the input.
//
// Findings: crashes, hangs, sanitizer reports, and exit code 1 — comparing a file with itself
// can regress nothing, and merge has no exit code 1, so 1 there is an internal error (an
// exception that escaped a reader). The file is one per process, rewritten per input.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/commands.h"

namespace {

void Run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = placesim::sim::RunCli(args, out, err);
  if (code == 1) {
    std::fprintf(stderr, "placesim %s exited 1:\n%s\n", args[0].c_str(), err.str().c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path =
      "/tmp/placesim_results_fuzz_" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  Run({"compare", path, path, "--format", "json"});
  Run({"merge", path, "--format", "table"});
  Run({"merge", path, path, "--format", "csv"});
  return 0;
}
