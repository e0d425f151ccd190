"""What one reply holds, read from its output ids alone: reasoning, a tool call, a loop.

Pure functions of token ids (docs/quality.md has the rules and why):

- `has_reasoning`: the reply reasons when it opens or closes a reasoning block (`<think>`,
  `</think>`, harmony's `<|channel|>analysis`), or when the prompt's own tail left a block open
  (Kimi's and DeepSeek's prompts end with `<think>`) and the reply is not empty;
- `has_tool_call`: the reply holds one of the family's tool-call tokens;
- `repetition`: the reply's tail is caught in a loop (an n-gram rule, `LOOP_*` below).

`markers_of(tokenizer)` finds the markers a tokenizer has as single ids, once per run. The
generator stores the facts on each record (`meta.reply`, `meta.degenerate`), so counting them
later (`draftgen stats`, the manifest, the metrics) needs no tokenizer. When the run's model
family is known, `meta.reply` is read by the family's reply parser instead
(generator/prompts/replies/facts.py: it also reads Llama's JSON tool calls, which carry no
marker); `has_reasoning` and `has_tool_call` are the rule for a family it does not know."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LOOP_MIN_TOKENS",
    "LOOP_NGRAM",
    "LOOP_SHARE",
    "LOOP_WINDOW",
    "PROMPT_TAIL",
    "ReplyMarkers",
    "has_reasoning",
    "has_tool_call",
    "markers_of",
    "prompt_opens_reasoning",
    "repetition",
    "reply_facts",
]

Ids = tuple[int, ...]

REASONING_OPEN = ("<think>",)
REASONING_CLOSE = ("</think>",)
HARMONY_CHANNEL = "<|channel|>"
"""gpt-oss writes its reasoning on the `analysis` channel: `<|channel|>analysis<|message|>`."""
TOOL_CALL_TOKENS = (
    "<|tool_calls_section_begin|>",  # Kimi-K2
    "<|tool_call_begin|>",
    "<tool_call>",  # Qwen3 / Hermes
    "<｜tool▁calls▁begin｜>",  # DeepSeek-V3.1, R1
    "<｜tool▁call▁begin｜>",
    "<|call|>",  # gpt-oss: a call on the commentary channel ends with it
    "<|python_tag|>",  # Llama-3.1's built-in tools (its JSON calls carry no token)
)

LOOP_NGRAM = 8
"""n: the length, in tokens, of the n-grams compared."""
LOOP_WINDOW = 512
"""The rule reads the reply's last this many tokens (all of a shorter reply)."""
LOOP_MIN_TOKENS = 64
"""Replies shorter than this are never flagged."""
LOOP_SHARE = 0.75
"""Flagged when at least this share of the window's n-grams repeat one seen earlier in it."""


@dataclass(frozen=True, slots=True)
class ReplyMarkers:
    """Token-id sequences that mark what a reply holds (empty: the tokenizer has none)."""

    reasoning_open: tuple[Ids, ...] = ()
    reasoning_close: tuple[Ids, ...] = ()
    tool_call: tuple[Ids, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.reasoning_open or self.reasoning_close or self.tool_call)


def _single_id(tokenizer: Any, token: str) -> int | None:
    """The token's id when the tokenizer has it as one vocabulary entry."""
    try:
        token_id = tokenizer.convert_tokens_to_ids(token)
    except (KeyError, ValueError, TypeError):
        return None
    unk = getattr(tokenizer, "unk_token_id", None)
    return token_id if type(token_id) is int and token_id != unk and token_id >= 0 else None


def markers_of(tokenizer: Any) -> ReplyMarkers:
    """The markers of `tokenizer`'s family: those of the known ones it has as single ids."""

    def ids(tokens: Sequence[str]) -> tuple[Ids, ...]:
        found = (_single_id(tokenizer, t) for t in tokens)
        return tuple((i,) for i in found if i is not None)

    opening = ids(REASONING_OPEN)
    channel = _single_id(tokenizer, HARMONY_CHANNEL)
    if channel is not None:
        try:
            analysis = tokenizer.encode("analysis", add_special_tokens=False)
        except (TypeError, ValueError):
            analysis = []
        if analysis:
            opening += ((channel, *analysis),)
    return ReplyMarkers(opening, ids(REASONING_CLOSE), ids(TOOL_CALL_TOKENS))


def _find(ids: Sequence[int], marker: Ids, start: int = 0) -> int:
    """Index of `marker` in `ids` at or after `start` (-1: absent)."""
    first, n = marker[0], len(marker)
    i = start
    while True:
        try:
            i = ids.index(first, i)
        except ValueError:
            return -1
        if tuple(ids[i : i + n]) == marker:
            return i
        i += 1


def _last(ids: Sequence[int], markers: tuple[Ids, ...]) -> int:
    """The last index where any of `markers` starts (-1: none)."""
    best = -1
    for m in markers:
        i = _find(ids, m)
        while i >= 0:
            best = max(best, i)
            i = _find(ids, m, i + 1)
    return best


def has_reasoning(prompt_tail: Sequence[int], output_ids: Sequence[int], m: ReplyMarkers) -> bool:
    """The reply holds reasoning: it opens or closes a reasoning block, or the prompt's tail
    (its generation prefix) left one open and the reply is not empty (a reply cut at the length
    limit while still reasoning has no closing marker)."""
    if any(_find(output_ids, x) >= 0 for x in (*m.reasoning_open, *m.reasoning_close)):
        return True
    return bool(output_ids) and prompt_opens_reasoning(prompt_tail, m)


def prompt_opens_reasoning(prompt_tail: Sequence[int], m: ReplyMarkers) -> bool:
    """The prompt's tail left a reasoning block open: its last opening marker comes after its
    last closing one (Kimi's and DeepSeek's thinking prompts end with `<think>`)."""
    return _last(prompt_tail, m.reasoning_open) > _last(prompt_tail, m.reasoning_close)


def has_tool_call(output_ids: Sequence[int], m: ReplyMarkers) -> bool:
    """The reply holds one of the family's tool-call tokens."""
    return any(_find(output_ids, x) >= 0 for x in m.tool_call)


def repetition(output_ids: Sequence[int]) -> dict[str, Any] | None:
    """The loop a reply is caught in, or None. Over the reply's last `LOOP_WINDOW` tokens (all
    of a shorter one, at least `LOOP_MIN_TOKENS`), the share of its `LOOP_NGRAM`-grams that
    repeat one already seen in the window; `LOOP_SHARE` or more is a loop. A reply that ends
    repeating a unit of p tokens scores about 1 - p/window, so loops of up to about a quarter
    of the window are caught; normal prose and code score far below (docs/quality.md)."""
    tail = output_ids[-LOOP_WINDOW:]
    if len(tail) < max(LOOP_MIN_TOKENS, LOOP_NGRAM + 1):
        return None
    seen: set[tuple[int, ...]] = set()
    repeated = 0
    total = len(tail) - LOOP_NGRAM + 1
    for i in range(total):
        gram = tuple(tail[i : i + LOOP_NGRAM])
        if gram in seen:
            repeated += 1
        else:
            seen.add(gram)
    share = repeated / total
    if share < LOOP_SHARE:
        return None
    return {"ngram": LOOP_NGRAM, "window": len(tail), "repeated_share": round(share, 4)}


PROMPT_TAIL = 16
"""How many of the prompt's last tokens `reply_facts` reads (the generation prefix is short)."""


def reply_facts(
    input_ids: Sequence[int], output_ids: Sequence[int], m: ReplyMarkers | None
) -> dict[str, bool] | None:
    """`meta.reply` of a record: `reasoning` and `tool_call` (None: no markers to read by)."""
    if m is None or m.empty:
        return None
    return {
        "reasoning": has_reasoning(input_ids[-PROMPT_TAIL:], output_ids, m),
        "tool_call": has_tool_call(output_ids, m),
    }
