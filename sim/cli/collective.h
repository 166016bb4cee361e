// `placesim collective SCENARIO --op KIND --sizes FROM..TO:xF [--gpus N | --group AXIS]`: one
// collective on the scenario's cluster, alone, over a range of message sizes, per collective
// algorithm, printed as nccl-tests prints it (size, count, type, time, algbw, busbw), so a table
// can be put beside a real nccl-tests run. Each size is simulated by the executor on the
// scenario's network model, exactly as a training step's collective is, protocol cost included.
//
// Sizes follow nccl-tests: the size is the buffer S of all-reduce, the whole gathered (or
// scattered) buffer of all-gather and reduce-scatter, what each rank sends in all in all-to-all,
// and what each rank sends to its ring neighbour in send-recv; count = S / 4 (float).
// algbw = S / time; busbw = algbw x 2(n-1)/n (all-reduce), x (n-1)/n (all-gather,
// reduce-scatter, all-to-all), x 1 (send-recv) (nccl-tests doc/PERFORMANCE.md).
//
// Thread-safety: a command runs on its own state.
#ifndef PLACESIM_SIM_CLI_COLLECTIVE_H_
#define PLACESIM_SIM_CLI_COLLECTIVE_H_

#include <ostream>
#include <string>
#include <vector>

namespace placesim::sim {

// Exit codes as every command's: 0 ok, 2 bad input (a message naming the flag, the value and
// what is allowed).
int RunCollective(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_CLI_COLLECTIVE_H_
