#!/usr/bin/env python3
"""Prints placesim's collectives beside the published nccl-tests tables of docs/data/.

For every table listed in TABLES below (a docs/data/nccl_tests_*.csv, the calibration scenario
of its cluster and which of its sizes set a preset parameter), runs
`placesim collective SCENARIO --op OP --sizes S --algorithm auto --format json` per published
size and prints a markdown table (size, published time and busbw, placesim's, algorithm and
protocol, time error, and whether the row set a parameter or is held out), then the count
within 10% among the held-out rows. docs/calibration.md ("Collectives") holds its output.

Usage (from the repository root, after `cmake --build --preset release --target placesim`):
    scripts/nccl-tests-table.py [--placesim build/release/placesim]
Output is deterministic: tables in TABLES' order, rows in the CSV's order.
"""

import argparse
import csv
import json
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent

# (title, csv, scenario, extra placesim arguments, sizes that set a parameter: (from, to, what)).
TABLES = [
    ("2 × p4de.24xlarge, all-reduce over 16 GPUs", "nccl_tests_all_reduce_p4de_2node.csv",
     "p4de-2node.textproto", [], [(8, 1024, "EFA latency"), (2**31, 2**31, "EFA bandwidth")]),
    ("2 × p5.48xlarge, all-reduce over 16 GPUs", "nccl_tests_all_reduce_p5_2node.csv",
     "p5-2node.textproto", [], [(8, 1024, "EFA latency")]),
    ("2 × p4d.24xlarge, all-reduce over 16 GPUs (NCCL 2.8.3)",
     "nccl_tests_all_reduce_p4d_2node.csv", "p4d-2node.textproto", [], []),
    ("One 8 × A100 node, send-recv (each GPU to the next, busbw = algbw)",
     "nccl_tests_sendrecv_a100_1node.csv", "p4de-2node.textproto", ["--gpus", "8"], []),
]


def published_rows(name):
    with open(ROOT / "docs" / "data" / name, newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    return list(csv.DictReader(lines))


def predict(placesim, scenario, op, size, extra):
    args = [placesim, "collective", str(ROOT / "tests" / "data" / "calibration" / scenario),
            "--op", op, "--sizes", f"{size}B", "--algorithm", "auto", "--format", "json"] + extra
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["rows"][0]


def role(size, sets):
    for lo, hi, what in sets:
        if lo <= size <= hi:
            return f"sets {what}"
    return "held out"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--placesim", default=str(ROOT / "build" / "release" / "placesim"))
    a = parser.parse_args()
    for title, name, scenario, extra, sets in TABLES:
        print(f"{title} (`{name}`):\n")
        print("| size (B) | published time (µs) | published busbw (GB/s) | placesim time (µs) "
              "| placesim busbw (GB/s) | algorithm, protocol | time error | role |")
        print("|---|---|---|---|---|---|---|---|")
        held = within = 0
        for row in published_rows(name):
            size = int(row["size_bytes"])
            p = predict(a.placesim, scenario, row["op"], size, extra)
            t_pub = float(row["time_us"])
            err = p["time_us"] / t_pub - 1
            r = role(size, sets)
            if r == "held out":
                held += 1
                within += abs(err) <= 0.10
            algorithm = p["algorithm"].removeprefix("auto:")
            print(f"| {size} | {row['time_us']} | {row['busbw_gb_per_s']} | {p['time_us']:.1f} "
                  f"| {p['busbw_gb_per_s']:.2f} | {algorithm}, {p['protocol']} | "
                  f"{err * 100:+.0f}% | {r} |")
        print(f"\n{within} of {held} held-out sizes within 10%.\n")


if __name__ == "__main__":
    main()
