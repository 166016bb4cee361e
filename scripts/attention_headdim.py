#!/usr/bin/env python3
"""Fused causal attention on one GPU against head width: the measurements behind the kernel
model's head-width term (docs/calibration.md, "Attention against head width").

For each SDPA backend a training stack runs on Hopper (cuDNN fused attention and
FlashAttention-2) and each head width d in 32..256, times causal scaled-dot-product attention
forward and forward + backward over b x s = 16384 tokens and 32 query heads, s from 1024 to
8192; then, at d = 128, the same with 8 key/value heads (grouped-query attention, Llama 3's
shape). Each timing: one warm-up, then back-to-back runs for about 50 ms between CUDA events
(as scripts/microbench.py). Rows use microbench.py's layout, with the key/value head count
appended:

    attn,BACKEND,b,heads,s,d,causal,t_fwd,TFLOP/s fwd,t_fwd+bwd,TFLOP/s fwd+bwd,kv_heads

where the work is 4 b h s^2 d x 1/2 (causal) forward and 3.5 times that forward + backward.
A configuration the backend refuses prints `error` and the reason. Writes
$OUT/attention_headdim.csv (or ./attention_headdim.csv) and prints the same rows. Needs
PyTorch with CUDA; docs/data/h100_attention_headdim.csv is its output on an H100.
"""

import datetime
import os
import subprocess

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention

DEVICE = "cuda"
DTYPE = torch.bfloat16
TOKENS = 16384
HEADS = 32
BACKENDS = ("CUDNN_ATTENTION", "FLASH_ATTENTION")
HEAD_WIDTHS = (32, 64, 80, 96, 128, 160, 192, 256)
SEQUENCES = (1024, 2048, 4096, 8192)

rows = []


def emit(*fields):
    line = ",".join(str(f) for f in fields)
    rows.append(line)
    print(line, flush=True)


def seconds_per_call(fn):
    """Mean seconds of one call of fn: one warm-up, then ~50 ms of back-to-back calls."""
    fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    once = max(start.elapsed_time(end) / 1e3, 1e-7)
    n = max(3, min(100, int(0.05 / once)))
    start.record()
    for _ in range(n):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / n


def measure(backend, s, d, kv_heads):
    b = max(1, TOKENS // s)
    try:
        q = torch.randn(b, HEADS, s, d, device=DEVICE, dtype=DTYPE, requires_grad=True)
        k, v = (torch.randn(b, kv_heads, s, d, device=DEVICE, dtype=DTYPE, requires_grad=True)
                for _ in range(2))
        gqa = kv_heads != HEADS

        def forward():
            return scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)

        with sdpa_kernel(getattr(SDPBackend, backend)):
            t_fwd = seconds_per_call(forward)
            grad = torch.randn_like(q)
            t_both = seconds_per_call(
                lambda: torch.autograd.grad(forward(), (q, k, v), grad))
        work = 4 * b * HEADS * s * s * d * 0.5
        emit("attn", backend, b, HEADS, s, d, 1, f"{t_fwd:.4e}", f"{work / t_fwd / 1e12:.1f}",
             f"{t_both:.4e}", f"{3.5 * work / t_both / 1e12:.1f}", kv_heads)
    except Exception as error:  # a backend refusing a shape is a result, not a failure
        emit("attn", backend, b, HEADS, s, d, 1, "error", repr(error)[:100].replace(",", ";"),
             "", "", kv_heads)
    torch.cuda.empty_cache()


def main():
    props = torch.cuda.get_device_properties(0)
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem,power.limit",
         "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    emit("#env", datetime.datetime.now(datetime.timezone.utc).isoformat(), props.name,
         props.multi_processor_count, torch.__version__, torch.version.cuda,
         torch.backends.cudnn.version(), smi.replace(",", ";"))
    for backend in BACKENDS:
        for d in HEAD_WIDTHS:
            for s in SEQUENCES:
                measure(backend, s, d, HEADS)
        for s in (4096, 8192):
            measure(backend, s, 128, 8)
    path = os.path.join(os.environ.get("OUT", "."), "attention_headdim.csv")
    with open(path, "w") as out:
        out.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
