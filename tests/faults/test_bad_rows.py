"""Bad dataset rows thrown at the input side by a fuzzer: every row comes out as a valid sample or
a reject with a reason, the stream never raises, and no row is silently lost.

Rows are raw JSONL lines (bytes), so invalid UTF-8 and malformed JSON reach the reader exactly
as a corrupt file would. The real tokenizer path renders every conversation that parses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from draftgen.generator.prompts.samples import Reject, Sample
from tests.generator.gen_helpers import samples_of
from tests.jobs import dataset

from .bad_row_strategies import EXPECTED, ROWS, SEEN_DOORS, VOCAB, lines_for
from .input_contexts import input_contexts

THINK = 163606
MAX_PROMPT = 2048
KNOWN_REASONS = {
    "invalid_utf8",
    "malformed_json",
    "wrong_type",
    "missing_field",
    "empty_conversation",
    "unknown_role",
    "bad_tools",
    "bad_tool_call",
    "template_error",
    "prompt_too_long",
    "duplicate_id",
    "empty_prompt",
    "bad_token_id",
    "missing_generation_prefix",
    "tools_missing",
}

# ---- harness ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def contexts(kimi_like_tokenizer, tmp_path_factory):
    """One tokenizer context per format (opened once: loading a tokenizer is the slow part)."""
    base = tmp_path_factory.mktemp("rows")
    # The first tool-bearing and prefix-checked rows are strict (refusal to start): each test
    # leads its rows with good ones so the fuzzed rows meet the per-row checks.
    with input_contexts(
        "fuzz", kimi_like_tokenizer, base, ROWS, lambda fmt: [dataset("d", f"{fmt}.jsonl", fmt)]
    ) as out:
        yield base, out


def run_rows(base: Path, job, ctx, fmt: str, lines: list[bytes]) -> list[Sample | Reject]:
    path = base / f"{fmt}.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return samples_of(job, ctx, base, max_prompt_tokens=MAX_PROMPT)


def check_items(items: list[Sample | Reject], lines: list[bytes]) -> None:
    rows = [i for i, line in enumerate(lines) if line.strip()]
    seen = {item.source_index for item in items}
    assert seen == set(range(len(rows))), "a row vanished without a sample or a reject"
    for item in items:
        if isinstance(item, Reject):
            assert item.reason in KNOWN_REASONS, item
            assert isinstance(item.detail, str) and item.detail, item
        else:
            assert isinstance(item, Sample)
            assert item.input_ids and all(type(t) is int and 0 <= t < VOCAB for t in item.input_ids)
            assert len(item.input_ids) <= MAX_PROMPT
            if not (item.info or {}).get("pretokenized"):
                assert item.input_ids[-1] == THINK  # the generation prefix, as the template adds it


# The first STRICT_TOOL_SAMPLES rendered prompts (and tool-bearing prompts) are integrity probes
# that refuse to start instead of rejecting: lead every fuzzed file with good rows.
def _lead(fmt: str) -> list[bytes]:
    good = {
        "messages": {
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "lead_tool", "parameters": {"type": "object"}},
                }
            ],
        },
        "sharegpt": {
            "conversations": [{"from": "human", "value": "hi"}],
            "tools": [{"name": "lead_tool", "parameters": {"type": "object"}}],
        },
        "prompt": {"prompt": "hi"},
        "glaive": {
            "system": 'SYSTEM: You are helpful. {"name": "lead_tool", "parameters": {}}',
            "chat": "USER: hi <|endoftext|>",
        },
        "pretokenized": {"input_ids": [1, 2, 3]},
    }[fmt]
    from draftgen.generator.prompts.integrity import STRICT_TOOL_SAMPLES

    return [json.dumps({**good, "id": f"lead{i}"}).encode() for i in range(STRICT_TOOL_SAMPLES + 1)]


@pytest.mark.parametrize("fmt", list(ROWS))
def test_fuzzed_rows_become_samples_or_rejects(fmt, contexts):
    base, ctxs = contexts
    job, ctx = ctxs[fmt]
    lead = _lead(fmt)
    reasons: set[str] = set()

    @settings(
        max_examples=80,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.lists(lines_for(fmt), min_size=1, max_size=6))
    @example(SEEN_DOORS[fmt])  # one of each reason for sure; the fuzzer adds the variety
    def prop(lines):
        lines = lead + lines
        items = run_rows(base, job, ctx, fmt, lines)
        check_items(items, lines)
        reasons.update(getattr(i, "reason", "sample") for i in items[len(lead) :])
        # Rejects are deterministic: a resumed run records the same ones (the writer dedups).
        again = run_rows(base, job, ctx, fmt, lines)
        assert [(i.source_index, getattr(i, "reason", None), i.id) for i in again] == [
            (i.source_index, getattr(i, "reason", None), i.id) for i in items
        ]

    prop()
    # The fuzzer reached every door (a property over only good rows would prove nothing).
    assert EXPECTED[fmt] <= reasons, EXPECTED[fmt] - reasons


@pytest.mark.parametrize("fmt", ["messages", "sharegpt"])
def test_enormous_and_empty_conversations(fmt, contexts):
    base, ctxs = contexts
    job, ctx = ctxs[fmt]
    key, speaker, text = (
        ("messages", "role", "content") if fmt == "messages" else ("conversations", "from", "value")
    )
    user = "user" if fmt == "messages" else "human"
    lines = _lead(fmt) + [
        json.dumps(row).encode()
        for row in [
            {key: []},
            {key: [{speaker: "system", text: "only a system turn"}]},
            {key: [{speaker: user, text: "x" * 200_000}]},  # one enormous turn
            {key: [{speaker: user, text: f"turn {i}"} for i in range(3_000)]},  # thousands of turns
            {key: [{speaker: user, text: ""}]},
        ]
    ]
    items = run_rows(base, job, ctx, fmt, lines)
    check_items(items, lines)
    n = len(_lead(fmt))
    by_row = {i.source_index: i for i in items if i.source_index >= n}
    assert by_row[n].reason == "empty_conversation"
    assert by_row[n + 1].reason == "empty_conversation"
    assert by_row[n + 2].reason == "prompt_too_long" and "at most 2048" in by_row[n + 2].detail
    assert by_row[n + 3].reason == "prompt_too_long"
    assert isinstance(by_row[n + 4], Sample)  # an empty user message is still a question
