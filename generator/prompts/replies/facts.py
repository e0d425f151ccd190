"""`meta.reply` of a record — does the reply reason, does it call a tool — read by the same
family parser the chains read replies with, so the quality report counts what a production server
would have returned (a Llama-3.1 JSON call too, which carries no marker token). A family the
parsers do not know falls back to the marker rule (draftgen/output/reply_facts.py).

    reader = reply_reader(tokenizer)            # once per run
    read_reply(input_ids, output_ids, reader)   # once per record: {"reasoning", "tool_call"}

Only the output ids are decoded: whether the prompt left the reasoning open is read from the
prompt's last ids by the markers (`prompt_opens_reasoning`), no decode of the prompt."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from draftgen.output.reply_facts import (
    PROMPT_TAIL,
    ReplyMarkers,
    markers_of,
    prompt_opens_reasoning,
    reply_facts,
)

from .detect import UnknownReplyFamily, reply_parser_for_tokenizer
from .model import ReplyParser

__all__ = ["ReplyReader", "parsed_facts", "read_reply", "reply_reader"]


@dataclass(frozen=True)
class ReplyReader:
    """How a run reads its replies: the tokenizer's markers, and the family's parser with the
    tokenizer that decodes for it (`parser` None: an unknown family, the markers alone)."""

    markers: ReplyMarkers
    parser: ReplyParser | None = None
    tokenizer: Any = None


def reply_reader(tokenizer: Any) -> ReplyReader | None:
    """The reader of `tokenizer`'s replies (None: no tokenizer, nothing is read)."""
    if tokenizer is None:
        return None
    try:
        parser: ReplyParser | None = reply_parser_for_tokenizer(tokenizer)
    except UnknownReplyFamily:
        parser = None
    return ReplyReader(markers_of(tokenizer), parser, tokenizer if parser else None)


def parsed_facts(
    prompt_tail: Sequence[int],
    output_ids: Sequence[int],
    tokenizer: Any,
    parser: ReplyParser,
    markers: ReplyMarkers,
) -> dict[str, bool] | None:
    """The facts as `parser` reads the decoded output ids: reasoning when the parsed reply has
    some (an empty block or a bare end token is none, as SGLang's `reasoning_content: null`),
    a tool call when it has one. None when the ids do not decode."""
    try:
        # Decode keeps no state in a fast tokenizer: safe beside the feeds' rendering threads.
        text = tokenizer.decode(list(output_ids), skip_special_tokens=False)
    except Exception:  # ids the vocabulary has not: the marker rule reads them
        return None
    reply = parser.parse(text, started_in_reasoning=prompt_opens_reasoning(prompt_tail, markers))
    return {"reasoning": reply.reasoning is not None, "tool_call": bool(reply.tool_calls)}


def read_reply(
    input_ids: Sequence[int], output_ids: Sequence[int], reader: ReplyReader | None
) -> dict[str, bool] | None:
    """`meta.reply` of a record: by the family's parser when the family is known, else by the
    markers (None: no reader, or an unknown family whose tokenizer has no markers)."""
    if reader is None:
        return None
    if reader.parser is not None:
        tail = input_ids[-PROMPT_TAIL:]
        facts = parsed_facts(tail, output_ids, reader.tokenizer, reader.parser, reader.markers)
        if facts is not None:
            return facts
    return reply_facts(input_ids, output_ids, reader.markers)
