"""Thinking modes (`spec.datasets[].thinking`): each family's documented switch, the generation
prefix that goes with each mode, and the per-conversation choice of `thinking: mix`.

The family is recognised from the chat template itself: a token only its template writes and the
switch it reads. A dataset's mode becomes a `Variant` of the job's rendering: the job's
`chatTemplateKwargs` with the switch set, and the mode's prefix in place of `generationPrefix`.
The start-up probe renders each variant and refuses to start when its prompt does not end with
the documented prefix (a template other than the family's published one).

| family | switch | on | off | prefix on | prefix off |
|---|---|---|---|---|---|
| Kimi-K2.5 | `thinking` | true | false | `<think>` | `<think></think>` |
| Qwen3 | `enable_thinking` | true | false | `<|im_start|>assistant\\n` | `</think>\\n\\n` |
| DeepSeek-V3.1 | `thinking` | true | false | `<think>` | `</think>` |
| gpt-oss | `reasoning_effort` | the job's, else `medium` | `low` | `<|start|>assistant` | same |

gpt-oss cannot switch its reasoning off: `low` is its least (the model still writes a short
`analysis` message), which is what `off` means for it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from draftgen.generator.prompts.integrity import IntegrityError
from draftgen.spec import DatasetSpec, GenerationJob


@dataclass(frozen=True)
class Switch:
    """One family's thinking switch, as its model card documents it."""

    family: str
    key: str
    marker: str  # a token only this family's template writes
    on: Any  # None: the job's own value of `key` (gpt-oss's effort), else `default_on`
    off: Any
    prefix_on: str
    prefix_off: str
    default_on: Any = True


SWITCHES = (
    Switch("gpt-oss", "reasoning_effort", "<|channel|>", None, "low", "<|start|>assistant",
           "<|start|>assistant", default_on="medium"),
    Switch("qwen3", "enable_thinking", "<|im_start|>", True, False, "<|im_start|>assistant\n",
           "</think>\n\n"),
    Switch("kimi-k2.5", "thinking", "<|im_middle|>", True, False, "<think>", "<think></think>"),
    Switch("deepseek-v3.1", "thinking", "<｜Assistant｜>", True, False, "<think>", "</think>"),
)  # fmt: skip


@dataclass(frozen=True)
class Variant:
    """How one thinking mode renders: keyword arguments over the job's, and its prefix."""

    kwargs: dict[str, Any]
    prefix: str
    prefix_ids: tuple[int, ...] = ()
    field: str = "spec.datasets[].thinking"  # the field that asked for it, for errors


def detect_switch(template: str | None) -> Switch | None:
    """The family whose switch the template reads (None: no known switch)."""
    for switch in SWITCHES:
        if template and switch.marker in template and re.search(rf"\b{switch.key}\b", template):
            return switch
    return None


def _field(dataset: DatasetSpec) -> str:
    return f"spec.datasets[{dataset.name}].thinking"


def variants(job: GenerationJob, template: str | None) -> dict[str, Variant]:
    """`on` and `off` for a job with a dataset that sets `thinking` (else none), or an
    `IntegrityError` naming the field when the template has no switch or the job's own
    settings contradict the family's."""
    users = [ds for ds in job.spec.datasets if ds.thinking is not None]
    if not users:
        return {}
    switch = detect_switch(template)
    if switch is None:
        raise IntegrityError(
            f"{_field(users[0])}: the chat template reads none of the thinking switches draftgen "
            "knows (Kimi-K2.5 and DeepSeek-V3.1 `thinking`, Qwen3 `enable_thinking`, gpt-oss "
            "`reasoning_effort`), so the mode cannot be chosen; remove thinking and set "
            "model.chatTemplateKwargs for your template yourself"
        )
    model = job.spec.model
    if model.generation_prefix and model.generation_prefix not in (
        switch.prefix_on,
        switch.prefix_off,
    ):
        raise IntegrityError(
            f"spec.model.generationPrefix: {model.generation_prefix!r} is neither of "
            f"{switch.family}'s prefixes ({switch.prefix_on!r} thinking, {switch.prefix_off!r} "
            f"not), and {_field(users[0])} chooses one of them per dataset; remove "
            "model.generationPrefix or correct it"
        )
    on = switch.default_on
    if switch.on is None and switch.key in model.chat_template_kwargs:
        on = model.chat_template_kwargs[switch.key]
        if on == switch.off:
            raise IntegrityError(
                f"spec.model.chatTemplateKwargs.{switch.key}: {on!r} is {switch.family}'s "
                f"thinking-off setting, and {_field(users[0])} asks for thinking on; set "
                f"{switch.key} to the effort thinking on should use, or remove it"
            )
    base, field = dict(model.chat_template_kwargs), _field(users[0])
    return {
        "on": Variant({**base, switch.key: on}, switch.prefix_on, field=field),
        "off": Variant({**base, switch.key: switch.off}, switch.prefix_off, field=field),
    }


def thinks(dataset: DatasetSpec, row_key: str) -> bool | None:
    """Whether the row's conversation is rendered with thinking on (None: the dataset leaves
    the job's settings alone). `mix` decides from the seed and the row's identity alone, so a
    resumed run, or any row order, gives each conversation the mode it had."""
    if dataset.thinking is None:
        return None
    if dataset.thinking != "mix":
        return dataset.thinking == "on"
    mix = dataset.thinking_mix
    ratio, seed = (0.5, 0) if mix is None else (mix.ratio, mix.seed)
    digest = hashlib.blake2b(
        f"{seed}\0{row_key}".encode("utf-8", "surrogatepass"), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big") / 2**64 < ratio


def mode(on: bool | None) -> str | None:
    """The variant key of a conversation's choice."""
    return None if on is None else ("on" if on else "off")
