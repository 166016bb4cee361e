#!/usr/bin/env python3
"""Fits the kernel model's fused-attention profile to one SDPA backend's H100 measurements.

Reads the causal `attn,<BACKEND>,...` rows of docs/data/h100_microbench.csv (written by
scripts/microbench.py: b, heads, s, d, causal, forward seconds, forward TFLOP/s, forward +
backward seconds, TFLOP/s) and turns them into the efficiencies the kernel model uses
(strategies/cost/kernel_model.h), of the 989.4 TFLOP/s bf16 peak:
    forward   W / t_fwd                      W = 2 b h s^2 d (causal: half the 4 b h s^2 d)
    backward  2.5 W / (t_fwd+bwd - t_fwd)    the CSV times forward and backward together
Then fits, separately for forward and backward, the model's saturation curve
    e(s) = e_attn * s / (s + k_half)
by least squares on the relative error over every sequence length but the 512-key backward
(the one point a single curve does not follow, docs/calibration.md "Attention"), e_attn on a
0.01 grid and k_half on a 32-key grid, and prints the profile and the markdown table of
docs/calibration.md. With --profile FWD KHALF_FWD BWD KHALF_BWD it prints the table for that
profile instead of fitting (to check the profile in topology/presets.cc).

Usage (from the repository root):
    scripts/attention-fit.py CUDNN_ATTENTION
    scripts/attention-fit.py FLASH_ATTENTION [--profile 0.36 384 0.29 1024]
Output is deterministic.
"""

import argparse
import csv
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
MEASURED = ROOT / "docs" / "data" / "h100_microbench.csv"
PEAK = 989.4e12  # H100 SXM dense bf16 (topology/presets.cc)


def points(backend):
    """[(s, b, forward efficiency, backward efficiency)] in the CSV's order."""
    out = []
    with open(MEASURED, newline="") as f:
        for row in csv.reader(f):
            if row[0] != "attn" or row[1] != backend or row[6] != "1":
                continue
            b, h, s, d = (int(v) for v in row[2:6])
            fwd, both = float(row[7]), float(row[9])
            work = 2.0 * b * h * s * s * d
            out.append((s, b, work / fwd / PEAK, 2.5 * work / (both - fwd) / PEAK))
    if not out:
        raise SystemExit(f"no causal rows for backend {backend} in {MEASURED}")
    return out


def model(e, half, s):
    return e * s / (s + half)


def fit(data):
    """(e, k_half) minimizing the squared relative error over [(s, measured)]."""
    best = None
    for half in range(0, 4097, 32):
        for e100 in range(1, 101):
            e = e100 / 100
            cost = sum((model(e, half, s) / m - 1) ** 2 for s, m in data)
            if best is None or cost < best[0]:
                best = (cost, e, half)
    return best[1], best[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend", help="SDPA backend as the CSV names it, e.g. CUDNN_ATTENTION")
    parser.add_argument("--profile", nargs=4, type=float, metavar=("FWD", "KF", "BWD", "KB"))
    args = parser.parse_args()
    rows = points(args.backend)
    if args.profile:
        ef, kf, eb, kb = args.profile
    else:
        ef, kf = fit([(s, f) for s, _, f, _ in rows])
        eb, kb = fit([(s, bw) for s, _, _, bw in rows if s != 512])
    print(f"{args.backend}: forward {ef:.2f} k_half {kf:g}, backward {eb:.2f} k_half {kb:g}")
    print()
    print("| s | b | forward measured | model | error | backward measured | model | error |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s, b, f, bw in rows:
        mf, mb = model(ef, kf, s), model(eb, kb, s)
        print(f"| {s} | {b} | {f:.3f} | {mf:.3f} | {(mf / f - 1) * 100:+.1f}% "
              f"| {bw:.3f} | {mb:.3f} | {(mb / bw - 1) * 100:+.1f}% |")


if __name__ == "__main__":
    main()
