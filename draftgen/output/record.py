"""The two kinds of line draftgen writes: a `Record` (one line of a shard: one generation) and a
`Reject` (one line of `rejects.jsonl`). docs/output-format.md lists their fields and a test keeps
the two in step.

A field the next change adds is one line in its class: `name: type | None = optional()` is
written only when set, so records of older runs and of runs that never set it stay as they were.
The write path is plain slotted dataclasses and one dict per line (`to_json`); no validation
library stands between a generation and its line (bench/client_cost.py measures that path).
Reading (`from_json`) checks what a consumer relies on and raises `BadRecord` naming the field."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from draftgen.errors import DraftgenError, ExitCode

__all__ = ["BadRecord", "Meta", "Record", "Reject", "optional", "reject_key_of"]

_OMIT = "omit_when_none"

TOOL_FALLBACK = "tool_fallback"
"""The key of `meta.sample` set on a sample whose tools the template would not declare: the
fallback declaration was used (docs/generator.md)."""

MAX_TOKEN_ID = 2**31
"""Token ids at or above this are damage, not a vocabulary (the exporters store int64)."""


def optional() -> Any:
    """A field written only when it is not None (a field added after the first release)."""
    return field(default=None, metadata={_OMIT: True})


def _float(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) else None


class BadRecord(DraftgenError, ValueError):
    """A line that is JSON but not a record draftgen writes; the message names the field."""

    exit_code = ExitCode.INVALID
    fix = "the line is not draftgen's record: move the file aside, or regenerate the dataset"


def _names(cls: type) -> tuple[tuple[str, bool], ...]:
    return tuple((f.name, bool(f.metadata.get(_OMIT))) for f in fields(cls))


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


@dataclass(slots=True)
class Meta:
    """How a record was obtained (`meta` of a record)."""

    sampling: dict[str, Any] | None
    """The sampling parameters sent (a per-request `sampling_seed` among them when seeded)."""
    cached_tokens: int | None
    e2e_latency: float | None
    server: str | None
    """The server's URL, credentials removed."""
    attempts: int | None
    created_at: float | None
    """Unix seconds the record was written."""
    sample: dict[str, Any] | None = optional()  # noqa: RUF009 (a field() with metadata)
    """Facts from the input side (`num_tools`, `prompt_messages`, `normalized`, `tool_fallback`)."""
    dp_rank: int | None = optional()
    """The server's data-parallel rank the request was pinned to (servers with several ranks)."""
    thinking: bool | None = optional()
    """The prompt's thinking mode (`spec.datasets[].thinking`: true on, false off)."""
    chain: dict[str, Any] | None = optional()  # noqa: RUF009
    """`history: regenerated`: the chain this turn belongs to, `{"id": "<dataset>/<row key>",
    "turns": assistant turns the conversation asks for}`."""
    chain_end: str | None = optional()
    """On a chain's last record: why the chain ended there (docs/output-format.md)."""
    reply: dict[str, Any] | None = optional()  # noqa: RUF009
    """What the reply holds, read from its ids: `reasoning`, `tool_call` (docs/quality.md)."""
    degenerate: dict[str, Any] | None = optional()  # noqa: RUF009
    """Set when the reply is caught in a loop: what the rule found (docs/quality.md)."""
    read_from: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    """The object this was read from (not a field of the file): written back unchanged, keys
    this version does not know included."""

    def to_json(self) -> dict[str, Any]:
        if self.read_from is not None:
            return self.read_from
        out: dict[str, Any] = {}
        for name, omit in _META_FIELDS:
            value = getattr(self, name)
            if not (omit and value is None):
                out[name] = value
        return out

    @classmethod
    def from_json(cls, data: Any) -> Meta:
        """Tolerant: a missing or odd `meta` reads as unknown values, never as an error."""
        if not isinstance(data, dict):
            return cls(None, None, None, None, None, None)
        sampling, sample = data.get("sampling"), data.get("sample")
        at, latency = data.get("created_at"), data.get("e2e_latency")
        return cls(
            sampling=sampling if isinstance(sampling, dict) else None,
            cached_tokens=_int(data.get("cached_tokens")),
            e2e_latency=latency if isinstance(latency, int | float) else None,
            server=data.get("server") if isinstance(data.get("server"), str) else None,
            attempts=_int(data.get("attempts")),
            created_at=_float(at),
            sample=sample if isinstance(sample, dict) else None,
            dp_rank=_int(data.get("dp_rank")),
            thinking=data["thinking"] if type(data.get("thinking")) is bool else None,
            chain=data.get("chain") if isinstance(data.get("chain"), dict) else None,
            chain_end=data.get("chain_end") if isinstance(data.get("chain_end"), str) else None,
            reply=_dict(data.get("reply")),
            degenerate=_dict(data.get("degenerate")),
            read_from=data,
        )

    @property
    def tool_fallback(self) -> bool:
        """The sample's tools were declared in a fallback form."""
        return bool(self.sample and self.sample.get(TOOL_FALLBACK))


_META_FIELDS = tuple(n for n in _names(Meta) if n[0] != "read_from")


@dataclass(slots=True)
class Record:
    """One generation: the prompt's ids, the server's answer, and how it was obtained."""

    id: str
    """Stable across runs: `<dataset>/<row key>/<turn>`."""
    dataset: str
    source_index: int | None
    """Row number in the source (0-based, across files in name order)."""
    turn: int | None
    """Which assistant turn was regenerated (0-based)."""
    input_ids: list[int]
    output_ids: list[int]
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    """`stop` or `length` (aborted generations are never written)."""
    matched_stop: int | str | None
    meta: Meta | None
    """Always written; None when a record read back has none."""

    def to_json(self) -> dict[str, Any]:
        """The line's object, fields in declaration order (the on-disk order)."""
        out: dict[str, Any] = {}
        for name, omit in _RECORD_FIELDS:
            value = getattr(self, name)
            if not (omit and value is None):
                out[name] = value
        if self.meta is not None:
            out["meta"] = self.meta.to_json()
        return out

    @property
    def truncated(self) -> bool:
        """Cut at maxNewTokens."""
        return self.finish_reason == "length"

    @property
    def tool_fallback(self) -> bool:
        """The sample's tools were declared in a fallback form (`meta.sample.tool_fallback`)."""
        return self.meta is not None and self.meta.tool_fallback

    @classmethod
    def from_json(cls, data: Any, *, strict: bool = True) -> Record:
        """The record of a parsed line; `BadRecord` names what the generator never writes.

        `strict` (export: the data itself is used) requires every field a trainer needs and
        checks every token id. Counting (`strict=False`: resume, stats) needs only the id and
        the lengths, as resume always has: a missing `finish_reason` counts as `stop`, a
        missing `dataset` as the directory's."""
        if not isinstance(data, dict):
            raise BadRecord("a record must be a JSON object")
        missing = [f for f in (REQUIRED if strict else ("id",)) if f not in data]
        if missing:
            raise BadRecord(f"record lacks {', '.join(missing)}")
        for name in ("id", "dataset", "finish_reason"):
            if name in data and not isinstance(data[name], str):
                raise BadRecord(f"{name} is not a string")
        lengths = {}
        for name, count in (("input_ids", "prompt_tokens"), ("output_ids", "completion_tokens")):
            ids, n = data.get(name), _int(data.get(count))
            if not isinstance(ids, list) or (
                strict and not all(type(t) is int and 0 <= t < MAX_TOKEN_ID for t in ids)
            ):
                if strict or n is None:
                    raise BadRecord(
                        f"{name} is not a list of token ids (integers in [0, {MAX_TOKEN_ID}))"
                    )
                ids = []
            lengths[name] = (ids, len(ids) if n is None else n)
        for name in ("source_index", "turn"):
            value = data.get(name)
            if value is not None and not (type(value) is int and 0 <= value < 2**63):
                raise BadRecord(f"{name} is not a non-negative 64-bit integer")
        (input_ids, prompt), (output_ids, completion) = lengths["input_ids"], lengths["output_ids"]
        extra = {name: data.get(name) for name, omit in _RECORD_FIELDS if omit and name in data}
        return cls(
            id=data["id"],
            dataset=data.get("dataset", ""),
            source_index=data.get("source_index"),
            turn=data.get("turn"),
            input_ids=input_ids,
            output_ids=output_ids,
            prompt_tokens=prompt,
            completion_tokens=completion,
            finish_reason=data.get("finish_reason", "stop"),
            matched_stop=data.get("matched_stop"),  # as read: an id, a string or null
            meta=None if "meta" not in data else Meta.from_json(data["meta"]),
            **extra,
        )


_RECORD_FIELDS = tuple(n for n in _names(Record) if n[0] != "meta")
REQUIRED = ("id", "dataset", "input_ids", "output_ids", "finish_reason")
"""What a line must hold to be exported (older records may lack the token counts)."""


@dataclass(slots=True)
class Reject:
    """One line of `rejects.jsonl`: a row or request that was refused, with the reason."""

    dataset: str
    source_index: int | None
    id: str | None
    """The sample's id (None: a row unreadable before it had one)."""
    reason: str
    """A short code (`malformed_json`, `prompt_too_long`, `request_failed`, ...)."""
    detail: str
    created_at: float | None
    finish_reason: str | None = optional()
    """What SGLang said on the last attempt, when it answered (`abort`)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, omit in _REJECT_FIELDS:
            value = getattr(self, name)
            if not (omit and value is None):
                out[name] = value
        return out

    @classmethod
    def from_json(cls, data: Any) -> Reject:
        """Tolerant: a reject line is a count, never a reason to stop (`unknown` reason)."""
        if not isinstance(data, dict):
            raise BadRecord("a reject must be a JSON object")
        at, finish = data.get("created_at"), data.get("finish_reason")
        return cls(
            dataset=str(data.get("dataset", "")),
            source_index=data.get("source_index"),
            id=data.get("id"),
            reason=str(data.get("reason", "unknown")),
            detail=str(data.get("detail", "")),
            created_at=_float(at),
            finish_reason=finish if isinstance(finish, str) else None,
        )

    @property
    def key(self) -> tuple:
        """What makes a reject the same one again (a resumed run does not record it twice)."""
        return reject_key_of(self.id, self.source_index, self.reason)


_REJECT_FIELDS = _names(Reject)


def reject_key_of(rid: object, source_index: object, reason: object) -> tuple:
    """A reject with a sample id is that sample's, wherever its row moved in the source (rows
    inserted above it shift its index); one without an id (an unreadable row) is its row's."""
    if isinstance(rid, str):
        return (rid, reason)
    return (None, source_index, reason)
