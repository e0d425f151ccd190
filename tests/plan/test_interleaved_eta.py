"""Item 7 of issue 20: the per-dataset ETA is when each dataset finishes running interleaved with
the others; an ETA from estimated inputs names them; relative output.path follows the job file."""

from __future__ import annotations

import subprocess
import sys

import pytest

from draftgen.contract.generator_cli import ExitCode
from draftgen.plan.concurrency import DatasetLengths
from draftgen.plan.eta import dataset_work, eta
from draftgen.plan.planner import PlanInputs, build_plan
from draftgen.plan.report import render_text
from draftgen.spec import parse_job
from tests.jobs import dataset, job_document, write_job_yaml


def _work(name: str, tokens: int | None):
    return dataset_work(name, tokens, None, None, DatasetLengths(name, 1_000, 1_000, "dataset"))


def test_a_small_dataset_among_large_ones_finishes_early():
    # 1M, 4M and 5M tokens at 1,000 tok/s, each taking a third while all run: the small one is
    # done at 3,000 s; then two share: the 4M one at 3,000 + 3M × 2 / 1,000 = 9,000 s; the last
    # one ends with the total, 10,000 s (its share alone would have said 5,000 s).
    plan = eta([_work("small", 1_000_000), _work("mid", 4_000_000), _work("big", 5_000_000)],
               1_000.0, "measured")  # fmt: skip
    assert plan.per_dataset_seconds == pytest.approx({"small": 3_000, "mid": 9_000, "big": 10_000})
    assert plan.total_seconds == pytest.approx(10_000)
    assert plan.share_seconds["big"] == pytest.approx(5_000)


def test_a_dataset_of_unknown_work_keeps_its_share():
    plan = eta([_work("known", 1_000_000), _work("rows", None)], 1_000.0, "measured")
    assert plan.per_dataset_seconds["known"] == pytest.approx(2_000)
    assert plan.per_dataset_seconds["rows"] is None and plan.total_seconds is None


def _job(**planning):
    return parse_job(
        job_document(
            "j",
            model={"weights": "/m"},
            server={"tensorParallelSize": 8},
            planning={"meanPromptTokens": 4_000, "meanCompletionTokens": 3_793, **planning},
            datasets=[
                dataset("chat", "c.jsonl", "messages", budget={"completionTokens": 1_000_000}),
                dataset(
                    "code",
                    "d.jsonl",
                    "messages",
                    budget={"maxSamples": 1_000},
                    expected={"promptTokens": 4_000, "completionTokens": 3_793},
                ),
            ],
        )
    )


def test_an_eta_from_estimated_inputs_names_what_was_guessed(examples):
    inputs = PlanInputs(
        model_config_path=examples / "models" / "kimi-k2.5" / "config.json",
        free_before_load_gib=94.04,
        free_after_load_gib=23.71,
        decode_tokens_per_second=17.0,
    )
    plan = build_plan(_job(), inputs)
    assert plan.eta is not None and plan.eta.basis == "ceiling"
    guesses = "\n".join(plan.eta_guesses)
    assert "throughput: the ceiling at 17 tok/s per decode" in guesses
    assert "dataset chat: mean prompt 4,000 / completion 3,793 tokens from spec.planning" in guesses
    assert "dataset code: mean prompt 4,000 / completion 3,793 tokens from its spec.datasets[]" in (
        guesses
    )
    assert "KV capacity" not in guesses  # measured at one start
    text = render_text(plan)
    assert "guessed, not measured" in text and "done in" in text
    # A measured rate and a token budget need no guess for that dataset.
    measured = build_plan(_job(), PlanInputs(**{**inputs.__dict__, "measured_throughput": 900.0}))
    assert not any("throughput" in g or "dataset chat" in g for g in measured.eta_guesses)
    assert any("dataset code" in g for g in measured.eta_guesses)  # maxSamples × mean length


def test_relative_output_path_resolves_from_the_job_files_directory(tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "taken").write_text("a file where the output directory would be\n")
    doc = job_document(
        "j",
        model={"weights": "/m"},
        output={"path": "taken"},
        datasets=[{"name": "chat", "source": "c.jsonl", "format": "messages"}],
    )
    job = write_job_yaml(jobs / "job.yaml", doc)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    (elsewhere / "taken").mkdir()  # would be accepted if the path followed the working directory
    run = subprocess.run(
        [sys.executable, "-m", "draftgen.cli", "generate", str(job), "--server",
         "http://127.0.0.1:9"],
        cwd=elsewhere, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == ExitCode.INVALID, run.stderr
    assert f"--output {jobs / 'taken'}: exists and is not a directory" in run.stderr
