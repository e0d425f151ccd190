"""The per-dataset figures the generator's progress, `draftgen stats` and `draftgen top` share
(draftgen/output/figures.py): pure, on the spec's own Budget."""

from __future__ import annotations

import pytest

from draftgen.output.figures import DatasetFigures, budget_text, job_eta, state_text
from draftgen.spec import Budget


def test_tokens_left_and_eta_by_the_nearest_limit_at_the_measured_lengths() -> None:
    # 4 samples of 100 completion tokens; maxSamples 10 → 6 × 100 left, sooner than 10,000
    f = DatasetFigures(
        budget=Budget(completion_tokens=10_000, max_samples=10),
        samples=4,
        prompt_tokens=80,
        completion_tokens=400,
    )
    assert f.limit_met() is None and not f.finished
    assert f.remaining() == pytest.approx(600)
    assert f.eta(50.0) == pytest.approx(12.0)
    assert f.eta(0.0) is None and f.eta(None) is None
    assert f.budget_fraction() == pytest.approx(0.4)


def test_a_met_limit_is_finished_at_any_rate_and_its_share_shows_the_overshoot() -> None:
    f = DatasetFigures(
        budget=Budget(completion_tokens=100), samples=3, prompt_tokens=30, completion_tokens=103
    )
    assert f.limit_met() == "completionTokens" and f.finished
    assert (f.remaining(), f.eta(0.0)) == (0.0, 0.0)
    assert f.budget_fraction() == pytest.approx(1.03) and f.fraction_done() == 1.0


def test_the_job_eta_is_unknown_while_any_dataset_has_no_budget() -> None:
    known = DatasetFigures(
        budget=Budget(completion_tokens=1_000), samples=1, prompt_tokens=10, completion_tokens=200
    )
    unlimited = DatasetFigures(budget=Budget(), samples=1, prompt_tokens=10, completion_tokens=200)
    assert job_eta([known], 100.0) == pytest.approx(8.0)
    assert job_eta([known, unlimited], 100.0) is None
    assert job_eta([known], 0.0) is None
    assert unlimited.budget_fraction() is None


def test_budget_text_alone_and_against_the_counts() -> None:
    b = Budget(completion_tokens=10_000, total_tokens=20_000, max_samples=50)
    assert budget_text(b) == "10,000 tok, 20,000 total, 50 samples"
    f = DatasetFigures(budget=b, samples=5, prompt_tokens=1_000, completion_tokens=2_500)
    assert budget_text(b, f) == "2,500/10,000 tok, 3,500/20,000 total, 5/50 samples"
    assert budget_text(Budget()) == ""


def test_state_text_names_the_limit_first_then_a_closed_budget_then_rows_used_up() -> None:
    assert state_text("maxSamples", True, True, "running") == "done (maxSamples)"
    assert state_text(None, True, True, "running") == "done (budget full)"
    assert state_text(None, False, True, "running") == "done (rows used up)"
    assert state_text(None, False, False, "not done") == "not done"
