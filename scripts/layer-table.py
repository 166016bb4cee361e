#!/usr/bin/env python3
"""Prints placesim's per-layer compute beside one PyTorch-eager layer measured on an H100.

For every shape of docs/data/h100_layer_eager.csv (scripts/layer_bench.py's output: the MPT
rows' hidden size, heads and micro-batch at sequence 2048), runs `placesim simulate` on
validation/mpt-fsdp.textproto with one DGX-H100 node, four layers and that micro-batch, writes
a trace, and reads the second layer's `forward`, `backward-input` and `backward-weight`
slices of rank 0: the kernel model's time for one layer, forward and forward + backward. The
measured column is the mean of the CSV's two rounds of the `full` layer; `matmul only` is the
same layer without its norms, GELU and residual adds. docs/calibration.md ("A whole layer in
PyTorch eager") holds its output.

Usage (from the repository root, after `cmake --build --preset release --target placesim`):
    scripts/layer-table.py [--placesim build/release/placesim]
Output is deterministic: rows in the CSV's order of shapes.
"""

import argparse
import collections
import csv
import json
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
MEASURED = ROOT / "docs" / "data" / "h100_layer_eager.csv"
SCENARIO = ROOT / "validation" / "mpt-fsdp.textproto"
TRACED_LAYER = 1


def measured():
    """{(layer, pass, variant): mean seconds}, and the shapes in the CSV's order."""
    times = collections.defaultdict(list)
    shapes = {}
    with open(MEASURED, newline="") as f:
        for row in csv.reader(f):
            if row[0].startswith("#"):
                continue
            name, _, pass_name, variant, hidden, heads, micro_batch = row[:7]
            times[(name, pass_name, variant)].append(float(row[8]))
            shapes[name] = (int(hidden), int(heads), int(micro_batch))
    return {k: sum(v) / len(v) for k, v in times.items()}, shapes


def predict(placesim, hidden, heads, micro_batch):
    """placesim's (forward, forward + backward) seconds for one layer of the shape."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = pathlib.Path(tmp) / "trace.json"
        sets = {"cluster.node_preset": "DGX-H100", "model.layers": 4, "model.hidden": hidden,
                "model.heads": heads, "training.micro_batch": micro_batch,
                "training.global_batch": 8 * micro_batch}
        args = [placesim, "simulate", str(SCENARIO), "--trace", str(trace), "--format", "json"]
        for field, value in sets.items():
            args += ["--set", f"{field}={value}"]
        subprocess.run(args, capture_output=True, text=True, check=True)
        events = json.loads(trace.read_text())["traceEvents"]
    slices = {e["name"].split(" ")[0]: e["dur"] / 1e6 for e in events
              if e.get("ph") == "X" and e["pid"] == 0
              and e.get("args", {}).get("layer") == TRACED_LAYER}
    forward = slices["forward"]
    return forward, forward + slices["backward-input"] + slices["backward-weight"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--placesim", default=str(ROOT / "build" / "release" / "placesim"))
    a = parser.parse_args()
    times, shapes = measured()
    print("| layer (h, heads, micro-batch) | forward: eager / placesim (ms) | ratio "
          "| forward + backward: eager / placesim (ms) | ratio | eager, matmul only (ms) |")
    print("|---|---|---|---|---|---|")
    for name, (hidden, heads, micro_batch) in shapes.items():
        fwd, fwd_bwd = predict(a.placesim, hidden, heads, micro_batch)
        m_fwd = times[(name, "forward", "full")]
        m_all = times[(name, "forward+backward", "full")]
        m_mat = times[(name, "forward+backward", "matmul")]
        print(f"| {name} ({hidden}, {heads}, {micro_batch}) | {m_fwd * 1e3:.2f} / {fwd * 1e3:.2f} "
              f"| {fwd / m_fwd:.2f} | {m_all * 1e3:.2f} / {fwd_bwd * 1e3:.2f} "
              f"| {fwd_bwd / m_all:.2f} | {m_mat * 1e3:.2f} |")


if __name__ == "__main__":
    main()
