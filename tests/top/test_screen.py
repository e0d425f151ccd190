"""The screen at 120 columns with ten datasets: names abbreviated, numbers whole."""

from __future__ import annotations

import re

from rich.console import Console

from draftgen.top.model import Budget, DatasetReading, History, ServerReading, Snapshot, build_view
from draftgen.top.screen import abbreviate, count, render

NAMES = [
    "glaive-function-calling-v2",
    "coding-long-responses",
    "b-conversations-multilingual",
    "b-conversations-multilingual-2",
    "reasoning",
    "b5",
    "math",
    "b7",
    "a1-pretokenized",
    "a2-pretokenized",
]


def _screen(width: int = 120) -> str:
    h = History()
    for t, k in ((1000.0, 0.5), (1060.0, 0.6)):
        ds = tuple(
            DatasetReading(
                n,
                samples=int(2_600 * k) + i,
                prompt_tokens=int(10_400_000 * k),
                completion_tokens=int(9_876_543 * k) + 1_000 * i,
                truncated=123,
                rejects=1_234 * i,
                budget=Budget(completion_tokens=10_000_000, max_samples=7_000),
            )
            for i, n in enumerate(NAMES)
        )
        servers = (ServerReading("replica 0 (kimi-server-0-abc12)", 0.96, 72, 79),)
        h.add(Snapshot("gj/kimi -n drafters", at=t, datasets=ds, servers=servers))
    console = Console(width=width, record=True, color_system=None)
    console.print(render(build_view(h.items), 2.0))
    return console.export_text()


def test_ten_datasets_fit_120_columns_without_cut_numbers():
    screen = _screen()
    assert max(len(line) for line in screen.splitlines()) <= 120
    assert "…" not in screen
    lines = screen.splitlines()
    for name in abbreviate(NAMES):
        assert sum(1 for line in lines if line.lstrip().startswith(name + " ")) == 1, name
    # every dataset row carries its whole figures
    assert screen.count("5.93M/10.00M") == 10 and "1,569/7,000" in screen
    assert "11,106" in screen  # the last dataset's rejects, 1,234 × 9
    assert "replica 0 (kimi-server-0-abc12)" in screen and "96.0%" in screen


def test_abbreviations_stay_distinct_and_short():
    short = abbreviate(NAMES)
    assert len(set(short)) == len(short)
    assert all(len(s) <= 16 for s in short)
    assert short[4] == "reasoning"


def test_a_share_is_rounded_down():
    from draftgen.top.screen import share

    assert share(0.996) == "99%" and share(1.0) == "100%" and share(0.29) == "29%"
    assert share(None) == "-"


def test_counts_are_exact_below_a_million():
    assert count(999_999) == "999,999"
    assert count(12_345_678) == "12.35M"
    assert count(None) == "-"
    assert re.fullmatch(r"\d+\.\d\dG", count(3_210_000_000))
