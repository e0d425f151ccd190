"""`make test` shares its expensive set-ups by xdist group (`--dist loadgroup`): the image build,
the `--dp-size 2` server. A pytest or pytest-xdist release that stops grouping does so silently
(every worker then builds its own image and starts its own server: pytest 9.2 with xdist 3.8,
pytest-dev/pytest-xdist#1386); this runs two grouped modules on two workers and checks they
shared one. It also checks the order the workers take the rest in: the `long` tests first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

MODULE = """
import pytest

pytestmark = pytest.mark.xdist_group("shared")


@pytest.mark.parametrize("i", range(3))
def test_grouped(i):
    pass


@pytest.mark.parametrize("i", range(8))
@pytest.mark.xdist_group("other_{name}")
def test_spread(i):
    pass
"""


def test_tests_of_one_group_run_on_one_worker(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"test_{name}.py").write_text(MODULE.replace("{name}", name))
    workers, out = _workers_of(tmp_path)
    grouped = {w for test, w in workers.items() if "test_grouped" in test}
    assert len(workers) == 22 and len(grouped) == 1, out


def _workers_of(tmp_path: Path, env: dict[str, str] | None = None) -> tuple[dict[str, str], str]:
    """Run the tests under tmp_path on two workers with `--dist loadgroup`: {test: worker}, and
    the output's tail for a failure's message."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
         "-p", "no:cacheprovider", "-p", "no:randomly", "-o", "addopts=", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    found = re.finditer(r"\[(gw\d)\] \[\s*\d+%\] PASSED (\S+)", run.stdout)
    return {m.group(2): m.group(1) for m in found}, run.stdout[-3000:]


def test_long_tests_are_taken_first_whatever_the_shuffle() -> None:
    """The workers take tests in collection order: the tests marked `long` come first (so neither
    worker ends the run on one), and pytest-randomly's shuffle still reorders the rest."""
    repo = Path(__file__).resolve().parents[2]
    modules = ["tests/faults/test_one_writer.py", "tests/bench/test_kv_server.py"]
    orders = []
    for seed in (1, 2, 3):
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
             "-p", "randomly", f"--randomly-seed={seed}", *modules],
            capture_output=True, text=True, timeout=300, cwd=repo,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout[-3000:]
        ids = [line for line in run.stdout.splitlines() if "::" in line]
        assert len(ids) == 14, run.stdout[-3000:]
        assert {i.split("::")[1] for i in ids[:2]} == {
            "test_two_generate_processes_on_one_output_one_is_refused_nothing_twice",
            "test_simulated_pool_behaves_like_the_real_servers",
        }, ids
        orders.append(ids[2:])
    assert len({tuple(o) for o in orders}) > 1, "the rest was not shuffled"


SHARED_FIXTURE = """
import pytest


@pytest.fixture(scope="module")
def built():
    return object()


@pytest.mark.parametrize("i", range(4))
def test_uses_it(built, i):
    pass


@pytest.mark.parametrize("i", range(8))
def test_free(i):
    pass
"""


def test_tests_sharing_a_module_fixture_run_on_one_worker(tmp_path: Path) -> None:
    """A module-scoped fixture of the module is built once, not once per worker."""
    (tmp_path / "test_shared.py").write_text(SHARED_FIXTURE)
    # The suite's hook, from a conftest as in the suite (a `-p` plugin's runs after xdist's).
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_collection_modifyitems\n"
    )
    repo = Path(__file__).resolve().parents[2]
    workers, out = _workers_of(tmp_path, {**os.environ, "PYTHONPATH": str(repo)})
    sharing = {w for test, w in workers.items() if "test_uses_it" in test}
    assert len(workers) == 12 and len(sharing) == 1, out
    assert len(set(workers.values())) == 2, "the other tests were not spread"
