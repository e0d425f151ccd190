"""The top-level `operator/` directory never shadows the standard library's `operator`."""

from __future__ import annotations

import subprocess
import sys


def test_stdlib_operator_wins_when_run_from_repo_root(repo):
    # -S skips site, so nothing preloads `operator`: the worst case for shadowing.
    code = "import operator, collections; print(operator.eq(2, 2), operator.__file__)"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("True ")
    assert not out.split()[1].startswith(str(repo))


def test_controller_package_is_importable():
    import draftgen.controller

    assert draftgen.controller.__name__ == "draftgen.controller"
