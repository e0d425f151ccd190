"""`spec.exports`: exports for drafter trainers, written by the generator Job right after
generation onto the output volume, so the records never have to leave it; and what `status`
reports of each."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, field_validator

from .base import SpecModel, StatusModel

ExportFormat = Literal["speculators", "specforge", "parquet"]


def confined_path(value: str) -> str:
    """A relative path without `..` (it must stay on the output volume)."""
    parts = value.replace("\\", "/").split("/")
    if value.startswith("/") or ".." in parts or value.strip("/") in ("", "."):
        raise ValueError(
            f"{value!r}: must be a relative sub-directory without `..`, so the export stays on "
            "the output volume; e.g. path: exports/speculators"
        )
    return value.strip("/")


class ExportOptionsSpec(SpecModel):
    """What `draftgen export` keeps and how it splits (the same choices as its flags)."""

    include_truncated: StrictBool = False
    """Keep samples that stopped at maxNewTokens (dropped by default)."""

    skip_degenerate: StrictBool = False
    """Leave out replies caught in a loop (`meta.degenerate`, kept by default; docs/quality.md)."""

    mix: list[str] = Field(default_factory=list)
    """Per-dataset copies per sample or a completion-token cap: `NAME=WEIGHT` (0.5 keeps half,
    2 doubles) or `NAME=tokens:N`; unnamed datasets are carried once."""

    validation_fraction: StrictFloat = Field(default=0.0, ge=0.0, lt=1.0)
    """Share of sample ids in the validation split."""

    split_seed: StrictInt = 0
    """Seed of the id hash behind the split and the mix."""

    specforge_text: StrictBool = False
    """specforge only: `{id, text}` rows (for SpecForge's `--is-preformatted`)."""

    @field_validator("mix")
    @classmethod
    def _mix_entries(cls, value: list[str]) -> list[str]:
        for entry in value:
            name, sep, weight = entry.partition("=")
            if not (name and sep and weight):
                raise ValueError(f"{entry!r}: write NAME=WEIGHT or NAME=tokens:N, e.g. chat=0.5")
        return value


class ExportSpec(SpecModel):
    """One export, run by the generator Job once every dataset is done."""

    format: ExportFormat
    """speculators (input_ids + loss_mask JSONL), specforge (conversations JSONL), parquet (a
    Hugging Face datasets directory with a dataset card)."""

    path: str = Field(min_length=1)
    """Directory on the output volume, relative to `output.mountPath` (beside the records,
    not inside them), e.g. `exports/speculators`; replaced whole by each run."""

    options: ExportOptionsSpec = Field(default_factory=ExportOptionsSpec)
    """What the export keeps and how it splits."""

    @field_validator("path")
    @classmethod
    def _confined(cls, value: str) -> str:
        return confined_path(value)


class ExportStatus(StatusModel):
    """One export the generator Job wrote."""

    format: str
    """The export's format."""

    path: str
    """Where it is, inside the generator pod (on the output volume)."""

    rows: int = 0
    """Rows written, over every split."""

    card: str | None = None
    """The dataset card (README.md) inside the export."""
