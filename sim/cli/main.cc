// Entry point of the `placesim` executable: forwards to RunCli, with a last-resort catch so
// that even a bug reports "internal error" instead of an unexplained abort.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "sim/cli/commands.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    int code = placesim::sim::RunCli(args, std::cout, std::cerr);
    std::cout.flush();
    return code;
  } catch (const std::exception& e) {
    std::cerr << "placesim: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "placesim: internal error: unknown exception\n";
  }
  return placesim::sim::kExitFailure;
}
