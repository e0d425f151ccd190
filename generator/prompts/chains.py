"""On-policy chains (`history: regenerated`): a conversation whose turn k+1 is prompted by the
given user and tool turns and the target's own replies at turns 0..k.

Each next prompt is built the way a production server builds it for a client that sends the
conversation back: the target's reply is decoded from its output ids (special tokens kept;
whether the prompt's end opened the reasoning is read from its last ids), parsed into an
assistant message by the family's rules (`replies/`:
content, reasoning, tool calls) and the chat template renders the history with that message in
the turn's place — so the template's treatment of earlier reasoning (dropped, kept) applies, and
the prompt is *not* a token-level continuation of the previous prompt and output (docs).

A chain goes on past a turn only while the turn's reply agrees with the dataset where the rest
of the conversation depends on it: when the dataset's turn called tools (whose results come
next) or the reply called some, `compare_calls` must say `match`; the dataset's results then
answer the ids the server gave the generated calls (`rename_tool_results`). Otherwise the chain
ends at that turn, and the turn's record says why (`meta.chain_end`: `END_REASONS`, or the reject reason of a next prompt that
cannot be sent). Pure functions over immutable values, plus `ChainSteps`, which holds the
tokenizer and renders continuations (I/O-free, but CPU work: call it from a thread).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from draftgen.contract.metrics import CHAIN_ENDS_EARLY
from draftgen.generator.prompts.replies import (
    Reply,
    calls_of_message,
    compare_calls,
    rename_tool_results,
    reply_parser_for_tokenizer,
)
from draftgen.generator.prompts.samples import TOOL_FALLBACK, Reject, Sample
from draftgen.generator.prompts.tokenizer import tokenizer_lock

__all__ = [
    "END_REASONS",
    "ChainResume",
    "ChainRow",
    "ChainState",
    "ChainSteps",
    "Step",
    "chain_row",
    "prompt_for",
    "step",
]

PROMPT_TAIL = 32
"""Prompt ids kept per written turn of an open chain: enough to tell whether the prompt ended
inside the reasoning (a generation prefix such as `<think>`)."""

END_REASONS = ("complete", *CHAIN_ENDS_EARLY)
"""Why a chain ended at a turn (besides a reject reason of its next prompt)."""


@dataclass(frozen=True, slots=True)
class ChainRow:
    """A conversation to regenerate as a chain, as the dataset gave it."""

    id: str
    """`<dataset>/<row key>`: the chain id in every record's `meta.chain`."""
    messages: tuple[dict[str, Any], ...]
    tools: list[dict[str, Any]] | None
    positions: tuple[int, ...]
    """Index in `messages` of each assistant turn to regenerate; a pending turn (the conversation
    ends with a user or tool message) at `len(messages)`."""
    normalized: tuple[str, ...] = ()

    @property
    def turns(self) -> int:
        return len(self.positions)


@dataclass(frozen=True, slots=True)
class ChainState:
    """A chain at one turn: its row and the target's replies before that turn (as messages)."""

    row: ChainRow
    replies: tuple[dict[str, Any], ...] = ()

    @property
    def turn(self) -> int:
        return len(self.replies)

    def meta(self) -> dict[str, Any]:
        """The record's `meta.chain`."""
        return {"id": self.row.id, "turns": self.row.turns}


@dataclass(frozen=True, slots=True)
class ChainResume:
    """What a dataset's records say about its chains (`resume.scan_dataset`)."""

    open: Mapping[str, Mapping[int, tuple[list[int], list[int]]]] = field(default_factory=dict)
    """Chains not ended: per turn written, the last `PROMPT_TAIL` ids of its prompt and its
    output ids."""
    ended: frozenset[str] | set[str] = frozenset()
    """Chains whose last record has a `chain_end`."""


@dataclass(frozen=True, slots=True)
class Step:
    """What a turn's reply does to its chain: the message the next prompt carries, or the end."""

    message: dict[str, Any] | None
    end: str | None


def chain_row(
    chain_id: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    normalized: tuple[str, ...] = (),
) -> ChainRow:
    """The chain of a conversation: every assistant turn, plus the pending one."""
    positions = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    if messages and messages[-1]["role"] != "assistant":
        positions.append(len(messages))
    return ChainRow(chain_id, tuple(messages), tools, tuple(positions), normalized)


def prompt_for(state: ChainState) -> list[dict[str, Any]]:
    """The messages of the chain's next turn: the given turns before it, with every earlier
    assistant turn replaced by the target's reply."""
    row = state.row
    end = row.positions[state.turn]
    messages = list(row.messages[:end])
    for i, reply in enumerate(state.replies):
        start = row.positions[i]
        messages[start] = reply
        # The dataset's results after this turn answer the ids the server gave its calls, as a
        # client answers the calls it was returned (Kimi's templates print both ids).
        given = _calls(row.messages[start].get("tool_calls"))
        ids = {
            g["id"]: r["id"]
            for g, r in zip(given, _calls(reply.get("tool_calls")), strict=False)
            if isinstance(g.get("id"), str) and isinstance(r.get("id"), str)
        }
        stop = row.positions[i + 1] if i + 1 < len(row.positions) else end
        if ids:
            messages[start + 1 : stop] = rename_tool_results(messages[start + 1 : stop], ids)
    return messages


def _calls(value: Any) -> list[dict[str, Any]]:
    return list(value) if isinstance(value, list) else []


def step(row: ChainRow, turn: int, reply: Reply, finish_reason: str) -> Step:
    """What turn `turn`'s `reply` does to the chain: its message for the next prompt, or why the
    chain ends here (`END_REASONS`)."""
    if turn + 1 >= row.turns:
        return Step(None, "complete")
    if finish_reason != "stop":
        return Step(None, "length")  # a cut-off reply: no client would send it back as said
    given = row.messages[row.positions[turn]]
    verdict = compare_calls(reply.tool_calls, calls_of_message(given))
    if verdict != "match":
        return Step(None, verdict)
    # The ids the server gives the calls: it counts the calls of the conversation before.
    before = sum(len(_calls(m.get("tool_calls"))) for m in row.messages[: row.positions[turn]])
    return Step(reply.as_message(before), None)


def replay(
    row: ChainRow,
    written: Mapping[int, tuple[list[int], list[int]]],
    reply_of: Callable[[Sequence[int], Sequence[int]], Reply],
) -> ChainState | None:
    """The state after the turns already written (`written`: each one's prompt tail and output
    ids, from turn 0 on), rebuilt as the run that wrote them built it; None when they do not
    continue the chain."""
    state = ChainState(row)
    for turn in range(len(written)):
        ids = written.get(turn)
        if ids is None:
            return None  # a gap: not written by one chain
        s = step(row, turn, reply_of(*ids), "stop")
        if s.message is None:
            return None
        state = ChainState(row, (*state.replies, s.message))
    return state


class ChainSteps:
    """Parses replies and renders a chain's next prompt, with the run's tokenizer and template.

    `ctx` is the run's `pretokenize.TokenizerContext`: a next prompt renders on its workers
    (`render_one`); decoding a reply takes the tokenizer's lock (`tokenizer_lock`)."""

    def __init__(self, ctx: Any, on_tool_fallback: Mapping[str, str] | None = None) -> None:
        self.ctx = ctx
        self.parser = reply_parser_for_tokenizer(ctx.tokenizer)
        self.on_tool_fallback = dict(on_tool_fallback or {})
        self._lock = tokenizer_lock(ctx.tokenizer)

    def reply(self, prompt_ids: Sequence[int], output_ids: Sequence[int]) -> Reply:
        """The reply the output ids are, as the family's parser reads them after that prompt
        (its last `PROMPT_TAIL` ids are enough)."""
        tokenizer = self.ctx.tokenizer
        with self._lock:
            tail = tokenizer.decode(list(prompt_ids[-PROMPT_TAIL:]), skip_special_tokens=False)
            text = tokenizer.decode(list(output_ids), skip_special_tokens=False)
        return self.parser.parse(
            text, started_in_reasoning=self.parser.prompt_opens_reasoning(tail)
        )

    def advance(
        self,
        sample: Sample,
        output_ids: Sequence[int],
        finish_reason: str,
        max_prompt_tokens: int | None,
    ) -> tuple[str | None, Sample | Reject | None]:
        """After `sample`'s reply: `(chain_end, next)` — the end reason for its record (None:
        it goes on) and the next turn's sample (or the reject that ends the chain)."""
        state = sample.chain
        assert isinstance(state, ChainState)
        reply = self.reply(sample.input_ids, output_ids)
        s = step(state.row, state.turn, reply, finish_reason)
        if s.message is None:
            return s.end, None
        nxt = ChainState(state.row, (*state.replies, s.message))
        item = self.render(sample.dataset, sample.source_index, nxt, max_prompt_tokens)
        return (item.reason if isinstance(item, Reject) else None), item

    def render(
        self, dataset: str, source_index: int, state: ChainState, max_prompt_tokens: int | None
    ) -> Sample | Reject:
        """The sample of the chain's next turn (or why it cannot be sent)."""
        row, turn = state.row, state.turn
        sid = f"{row.id}/{turn}"
        messages = prompt_for(state)
        r = self.ctx.render_one(messages, row.tools)
        detail = None
        reason = ""
        if r.error is not None or r.ids is None:
            reason, detail = "template_error", r.error or "no ids"
        elif not r.ids:
            reason, detail = "empty_prompt", "the chat template rendered nothing"
        elif not r.prefix_ok:
            reason, detail = "missing_generation_prefix", "the prompt lacks the generation prefix"
        elif row.tools and r.missing_tools:
            reason = "tools_missing"
            detail = "the rendered prompt lacks the tools " + ", ".join(r.missing_tools)
        elif r.tool_fallback is not None and self.on_tool_fallback.get(dataset) == "reject":
            reason, detail = TOOL_FALLBACK, r.tool_fallback
        elif max_prompt_tokens is not None and len(r.ids) > max_prompt_tokens:
            reason = "prompt_too_long"
            detail = f"{len(r.ids)} prompt tokens; the server accepts at most {max_prompt_tokens}"
        if detail is not None:
            return Reject(dataset, source_index, sid, reason, detail)
        assert r.ids is not None
        info: dict[str, Any] = {"num_tools": len(row.tools or ()), "prompt_messages": len(messages)}
        if row.normalized:
            info["normalized"] = list(row.normalized)
        if r.tool_fallback is not None:
            info[TOOL_FALLBACK] = r.tool_fallback
        return Sample(sid, dataset, source_index, turn, r.ids, info, chain=state)
