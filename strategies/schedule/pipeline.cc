// Pipeline parallelism: the point-to-point sends and receives between stages (and the tied
// word embedding's gradient exchange), and the matching of every receive to its send once all
// stages are built. A send is a kSendRecv collective on the pp axis on the kP2p stream, or,
// under blocking_p2p, on the compute stream, where it and the receive the next pass opens with
// are adjacent: one exchange, posted together (ops.h); a receive takes no time of its own.
// Thread-safety: one builder per thread; MatchReceives is a pure function of its input.
#include <map>
#include <tuple>
#include <vector>

#include "base/check.h"
#include "strategies/schedule/internal/stage_builder.h"

namespace placesim::strategies::schedule_internal {

using topology::Axis;

int32_t StageBuilder::Send(State state, Phase phase, int32_t peer, int32_t mb, int32_t chunk,
                           Bytes bytes, std::initializer_list<int32_t> deps) {
  Op op = CollectiveOp(CollectiveKind::kSendRecv, state, GroupKind::kAxis, 2, bytes, phase, -1, mb);
  op.axis = Axis::kPipeline;
  op.stream = ctx_.blocking_p2p ? Stream::kCompute : Stream::kP2p;
  op.peer_stage = peer;
  op.chunk = chunk;
  op.bytes = bytes;
  return Add(op, deps);
}

// The receive that the pass's first compute waits for (matched by MatchReceives).
int32_t StageBuilder::Recv(State state, Phase phase, int32_t peer, int32_t mb, int32_t chunk) {
  Op op = NewOp(OpKind::kRecv, Stream::kCompute, phase, mb);
  op.chunk = chunk;
  op.state = state;
  op.peer_stage = peer;
  op.axis = Axis::kPipeline;
  return Add(op);
}

// Tied word embedding across the pipeline: the first and last stage exchange the gradients of
// their copies (the plan's all-reduce of two: S each way) before updating. Returns the receive.
int32_t StageBuilder::TiedExchange(int32_t sync_done) {
  const Bytes tied = Bytes::Count(pc_.vocab_elements * ctx_.bpp.grads);
  const int32_t peer = first_ ? ctx_.pp - 1 : 0;
  Send(State::kGrads, Phase::kOptimizer, peer, -1, -1, tied, {sync_done});
  return Recv(State::kGrads, Phase::kOptimizer, peer, -1, -1);
}

// The k-th send from stage a to stage b of a given (state, phase, micro-batch) is received by
// the k-th such receive on b. Sends are keyed by (sender, receiver, state, phase, micro-batch,
// receiving chunk): a forward send from the last stage feeds the next chunk of stage 0, a
// backward send from stage 0 the previous chunk of the last stage.
void MatchReceives(std::vector<Schedule>& stages, int pp) {
  using SendKey = std::tuple<int32_t, int32_t, int, int, int32_t, int32_t>;
  std::map<SendKey, int32_t> sends;
  const auto receiving_chunk = [&](int32_t from, const Op& op) {
    if (op.chunk < 0) return op.chunk;
    if (op.phase == Phase::kForward) return from == pp - 1 ? op.chunk + 1 : op.chunk;
    return from == 0 ? op.chunk - 1 : op.chunk;
  };
  for (const Schedule& sch : stages) {
    for (size_t i = 0; i < sch.ops.size(); ++i) {
      const Op& op = sch.ops[i];
      if (op.kind != OpKind::kCollective || op.collective != CollectiveKind::kSendRecv ||
          op.axis != Axis::kPipeline)
        continue;
      sends.emplace(
          SendKey{sch.stage, op.peer_stage, static_cast<int>(op.state), static_cast<int>(op.phase),
                  op.micro_batch, receiving_chunk(sch.stage, op)},
          static_cast<int32_t>(i));
    }
  }
  for (Schedule& sch : stages) {
    for (Op& op : sch.ops) {
      if (op.kind != OpKind::kRecv) continue;
      const auto it = sends.find(SendKey{op.peer_stage, sch.stage, static_cast<int>(op.state),
                                         static_cast<int>(op.phase), op.micro_batch, op.chunk});
      PLACESIM_CHECK(it != sends.end());
      op.match = it->second;
    }
  }
}

}  // namespace placesim::strategies::schedule_internal
