"""What one reply holds, read from its ids (draftgen/output/reply_facts.py): reasoning, tool calls
and the degenerate-repetition rule, on crafted loops and on real prose and code."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from draftgen.output.reply_facts import (
    LOOP_MIN_TOKENS,
    LOOP_SHARE,
    LOOP_WINDOW,
    ReplyMarkers,
    has_reasoning,
    has_tool_call,
    markers_of,
    repetition,
    reply_facts,
)
from draftgen.testing import families

REPO = Path(__file__).resolve().parents[2]

# Kimi-K2's ids: <think> 163606, </think> 163607, <|tool_calls_section_begin|> 163595.
KIMI = ReplyMarkers(((163606,),), ((163607,),), ((163595,),))
HARMONY = ReplyMarkers(((200005, 97, 110),), (), ((200012,),))  # <|channel|> "an", <|call|>


def _varied(n: int, seed: int = 0) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(1000, 50_000) for _ in range(n)]


# ---- reasoning and tool calls -------------------------------------------------------------------


def test_a_reply_cut_while_reasoning_after_a_think_prefix_holds_reasoning():
    # Kimi's prompt ends with <think>: a reply cut at the length limit has no </think> yet.
    assert has_reasoning([1, 2, 163606], [5, 6, 7], KIMI)
    assert has_reasoning([1, 2, 163606], [5, 163607, 7], KIMI)
    assert not has_reasoning([1, 2, 163606], [], KIMI)  # nothing generated


def test_a_prompt_that_closed_the_block_means_no_reasoning():
    # Thinking off: the template wrote an empty block, <think></think>, and the model answers.
    assert not has_reasoning([1, 163606, 163607], [5, 6, 7], KIMI)
    assert not has_reasoning([1, 2], [5, 6, 7], KIMI)


def test_a_reply_that_opens_its_own_block_holds_reasoning():
    # Qwen3's prompt ends with the assistant header; the model writes <think> itself.
    assert has_reasoning([1, 2], [163606, 9, 163607, 5], KIMI)


def test_harmony_reasoning_is_the_analysis_channel():
    assert has_reasoning([200006, 3], [200005, 97, 110, 200008, 4], HARMONY)
    assert not has_reasoning([200006, 3], [200005, 102, 105, 200008, 4], HARMONY)  # final


def test_tool_calls_by_the_family_tokens():
    assert has_tool_call([5, 163595, 6], KIMI)
    assert not has_tool_call([5, 6], KIMI)
    assert reply_facts([1, 163606], [163607, 163595], KIMI) == {
        "reasoning": True,
        "tool_call": True,
    }
    assert reply_facts([1], [2], None) is None and reply_facts([1], [2], ReplyMarkers()) is None


@pytest.mark.parametrize(
    ("family", "reasoning", "tools"),
    [
        ("qwen3", ["<think>", "</think>"], ["<tool_call>"]),
        ("deepseek-v3.1", ["<think>", "</think>"], ["<｜tool▁calls▁begin｜>"]),
        ("gpt-oss", [], ["<|call|>"]),
        ("llama-3.1", [], ["<|python_tag|>"]),
    ],
)
def test_markers_are_read_from_the_family_tokenizer(tmp_path, family, reasoning, tools):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(families.build(family, tmp_path / family)))
    m = markers_of(tok)
    single = {t[0] for t in (*m.reasoning_open, *m.reasoning_close) if len(t) == 1}
    assert single == {tok.convert_tokens_to_ids(t) for t in reasoning}
    assert {tok.convert_tokens_to_ids(t) for t in tools} <= {t[0] for t in m.tool_call}
    if family == "gpt-oss":  # `<|channel|>analysis` opens its reasoning
        channel = tok.convert_tokens_to_ids("<|channel|>")
        reply = tok.encode("<|channel|>analysis<|message|>Think.<|end|>", add_special_tokens=False)
        assert any(t[0] == channel for t in m.reasoning_open)
        assert has_reasoning([], reply, m)
        final = tok.encode("<|channel|>final<|message|>Hi.<|return|>", add_special_tokens=False)
        assert not has_reasoning([], final, m)


# ---- degenerate repetition ----------------------------------------------------------------------


@pytest.mark.parametrize("period", [1, 2, 7, 40, 100])
def test_a_reply_that_ends_in_a_loop_is_flagged(period):
    unit = _varied(period, seed=period)
    reply = _varied(300, seed=1) + unit * (1200 // period)
    found = repetition(reply)
    assert found is not None and found["repeated_share"] >= LOOP_SHARE
    assert found["window"] == LOOP_WINDOW


def test_a_short_loop_is_caught_once_the_reply_is_long_enough():
    assert repetition([7, 8] * (LOOP_MIN_TOKENS // 2 - 1)) is None
    assert repetition([7, 8] * (LOOP_MIN_TOKENS // 2)) is not None


def test_a_loop_the_reply_broke_out_of_long_ago_is_not_flagged():
    reply = [7, 8, 9] * 300 + _varied(LOOP_WINDOW)
    assert repetition(reply) is None


def test_a_unit_longer_than_the_rule_reaches_is_not_flagged():
    """The documented limit: a unit of p tokens scores about 1 - p/window."""
    unit = _varied(200, seed=3)
    assert repetition(unit * 10) is None


def _word_ids(text: str) -> list[int]:
    """Text as ids of a word-level tokenizer (a real BPE vocabulary writes about one token per
    word or punctuation run): each distinct piece its own id."""
    vocab: dict[str, int] = {}
    pieces = re.findall(r"'s|'t| ?\w+| ?[^\s\w]+|\s+", text)
    return [vocab.setdefault(p, len(vocab)) for p in pieces]


def test_normal_prose_and_code_are_never_flagged():
    """Every 512-token window of the project's own docs and source (prose, tables, YAML, Python,
    tests with repetitive fixtures): none scores near the threshold."""
    files = sorted(REPO.glob("docs/*.md")) + sorted(REPO.glob("draftgen/**/*.py"))
    files += sorted(REPO.glob("tests/**/*.py"))
    windows = flagged = 0
    for path in files:
        ids = _word_ids(path.read_text(encoding="utf-8"))
        for start in range(0, max(1, len(ids) - LOOP_WINDOW + 1), LOOP_WINDOW // 2):
            windows += 1
            flagged += repetition(ids[start : start + LOOP_WINDOW]) is not None
    assert windows > 1000 and flagged == 0
