"""Runs the Python session of README.md ("Use it from Python") as written, from the
repository root as the README says, and checks that it prints what the README shows, so the
example cannot rot.

The README is found through PLACESIM_SOURCE_DIR (set by CMake), never through the working
directory.
"""
import contextlib
import io
import os
import re
import unittest

SOURCE_DIR = os.environ["PLACESIM_SOURCE_DIR"]


def readme_block(marker, language):
    """The fenced `language` block between <!-- MARKER:begin --> and <!-- MARKER:end -->."""
    with open(os.path.join(SOURCE_DIR, "README.md")) as f:
        text = f.read()
    found = re.search(rf"<!-- {marker}:begin -->\n```{language}\n(.*?)```\n<!-- {marker}:end -->",
                      text, re.S)
    assert found, f"README.md has no {language} block between the {marker} markers"
    return found.group(1)


class ReadmeTest(unittest.TestCase):
    def test_the_python_example_prints_what_the_readme_shows(self):
        code = readme_block("python-example", "python")
        shown = readme_block("python-output", "text").splitlines()
        out = io.StringIO()
        here = os.getcwd()
        os.chdir(SOURCE_DIR)
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
        finally:
            os.chdir(here)
        printed = out.getvalue().splitlines()
        self.assertEqual(len(printed), len(shown))
        # The ZeRO lines exactly: 16Ψ = 120 GB, 4Ψ + 12Ψ/64 = 31.406 GB, 2Ψ + 14Ψ/64 =
        # 16.641 GB, 16Ψ/64 = 1.875 GB for Ψ = 7.5e9; DDP alone exceeds the A100's 80 GB.
        self.assertEqual(printed[:4], shown[:4])
        # The what-if lines as shown; twice the NVLink bandwidth never slows the step.
        self.assertEqual(printed[4:], shown[4:])
        slow, fast = (float(line.split()[2]) for line in printed[4:])
        self.assertLessEqual(fast, slow)


if __name__ == "__main__":
    unittest.main()
