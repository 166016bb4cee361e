#!/usr/bin/env python3
"""Host time to issue one transformer layer's kernels from PyTorch eager, with and without
PyTorch FSDP (fully_shard), for docs/overheads.md ("Host dispatch").

The GPU is first held busy by a long sleep kernel (torch.cuda._sleep), so that every launch of
the timed pass only queues: the wall time of `y = model(x)` is then the host's time to issue
the forward, and of `y.backward(g)` the backward's, free of any wait on the GPU. A row records
whether the GPU was still busy when the pass had been issued (`gpu_busy_after` 1); a 0 would
mean the sleep was too short and the time includes GPU work. Each figure is the median of 10
passes after 3 untimed ones; the model is `layers` GPT blocks of scripts/layer_bench.py
(LayerNorm, QKV, FlashAttention-2 SDPA, output projection, LayerNorm, MLP; bf16, sequence
2048, micro-batch 1), and the per-layer figure is the pass's time over `layers`. FSDP runs on
one rank (NCCL, world size 1): each block and the root are fully_shard units, so every block
still issues its all-gather before its forward and backward and its reduce-scatter after its
backward. Also records the host's CPU model. Writes $OUT/host_dispatch.csv.

Rows: host,<variant>,hidden,heads,layers,forward s per layer,backward s per layer,gpu_busy_after
"""

import datetime
import os
import platform
import statistics
import time

import torch
import torch.distributed as dist

from layer_bench import SEQ, Block, emit, ROWS, smi

SLEEP_CYCLES = 200_000_000  # about 0.1 s at the H100's 1.98 GHz: longer than any pass's issue


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip().replace(",", ";")
    return platform.processor()


def host_times(model, x, g, layers):
    for _ in range(3):
        model(x).backward(g)
    torch.cuda.synchronize()
    forward, backward, busy = [], [], 1
    for _ in range(10):
        torch.cuda._sleep(SLEEP_CYCLES)
        t0 = time.perf_counter()
        y = model(x)
        t1 = time.perf_counter()
        y.backward(g)
        t2 = time.perf_counter()
        busy &= int(not torch.cuda.current_stream().query())
        torch.cuda.synchronize()
        forward.append((t1 - t0) / layers)
        backward.append((t2 - t1) / layers)
    return statistics.median(forward), statistics.median(backward), busy


def measure(variant, h, heads, layers):
    from torch.distributed.fsdp import fully_shard
    blocks = torch.nn.Sequential(*[Block(h, heads, True) for _ in range(layers)])
    if variant == "fsdp":
        for block in blocks:
            fully_shard(block)
        fully_shard(blocks)
    x = torch.randn(1, SEQ, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn_like(x)
    fwd, bwd, busy = host_times(blocks, x, g, layers)
    emit("host", variant, h, heads, layers, "%.4e" % fwd, "%.4e" % bwd, busy)
    del blocks
    torch.cuda.empty_cache()


def main():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    props = torch.cuda.get_device_properties(0)
    emit("#env", datetime.datetime.now(datetime.timezone.utc).isoformat(), props.name,
         torch.__version__, torch.version.cuda, smi("driver_version"), cpu_model(),
         os.cpu_count())
    for variant in ("eager", "fsdp"):
        for h, heads in ((2048, 16), (4096, 32), (8192, 64)):
            for layers in (1, 4):
                measure(variant, h, heads, layers)
    dist.destroy_process_group()
    with open(os.path.join(os.environ.get("OUT", "."), "host_dispatch.csv"), "w") as f:
        f.write("\n".join(ROWS) + "\n")


if __name__ == "__main__":
    main()
