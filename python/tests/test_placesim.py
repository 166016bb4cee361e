"""Tests of the placesim Python module: every function once with an expected value derived in
its comment, an error path for loading and for a bad override, and the promise that each
result is the dict of the command line's `--format json` (compared with the CLI's output).

The examples are found through PLACESIM_SOURCE_DIR and the CLI through PLACESIM_CLI, both set
by CMake (python/CMakeLists.txt), never through the working directory.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import placesim

SOURCE_DIR = os.environ["PLACESIM_SOURCE_DIR"]
CLI = os.environ["PLACESIM_CLI"]


def example(name):
    return os.path.join(SOURCE_DIR, "examples", name)


ZERO = example("zero-7.5b.textproto")
TINY = example("tiny-gpt-zero3-2gpu.textproto")

# The ZeRO paper's 7.5B model (model states only): Ψ parameters, 16 bytes each under bf16
# mixed precision with Adam (2 Θ + 2 G + 12 Ω), on N = 64 GPUs.
PSI = 7_500_000_000
N = 64

# A 4-layer GPT on the 8 GPUs of one DGX-H100 (the facade's search test workload).
SMALL_GPT = """
  name: "search-small-gpt"
  cluster { node_preset: "DGX-H100" nodes: 1 }
  model { layers: 4 hidden: 512 heads: 8 vocab: 1024 seq_len: 512 }
  training { global_batch: 128 micro_batch: 1 }
  strategy { preset: "ddp" }
"""


def cli_json(*args):
    """The CLI's `--format json` output of `args`, parsed."""
    out = subprocess.run([CLI, *args, "--format", "json"], capture_output=True, text=True)
    return json.loads(out.stdout)


def cli_error(*args):
    """The CLI's diagnostics for `args`, which must fail with exit code 2 (bad input)."""
    out = subprocess.run([CLI, *args], capture_output=True, text=True)
    assert out.returncode == 2, out
    return out.stderr


def as_cli_prints(message, prefix="placesim: "):
    """A Status message as the CLI prints it: its first line after the prefix, the others
    indented by two spaces (sim/cli/cli_common.h PrintMessage)."""
    first, *rest = message.split("\n")
    return "".join([prefix + first + "\n"] + ["  " + line + "\n" for line in rest])


class LoadTest(unittest.TestCase):
    def test_load_reads_a_file_and_keeps_its_name_and_text(self):
        s = placesim.load(ZERO)
        self.assertEqual(s.name, ZERO)
        with open(ZERO) as f:
            self.assertEqual(s.text, f.read())
        self.assertEqual(s.overrides, [])

    def test_loads_reads_textproto(self):
        s = placesim.loads(SMALL_GPT, format="textproto")
        # 8 GPUs of one DGX-H100, DDP: dp = 8.
        self.assertEqual(placesim.analyze(s)["scenario"]["mesh"]["dp"], 8)

    def test_a_dict_loads_like_the_json_file_it_came_from(self):
        path = example("llama3-70b-tp8-zero1.json")
        with open(path) as f:
            document = json.load(f)
        self.assertEqual(placesim.analyze(placesim.load(document)), placesim.analyze(path))
        # The same dict as JSON text gives the same scenario.
        self.assertEqual(placesim.analyze(placesim.loads(json.dumps(document))),
                         placesim.analyze(path))

    def test_a_missing_file_is_a_scenario_not_found_error(self):
        with self.assertRaises(placesim.ScenarioNotFoundError) as caught:
            placesim.load(example("no-such-scenario.textproto"))
        # Also a ScenarioError (a ValueError), for callers that catch every bad input.
        self.assertIsInstance(caught.exception, placesim.ScenarioError)
        self.assertIsInstance(caught.exception, ValueError)
        self.assertIn("no-such-scenario.textproto", str(caught.exception))

    def test_a_parse_error_names_the_line_and_column(self):
        with self.assertRaises(placesim.ScenarioError) as caught:
            placesim.loads('model { layers: "four" }', name="bad.textproto")
        self.assertTrue(issubclass(placesim.ScenarioError, ValueError))
        self.assertRegex(str(caught.exception), r"^bad\.textproto:1:\d+: ")

    def test_an_unknown_format_names_the_valid_ones(self):
        with self.assertRaisesRegex(placesim.ScenarioError, "valid: auto, textproto, json"):
            placesim.loads(SMALL_GPT, format="yaml")

    def test_an_invalid_scenario_message_is_the_clis(self):
        bad = placesim.load(ZERO, overrides=["strategy.preset=zero4"])
        with self.assertRaises(placesim.ScenarioError) as caught:
            placesim.analyze(bad)
        message = str(caught.exception)
        self.assertIn('strategy.preset: "zero4": unknown strategy preset; '
                      "valid: ddp, zero1, zero2, zero3, fsdp", message)
        self.assertEqual(as_cli_prints(message),
                         cli_error("analyze", ZERO, "--set", "strategy.preset=zero4"))


class OverrideTest(unittest.TestCase):
    def test_with_overrides_returns_a_new_scenario(self):
        zero3 = placesim.load(ZERO)
        ddp = zero3.with_overrides(["strategy.preset=ddp"])
        self.assertEqual(ddp.overrides, ["strategy.preset=ddp"])
        self.assertEqual(zero3.overrides, [])
        # DDP replicates all 16Ψ bytes of model state: 120 GB, more than the A100's 80 GB.
        memory = placesim.analyze(ddp)["memory"]
        self.assertEqual(memory["total_bytes"], 16 * PSI)
        self.assertFalse(memory["fits"])

    def test_a_bad_override_names_the_field_and_the_valid_ones(self):
        with self.assertRaises(placesim.ScenarioError) as caught:
            placesim.load(ZERO).with_overrides(["strategy.nonsense=1"])
        message = str(caught.exception)
        self.assertTrue(message.startswith("bad --set override:\n"), message)
        self.assertIn('strategy.nonsense: unknown field "nonsense" in strategy; valid: preset, dp',
                      message)
        self.assertEqual(as_cli_prints(message),
                         cli_error("analyze", ZERO, "--set", "strategy.nonsense=1"))

    def test_load_applies_overrides_in_order(self):
        s = placesim.load(ZERO, ["strategy.preset=ddp", "strategy.preset=zero2"])
        # ZeRO-2: 2Ψ of parameters replicated, 14Ψ of gradients and optimizer over 64.
        self.assertEqual(placesim.analyze(s)["memory"]["total_bytes"], 2 * PSI + 14 * PSI // N)


class AnalyzeTest(unittest.TestCase):
    def test_zero3_holds_16_psi_over_n(self):
        plan = placesim.analyze(ZERO)
        # ZeRO-3 shards all of it: 16 x 7.5e9 / 64 = 1.875 GB.
        self.assertEqual(plan["memory"]["total_bytes"], 16 * PSI // N)
        self.assertEqual(plan["memory"]["total_bytes"], 1_875_000_000)
        self.assertTrue(plan["correctness"]["ok"])

    def test_is_the_clis_json(self):
        self.assertEqual(placesim.analyze(ZERO), cli_json("analyze", ZERO))

    def test_accepts_a_path_a_scenario_or_a_dict(self):
        self.assertEqual(placesim.analyze(placesim.load(ZERO)), placesim.analyze(ZERO))


class SimulateTest(unittest.TestCase):
    def test_is_deterministic(self):
        self.assertEqual(placesim.simulate(TINY), placesim.simulate(TINY))

    def test_zero3_gathers_twice_what_it_reduce_scatters(self):
        by_kind = placesim.simulate(TINY)["comm"]["by_kind"]
        # ZeRO-3 all-gathers the parameters before forward and again before backward, and
        # reduce-scatters the gradients once: 2 x the reduce-scatter bytes (3Ψ vs DDP's 2Ψ).
        self.assertEqual(by_kind["all-gather"]["bytes"], 2 * by_kind["reduce-scatter"]["bytes"])

    def test_is_the_clis_json(self):
        self.assertEqual(placesim.simulate(TINY), cli_json("simulate", TINY))
        self.assertEqual(placesim.simulate(TINY, network="analytic"),
                         cli_json("simulate", TINY, "--network", "analytic"))

    def test_a_multi_stage_step_is_the_clis_json(self):
        # Two pipeline stages, so two roles: the "roles" layout of the CLI.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "small-pp2.textproto")
            with open(path, "w") as f:
                f.write(SMALL_GPT.replace('preset: "ddp"', 'preset: "ddp" pp: 2'))
            result = placesim.simulate(path)
            self.assertEqual([role["stage"] for role in result["roles"]], [0, 1])
            self.assertEqual(result, cli_json("simulate", path))

    def test_an_unknown_network_names_the_valid_ones(self):
        with self.assertRaisesRegex(placesim.ScenarioError, "valid: .*flow.*analytic"):
            placesim.simulate(TINY, network="ethernet")

    def test_releases_the_gil(self):
        # While a simulation runs in a thread, this thread keeps running: the largest pause
        # between its loop turns stays well below the simulation's own duration. With the GIL
        # held, one pause would last the whole call.
        path = example("llama3-70b-tp8-zero1.textproto")
        begin = time.perf_counter()
        placesim.simulate(path)
        duration = time.perf_counter() - begin
        worker = threading.Thread(target=placesim.simulate, args=(path,))
        last, longest = time.perf_counter(), 0.0
        worker.start()
        while worker.is_alive():
            now = time.perf_counter()
            longest, last = max(longest, now - last), now
            time.sleep(0.001)
        worker.join()
        if duration > 0.05:  # too short a call to tell apart from the 5 ms switch interval
            self.assertLess(longest, duration / 2)


class SweepTest(unittest.TestCase):
    def test_zero_stages_match_the_paper(self):
        study = placesim.sweep(ZERO, ["strategy.preset=ddp,zero1,zero2,zero3"])
        totals = [p["memory_total_bytes"] for p in study["points"]]
        # The ZeRO paper's Figure 1: DDP 16Ψ; ZeRO-1 4Ψ + 12Ψ/N; ZeRO-2 2Ψ + 14Ψ/N;
        # ZeRO-3 16Ψ/N (120, 31.4, 16.6, 1.88 GB).
        self.assertEqual(totals, [16 * PSI, 4 * PSI + 12 * PSI // N, 2 * PSI + 14 * PSI // N,
                                  16 * PSI // N])
        self.assertEqual([p["fits"] for p in study["points"]], [False, True, True, True])

    def test_a_dict_of_lists_is_the_same_sweep(self):
        listed = placesim.sweep(ZERO, ["strategy.preset=zero1,zero3", "cluster.nodes=4,8"])
        mapped = placesim.sweep(ZERO, {"strategy.preset": ["zero1", "zero3"],
                                       "cluster.nodes": [4, 8]})
        self.assertEqual(listed, mapped)
        # The last field varies fastest: (zero1, 4), (zero1, 8), (zero3, 4), (zero3, 8).
        self.assertEqual([p["values"] for p in mapped["points"]][1],
                         {"strategy.preset": "zero1", "cluster.nodes": "8"})

    def test_is_the_clis_json(self):
        vary = "cluster.node.nvlink_bandwidth=450 GB/s,900 GB/s"
        self.assertEqual(
            placesim.sweep(TINY, [vary], mode="simulate", jobs=2),
            cli_json("sweep", TINY, "--vary", vary, "--mode", "simulate", "--jobs", "2"))

    def test_economics_are_the_clis_and_priced_per_point(self):
        sets = ["economics.price_per_gpu_hour_usd=2", "economics.steps_to_train=1000"]
        vary = "training.micro_batch=2,4"
        study = placesim.sweep(placesim.load(TINY, sets), [vary], mode="simulate")
        args = [a for s in sets for a in ("--set", s)]
        self.assertEqual(study, cli_json("sweep", TINY, "--vary", vary, "--mode", "simulate",
                                         *args))
        for p in study["points"]:
            e = p["economics"]
            # 1,000 steps on 2 GPUs: GPU-hours = 2 x 1,000 x step / 3,600 s; cost = that x $2.
            gpu_hours = 2 * 1000 * p["step_time_s"] / 3600
            self.assertAlmostEqual(e["gpu_hours"], gpu_hours, places=12)
            self.assertAlmostEqual(e["cost_usd"], 2 * gpu_hours, places=12)
        rows = placesim.search(placesim.load(TINY, sets), simulate_top=1, top=3)["rows"]
        # An estimated row is priced at its estimated step, at the TDP bound.
        self.assertEqual([r["economics"]["tdp_bound"] for r in rows],
                         [r["source"] == "estimated" for r in rows])
        self.assertNotIn("economics", placesim.sweep(TINY, [vary])["points"][0])

    def test_a_value_the_field_refuses_names_the_field_and_the_rule(self):
        with self.assertRaises(placesim.ScenarioError) as caught:
            placesim.sweep(ZERO, {"cluster.nodes": [4, "many"]})
        message = str(caught.exception)
        self.assertTrue(message.startswith("bad input:\n"), message)
        self.assertIn('--vary cluster.nodes: "many": must be an integer', message)

    def test_a_point_that_fails_is_a_point_with_its_error(self):
        # "zero9" is a string the field takes; the preset lookup refuses it at that point only.
        points = placesim.sweep(ZERO, {"strategy.preset": ["zero1", "zero9"]})["points"]
        self.assertEqual([p["status"] for p in points], ["ok", "error"])
        self.assertIn("valid: ddp, zero1", points[1]["error"])

    def test_an_unknown_mode_names_the_valid_ones(self):
        with self.assertRaisesRegex(placesim.ScenarioError, "valid: analyze, simulate"):
            placesim.sweep(ZERO, ["cluster.nodes=4,8"], mode="train")


class SearchTest(unittest.TestCase):
    def test_ranks_strategies_that_fit(self):
        result = placesim.search(placesim.loads(SMALL_GPT), simulate_top=2, top=5)
        rows = result["rows"]
        self.assertTrue(1 <= len(rows) <= 5)
        self.assertEqual(rows[0]["vs_best"], "best")
        # Every row's mesh covers the 8 GPUs of the node.
        for row in rows:
            self.assertEqual(row["dp"] * row["tp"] * row["pp"] * row["cp"], 8)
            self.assertGreater(row["headroom_bytes"], 0)
        times = [row["step_time_s"] for row in rows]
        self.assertEqual(times, sorted(times))

    def test_is_the_clis_json(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "small.textproto")
            with open(path, "w") as f:
                f.write(SMALL_GPT)
            self.assertEqual(
                placesim.search(path, fix=["strategy.tp=2"], simulate_top=2, top=4, jobs=2),
                cli_json("search", path, "--fix", "strategy.tp=2", "--simulate-top", "2",
                         "--top", "4", "--jobs", "2"))
            # The exhaustive space adds the knobs only it varies (flash attention, tp
            # overlap, reshard after forward, gradient bucket) to every row.
            exhaustive = placesim.search(path, fix=["strategy.tp=2"], simulate_top=2, top=3,
                                         space="exhaustive")
            self.assertIn("gradient_bucket", exhaustive["rows"][0])
            self.assertIn("reshard_after_forward", exhaustive["rows"][0])
            self.assertEqual(exhaustive,
                             cli_json("search", path, "--fix", "strategy.tp=2", "--simulate-top",
                                      "2", "--top", "3", "--space", "exhaustive"))

    def test_a_bad_fix_names_the_valid_values(self):
        with self.assertRaisesRegex(placesim.ScenarioError, "strategy.tp.*valid"):
            placesim.search(placesim.loads(SMALL_GPT), fix=["strategy.tp=3"])


class CompareTest(unittest.TestCase):
    def test_ddp_regresses_memory_against_zero3(self):
        zero3 = placesim.analyze(ZERO)
        ddp = placesim.analyze(placesim.load(ZERO, ["strategy.preset=ddp"]))
        result = placesim.compare(zero3, ddp, threshold="2%")
        self.assertEqual(result["result_kind"], "analyze")
        self.assertEqual(result["threshold"], 0.02)
        metric = next(m for m in result["metrics"] if m["metric"] == "memory.total_bytes")
        # 120 GB against 1.875 GB: (16Ψ - 16Ψ/64) / (16Ψ/64) = 63.
        self.assertEqual(metric["verdict"], "regressed")
        self.assertAlmostEqual(metric["relative"], 63.0)
        self.assertGreater(result["regressed"], 0)

    def test_a_result_equals_itself(self):
        result = placesim.simulate(TINY)
        self.assertEqual(placesim.compare(result, result)["regressed"], 0)

    def test_is_the_clis_json(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a.json"), os.path.join(d, "b.json")
            for path, preset in ((a, "zero3"), (b, "zero2")):
                with open(path, "w") as f:
                    json.dump(placesim.analyze(placesim.load(ZERO, [f"strategy.preset={preset}"])), f)
            self.assertEqual(placesim.compare(a, b, 0.05),
                             cli_json("compare", a, b, "--threshold", "5%"))

    def test_results_of_different_kinds_are_refused(self):
        with self.assertRaises(placesim.ScenarioError):
            placesim.compare(placesim.analyze(TINY), placesim.simulate(TINY))


class DataFrameTest(unittest.TestCase):
    def test_without_pandas_the_import_error_says_what_to_install(self):
        study = placesim.sweep(ZERO, ["strategy.preset=zero1,zero3"])
        saved = sys.modules.get("pandas")
        sys.modules["pandas"] = None  # makes `import pandas` raise ImportError
        try:
            with self.assertRaisesRegex(ImportError, "pip install pandas"):
                placesim.to_dataframe(study)
        finally:
            if saved is None:
                del sys.modules["pandas"]
            else:
                sys.modules["pandas"] = saved

    def test_refuses_a_result_without_points_or_rows(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("pandas is not installed")
        with self.assertRaisesRegex(ValueError, "sweep.*search"):
            placesim.to_dataframe(placesim.analyze(ZERO))

    def test_a_sweep_and_a_search_become_tables(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("pandas is not installed")
        frame = placesim.to_dataframe(placesim.sweep(ZERO, ["strategy.preset=ddp,zero3"]))
        # One row per point; the varied field is a column under its own path.
        self.assertEqual(list(frame["strategy.preset"]), ["ddp", "zero3"])
        self.assertEqual(list(frame["memory_total_bytes"]), [16 * PSI, 16 * PSI // N])
        search = placesim.search(placesim.loads(SMALL_GPT), simulate_top=0, top=3)
        table = placesim.to_dataframe(search)
        self.assertEqual(len(table), len(search["rows"]))
        self.assertIn("estimate_breakdown_s.compute", table.columns)


if __name__ == "__main__":
    unittest.main()
