"""Chains (`history: regenerated`) in the id exports: a chain whose turns continue one another
token for token is one sample with loss on every turn's output; any other chain, and a chain cut
short, one sample per turn — read back by SpecForge's and speculators' own loaders."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from draftgen.cli import main

from .builders import THINK, record, write_output
from .conftest import TINY_KIMI
from .trainers import rows_of, specforge_config, specforge_load, speculators_load

END = 163586  # <|im_end|>


def _turn(index: int, turn: int, turns: int, prompt: list[int], out: list[int], end: bool):
    rec = record("chat", index, prompt, out, turn=turn)
    rec["meta"]["chain"] = {"id": f"chat/row{index:04d}", "turns": turns}
    if end:
        rec["meta"]["chain_end"] = "complete"
    return rec


def _records() -> tuple[list[dict], list[tuple[tuple[int, ...], tuple[int, ...]]]]:
    """Records of four kinds, and the (ids, loss mask) rows an id export must make of them."""
    # A: each prompt is the previous prompt, its output, then the next user turn.
    p0, o0 = [1, 2, THINK], [10, 11, END]
    p1, o1 = [*p0, *o0, 3, 4, THINK], [12, END]
    p2, o2 = [*p1, *o1, 5, THINK], [13, 14, END]
    a = [
        _turn(0, 0, 3, p0, o0, False),
        _turn(0, 1, 3, p1, o1, False),
        _turn(0, 2, 3, p2, o2, True),
    ]
    # B: the template re-rendered turn 0's reply (its ids are not in turn 1's prompt).
    q0, r0 = [1, 7, THINK], [20, 21, END]
    q1, r1 = [1, 7, 22, END, 8, THINK], [23, END]
    b = [_turn(1, 0, 2, q0, r0, False), _turn(1, 1, 2, q1, r1, True)]
    # C: cut by the budget after turn 0 (no chain_end).
    c = [_turn(2, 0, 3, [1, 9, THINK], [30, END], False)]
    plain = [record("chat", 3, [1, 6, THINK], [40, END])]

    def exact(rec: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
        p, o = rec["input_ids"], rec["output_ids"]
        return tuple(p + o), (0,) * len(p) + (1,) * len(o)

    mask = [0] * len(p2) + [1] * len(o2)
    for start, n in ((len(p0), len(o0)), (len(p1), len(o1))):
        mask[start : start + n] = [1] * n
    want = [(tuple(p2 + o2), tuple(mask)), *map(exact, b), *map(exact, c), *map(exact, plain)]
    # Interleaved as a run writes them: chains going side by side.
    return [a[0], b[0], c[0], a[1], b[1], plain[0], a[2]], want


def _export(src: Path, fmt: str, out: Path) -> Path:
    assert main(["export", str(src), "--format", fmt, "--out", str(out)]) == 0
    return out / "train.jsonl"


def _rows(path: Path) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    return [(tuple(r["input_ids"]), tuple(r["loss_mask"])) for r in rows_of(path)]


def test_a_chain_that_continues_token_for_token_is_one_sample(tmp_path):
    records, want = _records()
    src = write_output(tmp_path / "run", {"chat": records}, model=str(TINY_KIMI))
    for fmt in ("specforge", "speculators"):
        rows = _rows(_export(src, fmt, tmp_path / fmt))
        assert Counter(rows) == Counter(want), fmt
        assert len(rows) == 5  # A as one, B as two, C and the plain record as one each


@pytest.mark.parametrize("fmt", ["specforge", "speculators"])
@pytest.mark.long
def test_the_trainers_load_a_merged_chain_with_its_loss_on_every_turn(tmp_path, fmt):
    records, want = _records()
    src = write_output(tmp_path / "run", {"chat": records}, model=str(TINY_KIMI))
    train = _export(src, fmt, tmp_path / "export")
    if fmt == "specforge":
        longest = max(len(ids) for ids, _ in want)
        config = specforge_config(
            tmp_path, TINY_KIMI, {"prompts_path": str(train), "max_length": longest}
        )
        (loaded,) = specforge_load([config], tmp_path)
    else:
        loaded = speculators_load(train, TINY_KIMI, tmp_path)
    got = [(tuple(r["input_ids"]), tuple(r["loss_mask"])) for r in loaded["rows"]]
    assert Counter(got) == Counter(want)
