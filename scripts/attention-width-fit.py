#!/usr/bin/env python3
"""Fits the kernel model's head-width factors of one fused-attention kernel to the H100
measurements of scripts/attention_headdim.py, and prints docs/calibration.md's table of
predicted against measured efficiency at every head width and sequence length.

The model (strategies/cost/kernel_model.h): a kernel runs a head of width d as the narrowest
of its compiled widths 32, 64, 96, 128, 192, 256 that holds it (d_pad), so it does d_pad / d
times the work, at the d = 128 profile's efficiency times a factor f(d_pad) per pass:

    e(d, s) = e_attn * s / (s + k_half) * f(d_pad) * d / d_pad

f(128) = 1. Each f(w) is the geometric mean over s of the measured e(w, s) / e(128, s) at
that width (same sitting), rounded to 0.01; widths 80 and 160 are not compiled widths and so
are held out: they check the padding. The CSV (docs/data/h100_attention_headdim.csv) holds
two back-to-back runs; each configuration's time is the mean of the two. The efficiencies
are of the work done, as in scripts/attention-fit.py: forward W / t_fwd, backward
2.5 W / (t_fwd+bwd - t_fwd), W = 2 b h s^2 d (causal), of the 989.4 TFLOP/s bf16 peak.

With --data CSV the factors are still those of the H100 file, and the table compares the
model with CSV's rows instead (the same script's output on another device: the H200 check).

Usage (from the repository root), with the shipped d = 128 profile of that kernel:
    scripts/attention-width-fit.py CUDNN_ATTENTION --profile 0.64 384 0.55 768
    scripts/attention-width-fit.py FLASH_ATTENTION --profile 0.35 384 0.30 896
    scripts/attention-width-fit.py CUDNN_ATTENTION --profile 0.64 384 0.55 768 \
        --data docs/data/h200_attention_headdim.csv
Output is deterministic.
"""

import argparse
import csv
import math
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
MEASURED = ROOT / "docs" / "data" / "h100_attention_headdim.csv"
PEAK = 989.4e12  # H100 SXM dense bf16 (topology/presets.cc)
WIDTHS = (32, 64, 96, 128, 192, 256)  # the kernel model's compiled head widths


def padded(d):
    return next(w for w in WIDTHS if w >= d)


def efficiencies(backend, path=MEASURED):
    """{(d, s): (b, forward efficiency, backward efficiency)}, multi-head rows only."""
    times = {}
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if row[0] != "attn" or row[1] != backend or row[7] == "error":
                continue
            b, h, s, d, kv = (int(row[i]) for i in (2, 3, 4, 5, 11))
            if kv != h:
                continue
            times.setdefault((d, s), (b, h, []))[2].append((float(row[7]), float(row[9])))
    if not times:
        raise SystemExit(f"no rows for backend {backend} in {path}")
    out = {}
    for (d, s), (b, h, runs) in sorted(times.items()):
        fwd = sum(t for t, _ in runs) / len(runs)
        both = sum(t for _, t in runs) / len(runs)
        work = 2.0 * b * h * s * s * d
        out[(d, s)] = (b, work / fwd / PEAK, 2.5 * work / (both - fwd) / PEAK)
    return out


def factors(eff, sequences, pass_index):
    """{width: f(width)} for the compiled widths, rounded to 0.01."""
    out = {}
    for w in WIDTHS:
        logs = [math.log(eff[(w, s)][pass_index] / eff[(128, s)][pass_index]) for s in sequences]
        out[w] = round(math.exp(sum(logs) / len(logs)), 2)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend", help="SDPA backend as the CSV names it, e.g. CUDNN_ATTENTION")
    parser.add_argument("--profile", nargs=4, type=float, required=True,
                        metavar=("FWD", "KF", "BWD", "KB"), help="the shipped d = 128 profile")
    parser.add_argument("--data", type=pathlib.Path, help="compare with this CSV's rows")
    args = parser.parse_args()
    ef, kf, eb, kb = args.profile
    eff = efficiencies(args.backend)
    sequences = sorted({s for _, s in eff})
    fwd, bwd = factors(eff, sequences, 1), factors(eff, sequences, 2)
    if args.data:
        eff = efficiencies(args.backend, args.data)
    print(f"{args.backend} head-width factors, forward / backward:")
    print(", ".join(f"{w}: {fwd[w]:.2f} / {bwd[w]:.2f}" for w in WIDTHS))
    print()
    print("| d | s | forward measured | model | error | backward measured | model | error |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    for (d, s), (_, mf_meas, mb_meas) in sorted(eff.items()):
        p = padded(d)
        mf = ef * s / (s + kf) * fwd[p] * d / p
        mb = eb * s / (s + kb) * bwd[p] * d / p
        errf, errb = mf / mf_meas - 1, mb / mb_meas - 1
        worst = max(worst, abs(errf), abs(errb))
        print(f"| {d} | {s} | {mf_meas:.3f} | {mf:.3f} | {errf * 100:+.1f}% "
              f"| {mb_meas:.3f} | {mb:.3f} | {errb * 100:+.1f}% |")
    print()
    print(f"worst |error|: {worst * 100:.1f}%")


if __name__ == "__main__":
    main()
