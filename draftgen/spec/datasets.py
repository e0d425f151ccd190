"""`spec.datasets[]`: where prompts come from, how they are read, and when to stop."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt, field_validator, model_validator

from draftgen.contract.dataset_location import HUB_DATASETS, parse_hub_dataset

from .base import SpecModel
from .planning import ExpectedLengths
from .quantity import Quantity
from .sampling import SamplingOverrides
from .thinking import ThinkingMix, ThinkingMode, check_thinking

ROW_FIELDS = (
    "id", "prompt", "system", "messages", "conversations", "tools", "chat", "input_ids",
)  # fmt: skip
"""The row fields the formats read (`columns` maps them to a source's own names)."""

DatasetFormat = Literal["messages", "sharegpt", "glaive", "prompt", "pretokenized"]

# Dataset names become directory names and metric labels: no separators, no dots at the ends.
DATASET_NAME_PATTERN = r"^[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?$"


class Budget(SpecModel):
    """When a dataset is done. Any combination; the first limit reached ends the dataset.
    Tokens produced by earlier runs of the same job count."""

    completion_tokens: Quantity | None = None
    """Generated tokens at most, summed over the dataset's samples. A whole number or a
    quantity: `10M`, `1.5e7`, `250k`."""

    total_tokens: Quantity | None = None
    """Prompt plus generated tokens at most, summed over the dataset's samples."""

    max_samples: Quantity | None = None
    """Samples at most (a sample is one generated assistant turn)."""

    @property
    def unlimited(self) -> bool:
        return (
            self.completion_tokens is None
            and self.total_tokens is None
            and self.max_samples is None
        )


class Selection(SpecModel):
    """Which rows are taken, in which order."""

    mode: Literal["sequential", "shuffle"] = "sequential"
    """`sequential` takes rows in file order; `shuffle` a seeded random order, the same every run."""

    seed: StrictInt = 0
    """Seed of the shuffle."""


class DatasetSpec(SpecModel):
    """One input dataset and its budget."""

    name: str = Field(pattern=DATASET_NAME_PATTERN)
    """Unique name; becomes the output directory and a metric label (lowercase letters, digits,
    `-` and `_`, at most 63 characters)."""

    source: str = Field(min_length=1)
    """JSONL, Parquet, CSV/TSV or Arrow file (or a directory of them): a path, relative to the job
    file when run locally and inside `spec.inputs` in a cluster, or a `file://` URI. A directory
    written by `datasets`' `save_to_disk` is recognized by its shape;
    `hf://datasets/ORG/NAME[@REV][/PATH]` is a dataset in the local Hugging Face hub cache
    (`HF_HUB_CACHE`, `HF_HOME`), never downloaded (docs/input-formats.md)."""

    split: str | None = Field(default=None, pattern=r"^\w+(\.\w+)*$")
    """Which split of a Hugging Face dataset (a `save_to_disk` DatasetDict, an `hf://datasets/`
    source, or a directory laid out like one: `train`, `validation`, `test`, ...). Unset, a dataset
    of one split is read whole and one of several is refused with their names; a plain
    directory is read whole."""

    format: DatasetFormat
    """Row shape: `messages` (OpenAI), `sharegpt`, `glaive` (function calling v2), `prompt`, or
    `pretokenized` (rows with `input_ids`, sent exactly as they are)."""

    columns: dict[str, str] = Field(default_factory=dict)
    """The source's own name for each field the format reads, where they differ: `{prompt:
    question, system: instruction}` reads a CSV/TSV (or JSONL, Parquet) whose columns are
    `question` and `instruction` as a `prompt` dataset."""

    budget: Budget = Field(default_factory=Budget)
    """When the dataset is done; no limits means every row."""

    selection: Selection = Field(default_factory=Selection)
    """Row order and subset."""

    turns: Literal["last", "all"] = "last"
    """`last` regenerates the final assistant turn; `all` every assistant turn in order, each
    conditioned on the conversation before it."""

    history: Literal["dataset", "regenerated"] = "dataset"
    """With `turns: all`, what earlier assistant turns a prompt carries: `dataset` the
    conversation as the dataset wrote it (every turn an independent sample); `regenerated` the
    target's own earlier replies — the conversation becomes a chain, turn k+1 prompted by the
    given user and tool turns and what the target answered at turns 0..k (parsed by the family's
    rules, re-rendered by the chat template as a server would for a client sending the
    conversation back). A chain ends early, recorded in `meta.chainEnd`, when a reply's tool
    calls differ from the dataset's (docs/input-formats.md)."""

    tool_result_name: Literal["none", "function"] = "none"
    """How the tool results draftgen builds from `sharegpt` observations and `glaive` FUNCTION
    RESPONSE turns are named: `none` gives them no `name` (as OpenAI-format tool messages have
    none), `function` the called function's name (some templates, e.g. Kimi's, then print it in
    the turn's header instead of `tool`). Choose what the model saw in training. `messages`
    rows keep the `name` their tool messages have or lack."""

    on_tool_fallback: Literal["keep", "reject"] = "keep"
    """What to do with a prompt whose tools the tokenizer declared in a fallback form (Kimi's
    tokenizer, for example, declares tools it cannot convert to its TypeScript-like syntax as
    JSON and only prints a warning): `keep` sends it and records the fallback in `meta.sample`
    and the manifest, `reject` records a `tool_fallback` reject instead."""

    thinking: ThinkingMode | None = None
    """Reasoning before the answer: `on`, `off`, or `mix` (per conversation, see `thinkingMix`),
    through the model family's own switch (Kimi-K2.5 and DeepSeek-V3.1 `thinking`, Qwen3
    `enable_thinking`, gpt-oss `reasoning_effort`) and with its generation prefix; it overrides
    that switch in `model.chatTemplateKwargs` and `model.generationPrefix` for this dataset.
    Unset: the job's `chatTemplateKwargs` and `generationPrefix` as they are (docs/models.md)."""

    thinking_mix: ThinkingMix | None = None
    """With `thinking: mix`: the share of conversations with thinking on, and the seed."""
    on_degenerate: Literal["keep", "drop"] = "keep"
    """What to do with a reply caught in a loop (degenerate repetition, docs/quality.md): `keep`
    writes it with `meta.degenerate` set (`draftgen export --skip-degenerate` leaves it out),
    `drop` records a `degenerate_repetition` reject instead. Both count in the quality report."""

    sampling: SamplingOverrides | None = None
    """Changes to `spec.sampling` for this dataset."""

    expected: ExpectedLengths | None = None
    """Mean prompt and completion lengths, for the capacity planner (concurrency and ETA)."""

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        if value.startswith(HUB_DATASETS):
            parse_hub_dataset(value)  # ValueError: how to write it
            return value
        path = value.removeprefix("file://")
        if value.startswith("hf://"):
            raise ValueError(
                f"{value!r}: a dataset on the hub is hf://datasets/ORG/NAME (read from the local "
                "hub cache); hf://ORG/NAME names a model"
            )
        if "://" in path:
            raise ValueError(
                f"{value!r}: only local paths, file:// URIs and hf://datasets/ORG/NAME (in the "
                "local hub cache) are read; copy the data onto the inputs volume"
            )
        if ".." in path.replace("\\", "/").split("/"):
            raise ValueError(
                f"{value!r}: `..` may not appear in a source path; name the file directly"
            )
        return value

    @field_validator("columns")
    @classmethod
    def _columns(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(ROW_FIELDS))
        if unknown:
            raise ValueError(
                f"{', '.join(unknown)}: not a field any format reads; map one of "
                f"{', '.join(ROW_FIELDS)} to the source's column"
            )
        return value

    @model_validator(mode="after")
    def _turns(self) -> DatasetSpec:
        if self.format in ("pretokenized", "prompt") and self.turns == "all":
            raise ValueError(
                f"turns: `all` needs conversations, but format {self.format} has a single prompt "
                "per row; use turns: last"
            )
        check_thinking(self.format, self.thinking, self.thinking_mix, self.history)
        if self.history == "regenerated" and self.turns != "all":
            raise ValueError(
                "history: `regenerated` chains every assistant turn of a conversation, but turns "
                f"is {self.turns}; set turns: all, or history: dataset"
            )
        return self
