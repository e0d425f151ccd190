"""`spec.datasets[].thinking` and `thinkingMix`: whether the target model reasons before it
answers, per dataset or mixed per conversation (docs/models.md has each family's switch)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictFloat, StrictInt

from .base import SpecModel

ThinkingMode = Literal["on", "off", "mix"]


class ThinkingMix(SpecModel):
    """How `thinking: mix` divides a dataset's conversations between the two modes."""

    ratio: StrictFloat = Field(default=0.5, ge=0.0, le=1.0)
    """Share of conversations rendered with thinking on (the rest off), decided per conversation
    from `seed` and the row's identity: the same conversation gets the same mode every run."""

    seed: StrictInt = 0
    """Seed of the per-conversation choice; another seed gives another split at the same ratio."""


def check_thinking(
    fmt: str, thinking: ThinkingMode | None, mix: ThinkingMix | None, history: str = "dataset"
) -> None:
    """`thinkingMix` belongs to `thinking: mix` only; pretokenized prompts are never rendered;
    chains (`history: regenerated`) do not take a thinking mode yet."""
    if thinking is not None and history != "dataset":
        raise ValueError(
            "thinking: chains (history: regenerated) render their turns with the job's "
            "model.chatTemplateKwargs only, not yet with a per-dataset thinking mode; remove "
            "thinking (and set the switch in model.chatTemplateKwargs), or use history: dataset"
        )
    if thinking is not None and fmt == "pretokenized":
        raise ValueError(
            "thinking: a pretokenized dataset's prompts are sent exactly as they are, so no "
            "template switch can apply; remove thinking (or give the rows as messages)"
        )
    if mix is not None and thinking != "mix":
        raise ValueError(
            f"thinkingMix applies to thinking: mix only, and thinking is {thinking or 'unset'}; "
            "remove thinkingMix or set thinking: mix"
        )
