#!/usr/bin/env python3
"""One transformer layer in PyTorch eager on one GPU, for docs/calibration.md ("A whole layer
in PyTorch"): the composition check of the kernel model. The GEMM and attention profiles are
calibrated kernel by kernel; this times the layer they are composed into, as a framework runs
it, at the shapes of the MosaicML MPT rows of docs/validation.md (sequence 2048, the rows'
micro-batches), so a gap between placesim's per-layer time and the published step can be put
either on the layer's kernels or on what lies outside one layer.

The layer is a pre-LayerNorm GPT block without biases (MPT's `no_bias`): LayerNorm, the QKV
projection, causal scaled-dot-product attention (the flash backend), the output projection and
a residual add, then LayerNorm, h -> 4h, exact GELU, 4h -> h and a residual add; bf16 weights
and activations. Two variants: `full`, and `matmul` (the four projections and the attention
core alone, without the norms, GELU and residual adds), whose difference is what the
memory-bound kernels cost. Each is timed forward alone (no autograd) and forward + backward
(input and weight gradients), over 300 ms of back-to-back runs after 100 ms of warm-up, in two
passes; a 5 s GEMM load first brings the GPU to its sustained (power-limited) clock, where a
training run sits, and nvidia-smi reads the clock after each pass. Writes $OUT/layer.csv;
docs/data/h100_layer_eager.csv is its output on an H100.
"""
import datetime
import os
import subprocess
import torch

DEV = "cuda"
DT = torch.bfloat16
ROWS = []

# name, hidden, heads, micro-batch: the llm-foundry H100 rows of validation/runs.json.
SHAPES = [("mpt-1b", 2048, 16, 20), ("mpt-3b", 2560, 32, 6), ("mpt-7b", 4096, 32, 6),
          ("mpt-13b", 5120, 40, 2), ("mpt-30b", 7168, 64, 14), ("mpt-70b", 8192, 64, 8)]
SEQ = 2048


def emit(*fields):
    line = ",".join(map(str, fields))
    ROWS.append(line)
    print(line, flush=True)


def smi(query):
    out = subprocess.run(["nvidia-smi", "--query-gpu=" + query, "--format=csv,noheader"],
                         capture_output=True, text=True).stdout
    return out.strip().replace(",", ";")


def timed(fn, warm=0.1, span=0.3):
    """Seconds per call of fn over `span` seconds of back-to-back calls after `warm`."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    once = max(start.elapsed_time(end) / 1e3, 1e-6)
    for _ in range(int(warm / once)):
        fn()
    n = max(5, int(span / once))
    start.record()
    for _ in range(n):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / n


class Block(torch.nn.Module):
    def __init__(self, h, heads, full):
        super().__init__()
        self.heads, self.full = heads, full
        mk = lambda i, o: torch.nn.Linear(i, o, bias=False, device=DEV, dtype=DT)
        self.qkv, self.out, self.up, self.down = mk(h, 3 * h), mk(h, h), mk(h, 4 * h), mk(4 * h, h)
        self.ln1 = torch.nn.LayerNorm(h, bias=False, device=DEV, dtype=DT)
        self.ln2 = torch.nn.LayerNorm(h, bias=False, device=DEV, dtype=DT)

    def forward(self, x):
        b, s, h = x.shape
        y = self.ln1(x) if self.full else x
        q, k, v = self.qkv(y).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
            a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = self.out(a.transpose(1, 2).reshape(b, s, h))
        x = x + a if self.full else a
        y = self.ln2(x) if self.full else x
        y = self.up(y)
        y = self.down(torch.nn.functional.gelu(y) if self.full else y)
        return x + y if self.full else y


def layer_flops(b, h):
    # Forward: 24 b s h^2 for the four projections, plus the causal attention core's
    # 4 b s^2 h / 2 (QK^T and PV over the unmasked half); forward + backward is three times it.
    return 24 * b * SEQ * h * h + 2 * b * SEQ * SEQ * h


def main():
    props = torch.cuda.get_device_properties(0)
    emit("#env", datetime.datetime.now(datetime.timezone.utc).isoformat(), props.name, props.multi_processor_count,
         torch.__version__, torch.version.cuda, torch.backends.cudnn.version(),
         smi("driver_version,clocks.max.sm,power.limit"))
    emit("#columns", "layer", "round", "pass", "variant", "hidden", "heads", "micro_batch", "seq",
         "seconds", "model_tflops")
    a = torch.randn(8192, 8192, device=DEV, dtype=DT)
    stop = datetime.datetime.now() + datetime.timedelta(seconds=5)
    while datetime.datetime.now() < stop:
        for _ in range(50):
            a @ a
        torch.cuda.synchronize()
    emit("#clocks", "warm", smi("clocks.sm,power.draw,temperature.gpu"))
    for pass_no in (0, 1):
        for name, h, heads, b in SHAPES:
            x = torch.randn(b, SEQ, h, device=DEV, dtype=DT)
            g = torch.randn_like(x)
            for variant in ("full", "matmul"):
                blk = Block(h, heads, variant == "full")
                xg = x.clone().requires_grad_(True)

                def fwd():
                    with torch.no_grad():
                        blk(x)

                def fwd_bwd():
                    blk(xg).backward(g)

                f = layer_flops(b, h)
                t = timed(fwd)
                emit(name, pass_no, "forward", variant, h, heads, b, SEQ, "%.4e" % t,
                     "%.1f" % (f / t / 1e12))
                t = timed(fwd_bwd)
                emit(name, pass_no, "forward+backward", variant, h, heads, b, SEQ, "%.4e" % t,
                     "%.1f" % (3 * f / t / 1e12))
                del blk, xg
                torch.cuda.empty_cache()
        emit("#clocks", pass_no, smi("clocks.sm,power.draw,temperature.gpu"))
    with open(os.path.join(os.environ.get("OUT", "."), "layer.csv"), "w") as f:
        f.write("\n".join(ROWS) + "\n")


if __name__ == "__main__":
    main()
