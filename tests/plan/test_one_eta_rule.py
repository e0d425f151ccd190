"""The generator's ETA (status.eta) and the planner's (status.plan.etaSeconds) follow one rule."""

from __future__ import annotations

import pytest

from draftgen.generator.telemetry.rate import eta_seconds, remaining_tokens
from draftgen.output.ledger import Ledger
from draftgen.plan.concurrency import DatasetLengths
from draftgen.plan.eta import dataset_work
from draftgen.spec import Budget


def _ledger(budget: Budget, samples: int, prompt: int, completion: int) -> Ledger:
    ledger = Ledger(dataset="d", budget=budget)
    for _ in range(samples):
        ledger.add(prompt, completion, "stop")
    return ledger


@pytest.mark.parametrize(
    "budget",
    [
        Budget(completion_tokens=100_000),
        Budget(total_tokens=300_000),
        Budget(max_samples=500),
        Budget(completion_tokens=100_000, total_tokens=200_000, max_samples=400),
    ],
)
def test_generator_and_planner_agree_at_the_same_lengths(budget: Budget) -> None:
    ledger = _ledger(budget, samples=10, prompt=300, completion=200)
    planned = dataset_work(
        "d",
        budget.completion_tokens,
        budget.total_tokens,
        budget.max_samples,
        DatasetLengths("d", 300, 200, "dataset"),
        ledger.completion_tokens,
    )
    assert remaining_tokens(ledger) == pytest.approx(planned.remaining_tokens)


def test_a_total_tokens_budget_counts_only_the_completion_share() -> None:
    # 10 samples of 300 prompt + 200 completion tokens: 5,000 of 300,000 total tokens used;
    # what remains to *generate* is 2/5 of the remaining 295,000.
    ledger = _ledger(Budget(total_tokens=300_000), samples=10, prompt=300, completion=200)
    assert remaining_tokens(ledger) == pytest.approx(295_000 * 2 / 5)
    assert eta_seconds([ledger], rate=100.0) == pytest.approx(1180.0)
