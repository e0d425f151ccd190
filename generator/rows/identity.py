"""Stable identities, and which assistant turns of a conversation become samples.

A row's key is its explicit `id` (or `uuid`) field when it has one, else the SHA-256 of its
canonical JSON (sorted keys, no whitespace, null fields dropped so a JSONL row and the same row
read from Parquet agree), cut to 128 bits. Positions never enter the key: the same row keeps its
id when files are reordered, renamed or grown, which is what resume and deduplication rely on.
A row repeated verbatim gets `<hash>~2`, `~3`, ... (each copy is a sample; the copies are
interchangeable, so the numbering is stable); two different rows claiming one explicit `id` are a
data error (the later one is rejected as `duplicate_id`). A sample's id is
`<dataset>/<row key>/<turn>`.

Turns (`spec.datasets[].turns`):

- `last`: one sample for the final assistant turn — the conversation before the last assistant
  message is the prompt. If the conversation ends with a user or tool turn, the sample is the
  *next* assistant turn and the whole conversation is the prompt.
- `all`: one sample per assistant turn (plus the pending one if the conversation ends with a user
  or tool turn), each prompt being the conversation **as given** up to that turn — not the
  target model's own regenerated earlier turns. Two reasons: the samples are independent, so they
  run in parallel instead of waiting for each other (a 10-turn conversation would otherwise take
  10 sequential round trips and block resume on partial chains); and later user turns and tool
  responses were written as answers to the *given* assistant turns and tool calls, so they stay
  consistent with the history only if that history is kept.
  With `history: regenerated` the turns become a chain instead, each prompted by the target's
  own earlier replies (`generator/prompts/chains.py`); the sample ids stay the same.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

ID_FIELDS = ("id", "uuid")


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def canonical_json(row: dict[str, Any]) -> bytes:
    """The row's content as bytes that do not depend on key order, spacing or null fields."""
    return json.dumps(
        _drop_nulls(row), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    ).encode("utf-8", "surrogatepass")


def explicit_id(row: dict[str, Any]) -> str | None:
    """The row's own `id`/`uuid` (a non-empty string or an integer), if it has one."""
    for field in ID_FIELDS:
        value = row.get(field)
        if isinstance(value, bool):
            continue
        if isinstance(value, int) or (isinstance(value, str) and value.strip()):
            return str(value).strip()
    return None


def row_key(row: dict[str, Any]) -> str:
    """The row's explicit id, else the hash of its canonical content."""
    return explicit_id(row) or hashlib.sha256(canonical_json(row)).hexdigest()[:32]


def repeat_key(key: str, occurrence: int) -> str:
    """Key of the n-th (2, 3, ...) identical row: identical rows are interchangeable, so numbering
    them in reading order stays correct under any reordering of the files."""
    return f"{key}~{occurrence}"


def sample_id(dataset: str, key: str, turn: int) -> str:
    return f"{dataset}/{key}/{turn}"


def select_turns(
    messages: list[dict[str, Any]], turns: str
) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """`(turn, prompt messages)` for each assistant turn to regenerate, in conversation order.

    `turn` numbers the row's assistant turns from 0; a pending turn (the conversation ends with
    a user or tool message) is numbered after the given ones.
    """
    positions = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    pending = bool(messages) and messages[-1]["role"] != "assistant"
    if turns == "last":
        if pending:
            yield len(positions), messages
        elif positions:
            yield len(positions) - 1, messages[: positions[-1]]
        return
    for turn, pos in enumerate(positions):
        yield turn, messages[:pos]
    if pending:
        yield len(positions), messages


def has_question(prompt: list[dict[str, Any]]) -> bool:
    """A prompt worth a generation holds something besides system messages."""
    return any(m["role"] != "system" for m in prompt)
