#!/usr/bin/env python3
"""Where one PyTorch-eager transformer layer's time goes, kernel by kernel: the layer of
scripts/layer_bench.py (imported from it) at the MPT-3B and MPT-7B shapes, forward + backward,
under torch.profiler after a 5 s GEMM load (sustained clock) and 20 warm-up iterations; 10
profiled iterations. Prints, per shape, every CUDA kernel's total time per iteration and call
count, grouped by name, longest first, and writes $OUT/layer_profile.csv;
docs/data/h100_layer_profile.csv is its output on an H100.
"""
import collections
import datetime
import os
import torch
from torch.profiler import ProfilerActivity, profile

import layer_bench as lb

ITERS = 10


def main():
    rows = ["shape,kernel,calls_per_iter,us_per_iter"]
    a = torch.randn(8192, 8192, device=lb.DEV, dtype=lb.DT)
    stop = datetime.datetime.now() + datetime.timedelta(seconds=5)
    while datetime.datetime.now() < stop:
        for _ in range(50):
            a @ a
        torch.cuda.synchronize()
    for name, h, heads, b in lb.SHAPES:
        if name not in ("mpt-3b", "mpt-7b"):
            continue
        blk = lb.Block(h, heads, True)
        x = torch.randn(b, lb.SEQ, h, device=lb.DEV, dtype=lb.DT, requires_grad=True)
        g = torch.randn_like(x)
        for _ in range(20):
            blk(x).backward(g)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(ITERS):
                blk(x).backward(g)
            torch.cuda.synchronize()
        total = collections.Counter()
        calls = collections.Counter()
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA:
                total[ev.name] += ev.device_time
                calls[ev.name] += 1
        for kernel, us in total.most_common():
            label = kernel.replace(",", ";")[:150]
            rows.append(f"{name},{label},{calls[kernel] / ITERS:g},{us / ITERS:.1f}")
            print(rows[-1], flush=True)
        print(f"{name},TOTAL,,{sum(total.values()) / ITERS:.1f}", flush=True)
        rows.append(f"{name},TOTAL,,{sum(total.values()) / ITERS:.1f}")
        del blk, x, g
        torch.cuda.empty_cache()
    with open(os.path.join(os.environ.get("OUT", "."), "layer_profile.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
