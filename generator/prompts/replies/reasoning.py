"""The reasoning split of the `<think>…</think>` families, by the rule of SGLang's reasoning
parsers (`BaseReasoningFormatDetector.detect_and_parse`): the text is in reasoning when the prompt
opened it (or the family always reasons, R1) or when the opening tag appears in it; leading
opening tags are dropped; the reasoning runs to the first closing tag. Without a closing tag the
whole text is reasoning (cut by the length limit), unless the family's tool-call opener comes
first: then the reasoning ends there and the call section is content (Qwen3's `<tool_call>`,
Kimi-K2's `<|tool_calls_section_begin|>`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Split:
    reasoning: str | None
    rest: str


def split_reasoning(
    text: str,
    *,
    open_tag: str = "<think>",
    close_tag: str = "</think>",
    started: bool = False,
    tool_start: str | None = None,
) -> Split:
    """`text` split into its reasoning (`None` when it has none, or an empty block: SGLang
    returns `reasoning_content: null` for both) and the rest."""
    if not (started or open_tag in text):
        return Split(None, text)
    body = text
    while body.startswith(open_tag):
        body = body[len(open_tag) :]
    if close_tag in body:
        reasoning, rest = body.split(close_tag, 1)
        return Split(reasoning or None, rest)
    if tool_start and tool_start in body:
        at = body.index(tool_start)
        return Split(body[:at] or None, body[at:])
    return Split(body or None, "")


def strip_end(text: str, end_tokens: Sequence[str]) -> str:
    """`text` without the end-of-turn tokens it ends with (the stop token SGLang puts in the
    output ids; the server's own decode skips it as a special token)."""
    changed = True
    while changed:
        changed = False
        for token in end_tokens:
            if token and text.endswith(token):
                text = text[: -len(token)]
                changed = True
    return text


def ends_with_open(prompt_text: str, open_tag: str = "<think>") -> bool:
    """Whether a prompt ends inside an opened reasoning block (`…<think>` or `…<think>\\n`)."""
    tail = prompt_text.rstrip()
    return tail.endswith(open_tag)
