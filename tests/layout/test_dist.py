"""`make dist` builds a wheel that installs and runs on its own (docs/install.md): the CLI, the
operator and the spec reference, with no file of the repository at hand."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# setuptools ≥ 70 builds wheels by itself; the SGLang environment (make setup) has one, so the
# build needs no index. A user's `make dist` fetches its build backend as pip normally does.
BUILDER = REPO / ".cache" / "venv-sglang" / "bin" / "python"


@pytest.mark.skipif(not BUILDER.exists(), reason="needs `make sglang` (an offline build backend)")
def test_make_dist_builds_a_wheel_that_runs_without_the_repository(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run(
        ["make", "-o", ".cache/venv/.installed", "dist", f"DIST={dist}", f"PY={BUILDER}",
         "DIST_PIP_ARGS=--no-build-isolation --no-index"],
        cwd=REPO, check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    (wheel,) = dist.glob("draftgen-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "draftgen/generator/cli.py" in names and "draftgen/controller/cli.py" in names
    assert not any(n.startswith(("tests/", "examples/")) for n in names)
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
         str(target), str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run(
        [sys.executable, "-c", "import draftgen.cli; print(draftgen.cli.__file__)"],
        env=env, cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert where.stdout.startswith(str(target)), where.stdout  # the wheel, not this checkout
    explain = subprocess.run(
        [sys.executable, "-m", "draftgen.cli", "explain", "spec.server.hierarchicalCache"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert explain.returncode == 0, explain.stderr
    assert "sizeGBPerRank" in explain.stdout


def test_readme_keeps_two_setup_commands_and_install_docs_say_the_rest():
    import re
    import tomllib

    readme = (REPO / "README.md").read_text()
    block = readme.split("## Two commands on a fresh machine", 1)[1].split("```")[1]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
    assert "docs/install.md#the-draftgen-cli-on-a-laptop" in readme
    install = (REPO / "docs" / "install.md").read_text()
    laptop = install.split("## The `draftgen` CLI on a laptop", 1)[1].split("\n## ", 1)[0]
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert f"pip install dist/draftgen-{version}-py3-none-any.whl" in laptop
    assert "make dist" in laptop
    for command in ("validate", "plan", "top", "operator --render", "explain"):
        assert re.search(rf"^draftgen {re.escape(command)} ", laptop, re.M), command
