"""Every benchmark script still runs, at its smallest size, and writes a result with rows and a
verdict per goal. Benchmarks are not tests: no figure is asserted here, only that the scripts
do not rot. Results and work files go to a temporary directory, never to .cache/bench."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DP_GROUP, DP_POOL

REPO = Path(__file__).resolve().parents[2]

SMALL = {
    "budget_precision": [
        "--budgets",
        "5000",
        "--in-flight",
        "16",
        "--policies",
        "finish,abort",
        "--seeds",
        "1",
        "--cap-trials",
        "5",
    ],
    "client_cost": ["--requests", "60", "--in-flight", "8"],
    "dp_ranks_sim": ["--budget", "3000", "--layouts", "tp8,dp2", "--sglang-dispatch", ""],
    "pretokenize_rate": ["--prompts", "20", "--rounds", "1", "--max-workers", "1"],
    "resume_cost": ["--records", "2000"],
    "operator_reconcile": ["--jobs", "2", "--poll", "0.3"],
    "saturation": [
        "--budget",
        "100000",
        "--scenarios",
        "short",
        "--clients",
        "auto,16",
        "--overshoot-budget",
        "120000",
        "--sweep",
        "0.5",
        "--sweep-budget",
        "40000",
    ],
}
RESULT_NAME = {"pretokenize_rate": "pretokenize"}


def run_bench(script: str, args: list[str], tmp_path: Path, timeout: float = 300) -> dict:
    env = {
        **os.environ,
        "DRAFTGEN_BENCH_DIR": str(tmp_path / "work"),
        "DRAFTGEN_BENCH_RESULTS": str(tmp_path / "results"),
    }
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / f"{script}.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    result = json.loads(
        (tmp_path / "results" / f"{RESULT_NAME.get(script, script)}.json").read_text()
    )
    assert result["rows"], result
    assert result["goals"] and all("met" in g for g in result["goals"])
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").rglob("*.jsonl")), (
        "a benchmark left its work files behind"
    )
    return result


@pytest.mark.parametrize("script", sorted(SMALL))
def test_benchmark_runs(script: str, tmp_path: Path) -> None:
    run_bench(script, SMALL[script], tmp_path)


def _report(env: dict[str, str], *args: str) -> None:
    """bench/report.py with `args`, the results read from `env`'s DRAFTGEN_BENCH_RESULTS."""
    subprocess.run(
        [sys.executable, str(REPO / "bench" / "report.py"), *args],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
        cwd=REPO,
    )


def test_report_from_results(tmp_path: Path) -> None:
    run_bench("budget_precision", SMALL["budget_precision"], tmp_path)
    env = {**os.environ, "DRAFTGEN_BENCH_RESULTS": str(tmp_path / "results")}
    out = tmp_path / "benchmarks.md"
    _report(env, "--output", str(out))
    text = out.read_text()
    assert "bench/budget_precision.py --budgets 5000" in text  # the exact command line
    assert "nproc" in text and "| budget |" in text


def test_report_updates_one_section_and_keeps_the_others(tmp_path: Path) -> None:
    run_bench("budget_precision", SMALL["budget_precision"], tmp_path)
    env = {**os.environ, "DRAFTGEN_BENCH_RESULTS": str(tmp_path / "results")}
    out = tmp_path / "benchmarks.md"
    out.write_text((REPO / "docs" / "benchmarks.md").read_text())
    before = out.read_text()
    for _ in range(2):  # idempotent: the second update replaces the first
        _report(env, "--update", "budget_precision", "--output", str(out))
    text = out.read_text()
    assert text.count('<a id="budget-precision"></a>') == 1
    assert "bench/budget_precision.py --budgets 5000" in text
    assert text.count("](#budget-precision)") == 1  # its one goal row, replaced
    other = before.index('<a id="client-cost"></a>')
    assert before[other:] in text  # the sections after it untouched


@pytest.mark.sglang
@pytest.mark.long
def test_vs_standard_client_runs(sglang_server, tmp_path: Path) -> None:
    result = run_bench(
        "vs_standard_client",
        ["--url", sglang_server.url, "--tokens", "40", "--sweep", "2"],
        tmp_path,
    )
    clients = [row[0] for row in result["rows"]]
    assert clients == [
        "draftgen generate",
        "draftgen generate (again)",
        "sglang.bench_serving",
        "fixed asyncio client",
        "fixed client, draftgen's sampling",
    ]
    few = result["columns"].index("≤ 2 in flight s")
    assert all(row[few] >= 0 for row in result["rows"] if row[0] != "sglang.bench_serving")


@pytest.mark.sglang
def test_saturation_real_runs(sglang_server, tmp_path: Path) -> None:
    result = run_bench(
        "saturation_real", ["--url", sglang_server.url, "--rows", "3", "--max-new", "8"], tmp_path
    )
    clients = [(row[0], row[1]) for row in result["rows"]]
    assert clients == [
        ("draftgen generate", "auto"),
        ("draftgen generate (again)", "auto"),
        ("fixed client", 16),
        ("fixed client", 32),
        ("fixed client", 64),
    ]
    requests = result["columns"].index("requests")
    assert all(row[requests] == 6 for row in result["rows"])  # every client did the same work


def test_few_in_flight_seconds_counts_only_the_thin_stretches(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    from vs_standard_runs import few_in_flight_seconds

    # One long request; two short ones overlap it from 1 to 2-3 s: 3 in flight for 1 s.
    assert few_in_flight_seconds([(0, 10), (1, 2), (1, 3)]) == 9
    assert few_in_flight_seconds([(0, 10), (1, 2), (1, 3)], at_most=3) == 10


@pytest.mark.sglang
@DP_GROUP
def test_dp_ranks_real_runs(dp_server, tmp_path: Path) -> None:
    """On the suite's `--dp-size 2` server (the script starts its own without `--url`)."""
    result = run_bench(
        "dp_ranks_real",
        ["--url", dp_server.url, "--pairs", "2", "--max-new", "8", "--pool", str(DP_POOL)],
        tmp_path,
    )
    assert [row[1] for row in result["rows"]] == ["draftgen per rank", "SGLang round_robin"]
