#!/usr/bin/env python3
"""The bad-input suite: hostile files, flags, overrides, JSON results and output paths run
through the real `placesim` binary, one case each. Every case must

  - exit with code 2 (bad input), not by a signal (a crash or abort),
  - name the offending field or argument in its message (the case's `expect` substrings),
  - finish within TIME_LIMIT_S and peak under MEMORY_LIMIT_MB resident,
  - leave nothing behind: the case's scratch folder holds exactly what it held before.

Usage: bad_input_test.py PLACESIM SOURCE_DIR [CATEGORY...]   (ctest runs one category each)
Limits may be raised for sanitizer builds: PLACESIM_BAD_INPUT_TIME_S, _MEMORY_MB.
Cases are data (cases.py); this file only runs them.
"""
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

# The source tree stays clean: no __pycache__ next to the cases.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402

TIME_LIMIT_S = float(os.environ.get("PLACESIM_BAD_INPUT_TIME_S", "20"))
MEMORY_LIMIT_MB = float(os.environ.get("PLACESIM_BAD_INPUT_MEMORY_MB", "1024"))


def listing(folder):
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            out[os.path.relpath(path, folder)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def run_case(binary, source_dir, case):
    """Returns a list of problems (empty when the case passes)."""
    scratch = tempfile.mkdtemp(prefix="placesim_bad_input_")
    try:
        for name, content in case.get("files", {}).items():
            path = os.path.join(scratch, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            mode = "wb" if isinstance(content, bytes) else "w"
            with open(path, mode) as f:
                f.write(content)
        for name in case.get("dirs", []):
            os.makedirs(os.path.join(scratch, name), exist_ok=True)
        subst = {"ex": os.path.join(source_dir, "examples"), "tmp": scratch}
        args = [a.format(**subst) for a in case["args"]]
        before = listing(scratch)
        start = time.monotonic()
        proc = subprocess.Popen([binary] + args, cwd=scratch, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            stdout, stderr = proc.communicate(timeout=TIME_LIMIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return [f"still running after {TIME_LIMIT_S} s (killed)"]
        elapsed = time.monotonic() - start
        # The child's peak resident set, from the kernel's accounting of waited-for children.
        # (Popen has reaped it; RUSAGE_CHILDREN is the maximum over all children so far, which
        # only ever overstates, so a pass is conclusive.)
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        err = stderr.decode("utf-8", "replace")
        problems = []
        if proc.returncode < 0:
            problems.append(f"killed by signal {-proc.returncode}")
        elif proc.returncode != 2:
            problems.append(f"exit code {proc.returncode}, expected 2")
        for want in case["expect"]:
            if want.format(**subst) not in err:
                problems.append(f"message lacks {want!r}")
        if "internal error" in err:
            problems.append("message says internal error")
        if elapsed > TIME_LIMIT_S:
            problems.append(f"took {elapsed:.1f} s")
        if peak_mb > MEMORY_LIMIT_MB:
            problems.append(f"peak memory {peak_mb:.0f} MB")
        after = listing(scratch)
        if after != before:
            changed = sorted(set(after) ^ set(before)) or sorted(
                k for k in after if after[k] != before.get(k))
            problems.append(f"left behind or changed: {changed[:5]}")
        if problems:
            problems.append("stderr: " + err[:600].replace("\n", "\n    "))
        return problems
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    binary, source_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    wanted = set(sys.argv[3:])
    all_cases = cases.all_cases(source_dir)
    selected = [c for c in all_cases if not wanted or c["category"] in wanted]
    failed = 0
    for case in selected:
        problems = run_case(binary, source_dir, case)
        if problems:
            failed += 1
            print(f"FAIL {case['category']}/{case['name']}: {' '.join(case['args'])}")
            for p in problems:
                print("    " + p)
    print(f"{len(selected) - failed} of {len(selected)} bad-input cases passed "
          f"({', '.join(sorted(wanted)) or 'all categories'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
