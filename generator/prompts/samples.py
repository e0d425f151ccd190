"""What the input side hands the request side: a ready-to-send sample, or a reject."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from draftgen.contract.metrics import RejectReason

# The reject reason, and the `meta.sample` key, of a prompt whose tools were declared in a
# fallback form (`render.Rendered.tool_fallback`: why).
from draftgen.output.record import TOOL_FALLBACK

__all__ = ["TOOL_FALLBACK", "Reject", "Sample"]


@dataclass(frozen=True, slots=True)
class Sample:
    """One generation to request: an assistant turn to regenerate, already tokenized."""

    id: str
    """Stable across runs and file reorderings: `<dataset>/<row key>/<turn>`."""

    dataset: str
    """Dataset name."""

    source_index: int
    """Row number in the source (0-based, across files in name order)."""

    turn: int
    """Which assistant turn is regenerated (0-based among the row's assistant turns)."""

    input_ids: list[int]
    """The prompt exactly as it will be sent."""

    info: dict[str, Any] = field(default_factory=dict)
    """Extra facts for the record's `meta.sample`: `num_tools`, `prompt_messages`, and when they
    apply `normalized` (what the format's rules changed, e.g. `glaive_quoted_arguments`) and
    `tool_fallback` (why the tools were declared in a fallback form)."""

    thinking: bool | None = None
    """The thinking mode it was rendered in (`spec.datasets[].thinking`); None: not chosen."""
    chain: Any = None
    """`history: regenerated`: the chain at this turn (`chains.ChainState`), else None."""


@dataclass(frozen=True, slots=True)
class Reject:
    """A row (or part of one) that cannot become a sample, with the reason."""

    dataset: str
    source_index: int
    id: str | None
    reason: str
    """One of `RejectReason` (draftgen/contract/metrics.py): `malformed_json`, `missing_field`,
    `empty_conversation`, `prompt_too_long`, `tool_fallback`, `request_failed`, ..."""

    detail: str = ""
    """What exactly was wrong, for a person."""

    finish_reason: str | None = None
    """What SGLang said on the last attempt (`abort`), when a request ended as this reject."""

    def __post_init__(self) -> None:
        # One closed set of reasons, so every reason's counter can exist at 0 from the start; a
        # reason outside it is a bug here, not a new label value on a dashboard.
        object.__setattr__(self, "reason", RejectReason(self.reason))
