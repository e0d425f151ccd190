"""Time for the budgets (field facts, lesson 9), and the duration format status shows."""

from __future__ import annotations

import pytest

from draftgen.plan.concurrency import DatasetLengths
from draftgen.plan.eta import dataset_work, eta
from draftgen.timefmt import format_duration


@pytest.mark.parametrize(
    "seconds, text",
    [
        (62_400, "17h20m"),
        (2_700, "45m"),
        (42, "42s"),
        (0, "0s"),
        (3_600, "1h00m"),
        (205_200, "57h00m"),
        (3_599.6, "1h00m"),
        (None, ""),
        (-5, ""),
        (float("inf"), ""),
    ],
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def _lengths(name="d", prompt=1_000, completion=3_000):
    return DatasetLengths(name, prompt, completion, "dataset")


def test_80m_tokens_at_930_per_second_is_about_a_day():
    work = [dataset_work(f"b{i}", 10_000_000, None, None, _lengths(f"b{i}")) for i in range(8)]
    plan = eta(work, 930.0, "measured")
    assert plan.total_tokens == 80_000_000
    assert plan.total_seconds / 3600 == pytest.approx(23.9, abs=0.1)
    assert plan.total == "23h54m"
    # Eight equal datasets interleaved all finish together, at the end; each is 1/8 of the work.
    assert plan.per_dataset_seconds["b0"] == pytest.approx(plan.total_seconds)
    assert plan.share_seconds["b0"] == pytest.approx(plan.total_seconds / 8)


def test_max_samples_uses_the_mean_completion():
    work = dataset_work("coding", None, None, 7_000, _lengths(completion=3_793))
    assert work.completion_tokens == 7_000 * 3_793
    assert "maxSamples" in work.basis


def test_the_first_limit_reached_counts():
    # 7,000 samples × 3,793 = 26.6M, but the 10M token budget stops it first (lesson 3).
    work = dataset_work("coding", 10_000_000, None, 7_000, _lengths(completion=3_793))
    assert work.completion_tokens == 10_000_000
    assert work.samples == pytest.approx(10_000_000 / 3_793)


def test_total_tokens_counts_only_the_completion_share():
    work = dataset_work("d", None, 4_000_000, None, _lengths(prompt=1_000, completion=3_000))
    assert work.completion_tokens == 3_000_000


def test_done_tokens_shorten_the_eta():
    work = [dataset_work("d", 10_000_000, None, None, _lengths(), done_tokens=4_000_000)]
    assert eta(work, 1_000.0, "measured").total_seconds == 6_000


def test_unknown_work_leaves_the_total_unknown():
    work = [
        dataset_work("d", 10_000_000, None, None, _lengths()),
        dataset_work("rows", None, None, None, _lengths()),
    ]
    plan = eta(work, 1_000.0, "ceiling")
    assert plan.total_seconds is None and plan.per_dataset_seconds["rows"] is None
    assert "needs a budget" in work[1].basis
