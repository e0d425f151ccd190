"""`draftgen top` in a real terminal (tmux, 120×40) against a real generator run on the CPU SGLang
server: the screen's numbers are the run's own records, from the metrics URL and from the output
directory; `q` and Ctrl-C end it cleanly; a source that reads nothing says NO DATA first."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from draftgen.output.stats_read import collect
from draftgen.testing.sglang import free_port
from tests.generator.gen_helpers import CLI, generate_command, prompt_rows, write_job, write_jsonl
from tests.operator.harness import wait_for

from .tmux import TOP, Tmux, dataset_rows

pytestmark = pytest.mark.sglang

DATASETS = ("alpha", "beta")


@pytest.fixture(scope="module")
def tmux():
    t = Tmux(120, 40)
    yield t
    t.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory, tiny_kimi, sglang_server, tmux):
    """A finished generator run that keeps serving its metrics; top on its URL was started
    before the generator, so its first screen read nothing."""
    work = tmp_path_factory.mktemp("top-live")
    write_jsonl(work / "alpha.jsonl", prompt_rows(30, "a"))
    write_jsonl(work / "beta.jsonl", prompt_rows(30, "b"))
    job = write_job(
        work,
        tiny_kimi,
        [
            {
                "name": "alpha",
                "source": "alpha.jsonl",
                "format": "prompt",
                "budget": {"completionTokens": 120},
            },
            {
                "name": "beta",
                "source": "beta.jsonl",
                "format": "prompt",
                "budget": {"maxSamples": 7},
            },
        ],
    )
    out = work / "out"
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    tmux.start("url", [*TOP, url, "--interval", "0.5"])
    first = tmux.wait_screen("url", "NO DATA")
    log = work / "generator.log"
    extra = ("--metrics-port", str(port), "--metrics-linger", "600", "--log-format", "json")
    with open(log, "wb") as sink:
        gen = subprocess.Popen(
            [*CLI, *generate_command(job, out, sglang_server.url, extra=extra)],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(
            lambda: json.loads((out / "manifest.json").read_text()).get("done"),
            "the run to finish",
            timeout=300,
        )
        yield {"out": out, "url": url, "server": sglang_server.url, "first": first, "log": log}
    finally:
        gen.send_signal(signal.SIGTERM)  # ends the metrics linger
        gen.wait(timeout=60)


def _expected(out):
    stats, warnings = collect(out)
    assert not warnings
    return {s.name: s for s in stats}


def _check(screen: str, out, *, sample_budget: bool = True) -> None:
    """The screen's figures are the records'. A metrics URL carries only the completion-token
    budget (draftgen_budget_completion_tokens), a directory's manifest every budget."""
    rows = dataset_rows(screen, DATASETS)
    assert set(rows) == set(DATASETS), screen
    for name, s in _expected(out).items():
        row = rows[name]
        assert s.samples > 0
        completion = f"{s.completion_tokens:,}" + ("/120" if name == "alpha" else "")
        samples = f"{s.samples:,}" + ("/7" if name == "beta" and sample_budget else "")
        assert row["completion"] == completion, (name, screen)
        assert row["prompt"] == f"{s.prompt_tokens:,}", (name, screen)
        assert row["samples"] == samples, (name, screen)
        assert row["trunc"] == f"{100 * s.truncation_rate:.1f}%", (name, screen)
        assert row["rejects"] == f"{s.rejects:,}", (name, screen)
        # done: 100% when the limit is met, else the share reached, rounded down
        limit = 120 if name == "alpha" else 7
        reached = s.completion_tokens if name == "alpha" else s.samples
        if name == "beta" and not sample_budget:
            reached = limit  # the page has no maxSamples budget: done is all it knows
        assert row["%"] == f"{min(100, 100 * reached // limit)}%", (name, screen)
    assert "job DONE" in screen


def test_top_on_the_metrics_url_shows_the_records_and_quits_on_q(tmux, run):
    assert "NO DATA from " + run["url"] in run["first"]
    screen = tmux.wait_screen("url", "job DONE")
    print(screen)
    _check(screen, run["out"], sample_budget=False)
    assert "NO DATA" not in screen
    # the server the generator sends to, with its live gauges and a verdict
    server_line = next(line for line in screen.splitlines() if run["server"] in line)
    assert "%" in server_line and server_line.split()[-1] in {"ok", "full", "SATURATED"}
    assert max(len(line) for line in screen.splitlines()) <= 120
    tmux.keys("url", "q")
    assert tmux.exit_status("url") == 0


def test_top_on_the_output_directory_agrees_and_quits_on_ctrl_c(tmux, run):
    tmux.start("dir", [*TOP, str(run["out"]), "--interval", "0.5"])
    screen = tmux.wait_screen("dir", "job DONE")
    _check(screen, run["out"])
    tmux.keys("dir", "C-c")
    assert tmux.exit_status("dir") == 0


def test_the_json_log_is_one_object_a_line_with_the_records_counts(run):
    """`--log-format json` on the same real run: every line an object; the last progress
    object's counts are the records'."""
    lines = [line for line in run["log"].read_text().splitlines() if line.strip()]
    objects = [json.loads(line) for line in lines]  # every line parses
    progress = [o for o in objects if o.get("event") == "progress"]
    assert progress, lines[-5:]
    last = {d["dataset"]: d for d in progress[-1]["datasets"]}
    for name, s in _expected(run["out"]).items():
        d = last[name]
        assert (d["samples"], d["completion_tokens"], d["prompt_tokens"]) == (
            s.samples,
            s.completion_tokens,
            s.prompt_tokens,
        )
        assert d["rejects"] == s.rejects and d["done"]
    assert [srv["server"] for srv in progress[-1]["servers"]] == [run["server"]]
