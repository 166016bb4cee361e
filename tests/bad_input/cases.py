"""The bad-input cases (see bad_input_test.py): each a dict of
  category  files | flags | overrides | results | outputs
  name      unique within its category
  args      placesim's arguments; {ex} is examples/, {tmp} the case's scratch folder
  expect    substrings the message must hold: the field, flag or argument at fault
  files     {name: text or bytes} written into the scratch folder first
  dirs      folders created there first
Generated from tables so that every field and every command gets the same treatment.
"""
import json

TINY = "{ex}/tiny-gpt-zero3-2gpu.textproto"
MOE = "{ex}/mixtral-8x7b-ep8.textproto"

# ------------------------------------------------------------------------ --set overrides
# (field, bad values): integers out of their range, text where a number goes, numbers that
# do not fit int64, non-finite and absurd reals, quantities without or with a wrong unit.
INT_FIELDS = {
    "model.layers": ["-1", "1000000", "eight", "99999999999999999999", "1.5"],
    "model.hidden": ["-1", "100000000000", "x", "1e9999"],
    "model.heads": ["-3", "1000000", "many"],
    "model.vocab": ["-1", "1000000000000", "v"],
    "model.seq_len": ["-1", "1000000000", "0x10", "100000000000000000000"],
    "model.ffn_hidden": ["-1", "1000000000000"],
    "model.kv_heads": ["-1", "7", "1000000"],
    "model.head_dim": ["-1", "1000000000"],
    "model.experts": ["-1", "10000000"],
    "model.parameter_count": ["-1", "9223372036854775807"],
    "training.micro_batch": ["0", "-1", "10000000", "one", "9223372036854775808"],
    "training.global_batch": ["0", "-4", "10000000000", "3"],
    "training.virtual_stages": ["0", "100000", "2147483648"],
    "cluster.nodes": ["0", "-1", "100000000", "2147483648", "lots"],
    "cluster.node.gpus": ["0", "-1", "100000", "3.5"],
    "cluster.node.nics": ["-1", "100000"],
    "cluster.node.nvswitches": ["-1", "100000"],
    "strategy.dp": ["-1", "100000000"],
    "strategy.tp": ["0", "-2", "100000000"],
    "strategy.pp": ["0", "-1", "100000000"],
    "strategy.cp": ["0", "-1"],
    "strategy.layers_per_unit": ["0", "-1", "1000000"],
    "strategy.shard_group_size": ["-1", "3"],
    "simulation.prefetch_depth": ["-1", "65", "1000000"],
    "simulation.zero3_max_reuse_distance": ["-1", "1000000000000001", "lots"],
}
REAL_FIELDS = {
    "cluster.node.gpu.matmul_efficiency": ["0", "-0.5", "1.5", "nan", "inf", "abc"],
    "cluster.node.gpu.memory_efficiency": ["0", "2", "nan", "-inf"],
    "economics.pue": ["0.5", "-1", "nan", "1e300"],
    "economics.price_per_gpu_hour_usd": ["-1", "nan", "inf"],
}
MOE_REAL_FIELDS = {
    "model.capacity_factor": ["-1", "nan", "inf", "1e300", "1001"],
    "model.routing_imbalance": ["0.5", "nan", "1e300"],
    "model.top_k": ["0", "-1", "9", "100000"],
}
QUANTITY_FIELDS = {
    "cluster.node.gpu.hbm_capacity": ["-80 GB", "80", "80 parsecs", "1e400 GB", "GB", ""],
    "cluster.node.gpu.hbm_bandwidth": ["-1 TB/s", "3.35", "fast", "0 TB/s"],
    "cluster.node.gpu.peak_bf16": ["-1 TFLOP/s", "989", "1e999 TFLOP/s"],
    "cluster.node.gpu.kernel_overhead": ["-5 us", "5", "5 lightyears"],
    "simulation.host_time_per_layer": ["-1 us", "150", "2 s"],
    "simulation.host_time_per_layer_backward": ["-1 us", "150", "2 s"],
    "cluster.node.nvlink_bandwidth": ["-1 GB/s", "450", "x GB/s"],
    "cluster.node.nvlink_latency": ["-1 us", "1", "soon"],
    "cluster.node.nic_bandwidth": ["-400 Gb/s", "400", "400 Gb/h"],
    "cluster.node.pcie_bandwidth": ["-64 GB/s", "64"],
    "cluster.node.host_memory": ["-1 TB", "2"],
    "simulation.gradient_bucket_size": ["-25 MB", "25", "big"],
}
# Quantities that parse but lie outside the field's physical range
# (sim/scenario/internal/field_ranges.h): each just past an end, and absurd ones.
PHYSICAL_RANGE_FIELDS = {
    "cluster.node.gpu.hbm_capacity": ["1 B", "1048575 B", "2 PiB"],
    "cluster.node.gpu.hbm_bandwidth": ["1 b/s", "0.99 MB/s", "1001 TB/s"],
    "cluster.node.gpu.peak_fp32": ["1 FLOP/s", "1001 PFLOP/s"],
    "cluster.node.gpu.peak_tf32": ["0.5 GFLOP/s"],
    "cluster.node.gpu.peak_bf16": ["1 FLOP/s", "999 MFLOP/s", "1001 PFLOP/s"],
    "cluster.node.gpu.peak_fp16": ["1 KFLOP/s"],
    "cluster.node.gpu.peak_fp8": ["2000 PFLOP/s"],
    "cluster.node.gpu.kernel_overhead": ["1e6 s", "1.5 s"],
    "cluster.node.gpu.matmul_efficiency": ["1e-8", "0.0009"],
    "cluster.node.gpu.memory_efficiency": ["1e-12", "0.0005"],
    "cluster.node.nvlink_bandwidth": ["1 Kb/s", "1001 TB/s"],
    "cluster.node.nvlink_latency": ["1e6 s", "1001 ms"],
    "cluster.node.pcie_bandwidth": ["1 B/s", "2000 TB/s"],
    "cluster.node.pcie_latency": ["2 s"],
    "cluster.node.host_memory": ["1 KiB", "2 PiB"],
    "cluster.node.host_memory_bandwidth": ["10 B/s"],
    "cluster.node.host_flops": ["1 FLOP/s"],
    "cluster.node.nvme_capacity": ["1 KB", "1000 PiB"],
    "cluster.node.nvme_bandwidth": ["1 KB/s"],
    "cluster.node.nic_bandwidth": ["1 Kbps", "1e20 Gb/s"],
    "cluster.node.nic_latency": ["3 s"],
    "cluster.fabric.link_bandwidth": ["1 b/s", "1e9 GB/s"],
    "cluster.fabric.switch_latency": ["1e6 s"],
    "cluster.fabric.oversubscription": ["1e300", "1001"],
    "simulation.gradient_bucket_size": ["2 TiB", "1 PiB"],
}
ENUM_FIELDS = {
    "training.precision": ["PRECISION_FP64", "fp4", "7"],
    "training.optimizer": ["OPTIMIZER_LION", "sgd"],
    "training.recompute": ["RECOMPUTE_SOME"],
    "training.pipeline_schedule": ["PIPELINE_SCHEDULE_ZIGZAG"],
}
BAD_PATHS = ["model.layerz", "modle.layers", "cluster.node.gpu.hbm", "training", "model.",
             ".model.layers", "cluster.links[99999999999].bandwidth", "strategy.dp.x",
             "model.layers[0]", "a" * 300]
BAD_ASSIGNMENTS = ["model.layers", "=5", "model.layers=", "model.layers==3"]


def override_cases():
    out = []
    tables = [(TINY, INT_FIELDS), (TINY, REAL_FIELDS), (MOE, MOE_REAL_FIELDS),
              (TINY, QUANTITY_FIELDS), (TINY, PHYSICAL_RANGE_FIELDS), (TINY, ENUM_FIELDS)]
    for scenario, table in tables:
        for field, values in table.items():
            for v in values:
                out.append({"name": f"{field}={v}", "args": ["analyze", scenario, "--set",
                                                              f"{field}={v}"],
                            "expect": [field]})
    # Every range message names the range's ends, for the ranges of PHYSICAL_RANGE_FIELDS.
    for c in out:
        field = c["args"][-1].split("=")[0]
        if field in PHYSICAL_RANGE_FIELDS and c["args"][-1].split("=", 1)[1] in \
                PHYSICAL_RANGE_FIELDS[field]:
            c["expect"] = c["expect"] + ["must be", "between"]
    for path in BAD_PATHS:
        out.append({"name": f"path {path[:40]}", "args": ["analyze", TINY, "--set", f"{path}=1"],
                    "expect": [path[:40]]})
    for a in BAD_ASSIGNMENTS:
        out.append({"name": f"assignment {a}", "args": ["analyze", TINY, "--set", a],
                    "expect": ["--set"]})
    # The overflow reproducers (products of fields that leave int64).
    out += [
        {"name": "global_batch=1e9", "args": ["analyze", "{ex}/llama3-70b-tp8-zero1.textproto",
                                              "--set", "training.global_batch=1000000000"],
         "expect": ["training.global_batch"]},
        {"name": "capacity_factor=1e300", "args": ["analyze", MOE, "--set",
                                                   "model.capacity_factor=1e300"],
         "expect": ["model.capacity_factor"]},
        {"name": "seq_len=1e8 micro_batch=1e6",
         "args": ["analyze", TINY, "--set", "model.seq_len=100000000", "--set",
                  "training.micro_batch=1000000", "--set", "training.global_batch=2000000"],
         "expect": ["model.seq_len", "training.micro_batch"]},
        {"name": "simulate seq_len=1e8 micro_batch=1e6",
         "args": ["simulate", TINY, "--set", "model.seq_len=100000000", "--set",
                  "training.micro_batch=1000000", "--set", "training.global_batch=2000000"],
         "expect": ["model.seq_len", "training.micro_batch"]},
        {"name": "flash seq_len=1e8 micro_batch=1e6",
         "args": ["analyze", TINY, "--set", "model.seq_len=100000000", "--set",
                  "training.micro_batch=1000000", "--set", "training.global_batch=2000000",
                  "--set", "training.flash_attention=true"],
         "expect": ["model.seq_len", "training.micro_batch", "MLP activations"]},
        {"name": "heads x seq_len^2", "args": ["analyze", TINY, "--set", "model.seq_len=50000000",
                                               "--set", "model.heads=512", "--set",
                                               "model.hidden=512"],
         "expect": ["model.heads", "model.seq_len"]},
    ]
    for c in out:
        c["category"] = "overrides"
    return out


# ---------------------------------------------------------------------------- scenario files
def file_cases(source_dir):
    with open(f"{source_dir}/examples/tiny-gpt-zero3-2gpu.textproto") as f:
        tiny = f.read()
    with open(f"{source_dir}/examples/llama3-70b-tp8-zero1.json") as f:
        llama_json = f.read()
    assert '"nodes": 8' in llama_json
    textprotos = {
        "layers as text": ('model { layers: "eight" }', ["model.layers"]),
        "layers out of range": ("model { layers: 99999999999999999999999 }", ["model.layers"]),
        "hidden as real": ("model { hidden: 1.5 }", ["model.hidden"]),
        "nodes too big for int32": ("cluster { nodes: 4294967296 }", ["cluster.nodes"]),
        "gpus as text": ('cluster { node { gpus: "two" } }', ["cluster.node.gpus"]),
        "efficiency as text": ('cluster { node { gpu { matmul_efficiency: "high" } } }',
                               ["cluster.node.gpu.matmul_efficiency"]),
        "unknown field": ("model { layerz: 2 }", ["layerz"]),
        "unknown top-level": ("modle { layers: 2 }", ["modle"]),
        "unknown enum": ("training { precision: PRECISION_FP64 }", ["PRECISION_FP64"]),
        "unclosed block": ("model { layers: 2", ["end of input"]),
        "stray brace": ("}", ["1:1"]),
        "bool as number": ("training { sequence_parallel: 7 }", ["training.sequence_parallel"]),
        "string unterminated": ('name: "tiny', [":1:12: Unexpected end of string"]),
        "deep nesting": ("model {" * 10000, ["model"]),
        "repeated scalar twice": ('name: "a" name: "b"', ["name"]),
        "binary garbage": (b"\x00\xff\xfe\x01" * 64, [":1:1: Invalid control characters"]),
        "utf8 garbage in string": (b'name: "\xff\xfe"', ["name"]),
        "tiny with bad micro_batch": (tiny.replace("micro_batch: 4", "micro_batch: -4"),
                                      ["training.micro_batch"]),
        "tiny with zero layers": (tiny.replace("layers: 2", "layers: 0"), ["model.layers"]),
        "tiny with huge seq_len": (tiny.replace("seq_len: 512", "seq_len: 100000000000"),
                                   ["model.seq_len"]),
        "unknown preset": (tiny.replace('preset: "zero3"', 'preset: "zero4"'), ["zero4"]),
        "unknown node preset": (tiny.replace('"DGX-H100"', '"DGX-H900"'), ["DGX-H900"]),
    }
    jsons = {
        "json layers as text": ('{"model": {"layers": "eight"}}', ["model.layers"]),
        "json unknown field": ('{"model": {"layerz": 2}}', ["layerz"]),
        "json syntax": ('{"model": {"layers": 2,}}', ["JSON"]),
        "json array at top": ("[1, 2]", ["json"]),
        "json deep": ('{"model": ' + "[" * 100000 + "]" * 100000 + "}", ["json"]),
        "json empty": ("", ["json"]),
        "json nodes negative": (llama_json.replace('"nodes": 8', '"nodes": -1'), ["cluster.nodes"]),
        "json layers huge": ('{"model": {"layers": 1e30}}', ["model.layers"]),
    }
    out = []
    for command in ["analyze", "simulate"]:
        for name, (text, expect) in textprotos.items():
            out.append({"name": f"{command} {name}", "args": [command, "{tmp}/s.textproto"],
                        "files": {"s.textproto": text}, "expect": expect})
        for name, (text, expect) in jsons.items():
            out.append({"name": f"{command} {name}", "args": [command, "{tmp}/s.json"],
                        "files": {"s.json": text}, "expect": expect})
    commands = {"analyze": [], "simulate": [], "sweep": ["--vary", "model.layers=1,2"],
                "search": [], "topology": [], "export": ["--to", "megatron"],
                "report": ["-o", "{tmp}/r.html"]}
    for command, extra in commands.items():
        out.append({"name": f"{command} missing file",
                    "args": [command, "{tmp}/nope.textproto"] + extra,
                    "expect": ["nope.textproto"]})
        out.append({"name": f"{command} directory", "args": [command, "{tmp}/d"] + extra,
                    "dirs": ["d"], "expect": ["d"]})
    out.append({"name": "analyze huge file", "args": ["analyze", "{tmp}/big.textproto"],
                "files": {"big.textproto": "#" * (80 << 20)}, "expect": ["big.textproto"]})
    for c in out:
        c["category"] = "files"
    return out


# ------------------------------------------------------------------------------------ flags
def flag_cases():
    rows = [
        (["analyze"], ["scenario"]),
        (["analyze", TINY, "--format", "xml"], ["--format", "xml"]),
        (["analyze", TINY, "--bogus"], ["bogus"]),
        (["analyze", TINY, "extra"], ["extra"]),
        (["simulate", TINY, "--network", "carrier-pigeon"], ["carrier-pigeon"]),
        (["simulate", TINY, "--format", "yaml"], ["yaml"]),
        (["simulate", TINY, "--trace-ranks", "0-7"], ["--trace-ranks"]),
        (["simulate", TINY, "--trace", "{tmp}/t.json", "--trace-ranks", "5"], ["5"]),
        (["simulate", TINY, "--trace", "{tmp}/t.json", "--trace-ranks", "x"], ["x"]),
        (["simulate", TINY, "--trace", "{tmp}/t.json", "--trace-ranks", "1-0"], ["1-0"]),
        (["sweep", TINY], ["--vary"]),
        (["sweep", TINY, "--vary", "model.layers"], ["model.layers"]),
        (["sweep", TINY, "--vary", "model.layerz=1,2"], ["model.layerz"]),
        (["sweep", TINY, "--vary", "model.layers=1..1000000000"], ["model.layers"]),
        (["sweep", TINY, "--vary", "model.layers=5..1"], ["model.layers"]),
        (["sweep", TINY, "--vary", "model.layers=1..4:+0"], ["step"]),
        (["sweep", TINY, "--vary", "model.layers=1..4:x1"], ["factor"]),
        (["sweep", TINY, "--vary", "training.micro_batch=9223372036854775807..9223372036854775808"],
         ["9223372036854775808 is out of range"]),
        (["sweep", TINY, "--vary", "training.micro_batch=1..99999999999999999999"],
         ["99999999999999999999", "out of range"]),
        (["sweep", TINY, "--vary", "training.micro_batch=-9223372036854775807..9223372036854775807"],
         ["training.micro_batch"]),
        (["sweep", TINY, "--vary", "model.layers=1,2", "--shard", "3/2"], ["--shard"]),
        (["sweep", TINY, "--vary", "model.layers=1,2", "--shard", "0/0"], ["--shard"]),
        (["sweep", TINY, "--vary", "model.layers=1,2", "--shard", "x"], ["--shard"]),
        (["sweep", TINY, "--vary", "model.layers=1,2", "--jobs", "-1"], ["--jobs"]),
        (["sweep", TINY, "--vary", "model.layers=1,2", "--mode", "guess"], ["guess"]),
        (["search", TINY, "--top", "-1"], ["--top"]),
        (["search", TINY, "--fix", "tp=x"], ["tp"]),
        (["compare", "a.json"], ["BASELINE.json CURRENT.json"]),
        (["compare", "a.json", "b.json", "c.json"], ["BASELINE.json CURRENT.json"]),
        (["compare", "{tmp}/a.json", "{tmp}/a.json", "--threshold", "2"], ["--threshold"]),
        (["compare", "{tmp}/a.json", "{tmp}/a.json", "--threshold", "-1%"], ["--threshold"]),
        (["compare", "{tmp}/a.json", "{tmp}/a.json", "--format", "xml"], ["xml"]),
        (["merge"], ["no input"]),
        (["merge", "{tmp}/a.json", "--format", "xml"], ["xml"]),
        (["presets", "extra"], ["\"extra\""]),
        (["presets", "--format", "yaml"], ["yaml"]),
        (["topology", TINY, "--format", "svg"], ["svg"]),
        (["frobnicate"], ["frobnicate"]),
        (["analyze", TINY, "--set"], ["--set"]),
        (["analyze", TINY, "--report"], ["--report"]),
    ]
    out = []
    for i, (args, expect) in enumerate(rows):
        out.append({"name": f"{i:02d} {' '.join(args)[:60]}", "args": args, "expect": expect,
                    "files": {"a.json": '{"step_time_s": 1}'}, "category": "flags"})
    return out


# ----------------------------------------------------------------------------- JSON results
def sweep_shard(**changes):
    doc = {"kind": "sweep", "version": 1, "fingerprint": "f", "total_points": 1,
           "shard": {"index": 1, "count": 1}, "mode": "analyze",
           "vary": [{"field": "model.layers", "values": ["2"]}],
           "points": [{"index": 0, "values": {"model.layers": "2"}, "status": "ok",
                       "fits": True, "memory_total_bytes": 1, "comm_bytes_per_device_per_step": 1,
                       "correctness_ok": True, "error": None}]}
    for path, value in changes.items():
        target = doc
        keys = path.split("/")
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target[k]
        last = keys[-1]
        if value is DELETE:
            del target[last]
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return json.dumps(doc)


DELETE = object()


def result_cases():
    merge_bad = {
        "kind number": ({"kind": 5}, "$.kind"),
        "kind other": ({"kind": "search"}, "$.kind"),
        "version text": ({"version": "one"}, "$.version"),
        "version 2": ({"version": 2}, "$.version"),
        "no version": ({"version": DELETE}, "$.version"),
        "fingerprint number": ({"fingerprint": 7}, "$.fingerprint"),
        "total_points text": ({"total_points": "1"}, "$.total_points"),
        "total_points real": ({"total_points": 1.5}, "$.total_points"),
        "shard array": ({"shard": [1, 1]}, "$.shard"),
        "shard.index text": ({"shard/index": "1"}, "$.shard.index"),
        "shard.count missing": ({"shard/count": DELETE}, "$.shard.count"),
        "no vary": ({"vary": DELETE}, "$.vary"),
        "vary object": ({"vary": {}}, "$.vary"),
        "vary field number": ({"vary/0/field": 3}, "$.vary[0].field"),
        "vary element text": ({"vary/0": "x"}, "$.vary[0]"),
        "points object": ({"points": {}}, "$.points"),
        "point text": ({"points/0": "p"}, "$.points[0]"),
        "point index text": ({"points/0/index": "0"}, "$.points[0].index"),
        "point values text": ({"points/0/values": "2"}, "$.points[0].values"),
        "point value number": ({"points/0/values/model.layers": 2},
                               "$.points[0].values.model.layers"),
        "point value missing": ({"points/0/values": {}}, "$.points[0].values.model.layers"),
        "point status number": ({"points/0/status": 3}, "$.points[0].status"),
        "point error object": ({"points/0/error": {}}, "$.points[0].error"),
        "point bytes real": ({"points/0/memory_total_bytes": 1e300},
                             "$.points[0].memory_total_bytes"),
        "point bytes array": ({"points/0/comm_bytes_per_device_per_step": [1]},
                              "$.points[0].comm_bytes_per_device_per_step"),
        "point fits object": ({"points/0/fits": {}}, "$.points[0].fits"),
        "point economics text": ({"points/0/economics": "cheap"}, "$.points[0].economics"),
        "point economics value": ({"points/0/economics": {"cost_usd": "1"}},
                                  "$.points[0].economics.cost_usd"),
        "mode number": ({"mode": 1}, "$.mode"),
        "point missing status": ({"points/0/status": DELETE}, "$.points[0].status"),
    }
    out = []
    for name, (changes, path) in merge_bad.items():
        text = sweep_shard(**changes)
        for fmt in ["json", "table", "csv"]:
            out.append({"name": f"merge {name} {fmt}",
                        "args": ["merge", "{tmp}/s.json", "--format", fmt],
                        "files": {"s.json": text}, "expect": [path]})
    compare_bad = {
        "kind number": ('{"kind": 5, "step_time_s": 1}', "$.kind"),
        "sweep point value": ('{"kind": "sweep", "points": [{"values": {"tp": 2}}]}',
                              "$.points[0].values.tp"),
        "sweep status": ('{"kind": "sweep", "points": [{"values": {}, "status": 3}]}',
                         "$.points[0].status"),
        "sweep no values": ('{"kind": "sweep", "points": [{"status": "ok"}]}',
                            "$.points[0].values"),
        "benchmark run_type": ('{"benchmarks": [{"name": "b", "run_type": 7}]}',
                               "$.benchmarks[0].run_type"),
        "benchmark name": ('{"benchmarks": [{"name": 1}]}', "$.benchmarks[0].name"),
        "unknown shape": ('{"x": 1}', "not a result"),
        "array": ("[]", "not a result"),
        "syntax": ('{"step_time_s": }', "not valid JSON"),
        "empty": ("", "not valid JSON"),
        "deep": ('{"step_time_s": ' + "[" * 30000 + "]" * 30000 + "}", "nested deeper"),
        "deep objects": ('{"step_time_s": ' + '{"a":' * 20000 + "1" + "}" * 20001,
                         "nested deeper"),
        "binary": ("\x00\x01\x02", "not valid JSON"),
        "number past a double": ('{"step_time_s": 1e400}', "number overflow"),
        "sweep points with the same values": (
            '{"kind": "sweep", "points": [{"values": {"tp": "2"}, "status": "ok"}, '
            '{"values": {"tp": "2"}, "status": "ok"}]}', "the same values as $.points[0]"),
        "benchmark named twice": ('{"benchmarks": [{"name": "b", "real_time": 1}, '
                                  '{"name": "b", "real_time": 2}]}', "the same benchmark"),
        "benchmark time past a double": (
            '{"benchmarks": [{"name": "b", "real_time": 101e30000}]}', "number overflow"),
    }
    for name, (text, expect) in compare_bad.items():
        for order in ["baseline", "current"]:
            files = {"bad.json": text, "good.json": '{"step_time_s": 1}'}
            args = ["compare", "{tmp}/bad.json", "{tmp}/good.json"]
            if order == "current":
                args = ["compare", "{tmp}/good.json", "{tmp}/bad.json"]
            out.append({"name": f"compare {name} as {order}", "args": args, "files": files,
                        "expect": [expect]})
        out.append({"name": f"merge {name}", "args": ["merge", "{tmp}/bad.json"],
                    "files": {"bad.json": text}, "expect": []})
    out += [
        {"name": "merge deep 100000", "args": ["merge", "{tmp}/d.json"],
         "files": {"d.json": sweep_shard()[:-1] + ', "x": ' + "[" * 100000 + "]" * 100000 + "}"},
         "expect": ["nested deeper"]},
        {"name": "merge missing a million shards", "args": ["merge", "{tmp}/s.json"],
         "files": {"s.json": sweep_shard(**{"total_points": 1000000,
                                            "shard": {"index": 1, "count": 1000000}})},
         "expect": ["missing shards", "more (999999 in all)"]},
        {"name": "merge shard out of range", "args": ["merge", "{tmp}/s.json"],
         "files": {"s.json": sweep_shard(**{"shard": {"index": 5, "count": 1}})},
         "expect": ["shard 5/1"]},
        {"name": "merge total_points negative", "args": ["merge", "{tmp}/s.json"],
         "files": {"s.json": sweep_shard(**{"total_points": -1})}, "expect": ["out of range"]},
        {"name": "merge total_points int64 max", "args": ["merge", "{tmp}/s.json"],
         "files": {"s.json": sweep_shard(**{"total_points": 9223372036854775807})},
         "expect": ["out of range"]},
        {"name": "merge same shard twice", "args": ["merge", "{tmp}/s.json", "{tmp}/s.json"],
         "files": {"s.json": sweep_shard()}, "expect": ["overlaps"]},
        {"name": "merge point index wrong", "args": ["merge", "{tmp}/s.json"],
         "files": {"s.json": sweep_shard(**{"points/0/index": 7})}, "expect": ["point 7"]},
        {"name": "merge missing file", "args": ["merge", "{tmp}/nope.json"],
         "expect": ["nope.json"]},
        {"name": "merge directory", "args": ["merge", "{tmp}/d"], "dirs": ["d"],
         "expect": ["is a directory"]},
        {"name": "compare missing file", "args": ["compare", "{tmp}/nope.json", "{tmp}/nope.json"],
         "expect": ["nope.json"]},
        {"name": "compare directory", "args": ["compare", "{tmp}/d", "{tmp}/d"], "dirs": ["d"],
         "expect": ["is a directory"]},
        {"name": "compare over a million metrics",
         "args": ["compare", "{tmp}/m.json", "{tmp}/m.json"],
         "files": {"m.json": '{"step_time_s": [' + ",".join(["1"] * 1000001) + "]}"},
         "expect": ["more than 1000000 numeric values"]},
        {"name": "compare kinds differ", "args": ["compare", "{tmp}/a.json", "{tmp}/b.json"],
         "files": {"a.json": '{"step_time_s": 1}', "b.json": '{"scenario": 1, "roles": []}'},
         "expect": ["same command"]},
    ]
    for c in out:
        c["category"] = "results"
        if not c["expect"]:
            c["expect"] = ["bad.json"]
    return out


# ----------------------------------------------------------------------------- output paths
def output_cases():
    out = []
    targets = {
        "missing folder": ("{tmp}/no/such/dir/out", [], "no/such/dir"),
        "a folder": ("{tmp}/d", ["d"], "d"),
        "under a file": ("{tmp}/f/out", [], "f/out"),
    }
    flags = [
        ("simulate", "--trace", [], "--trace"),
        ("topology", "--dot", [], "--dot"),
        ("report", "-o", [], "cannot write"),
        ("sweep", "--report", ["--vary", "model.layers=1,2"], "--report"),
    ]
    for command, flag, extra, named in flags:
        for name, (path, dirs, expect) in targets.items():
            out.append({"name": f"{command} {flag} {name}",
                        "args": [command, TINY, flag, path] + extra, "dirs": dirs,
                        "files": {"f": "a file"}, "expect": [named, expect]})
    for c in out:
        c["category"] = "outputs"
    return out


def all_cases(source_dir):
    cases = (override_cases() + file_cases(source_dir) + flag_cases() + result_cases() +
             output_cases())
    seen = set()
    for c in cases:
        key = (c["category"], c["name"])
        assert key not in seen, key
        seen.add(key)
    return cases
