"""`spec.sampling`: how the target model samples; sent explicitly on every request."""

from __future__ import annotations

from pydantic import Field

from .base import SpecModel

# SGLang's own default for max_new_tokens is 128, which silently truncates reasoning models.
DEFAULT_MAX_NEW_TOKENS = 16384


class SamplingSpec(SpecModel):
    """Sampling parameters; draftgen always sends every one of them, never the server's default."""

    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    """Sampling temperature; 0 is greedy."""

    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    """Nucleus sampling mass."""

    top_k: int = Field(default=-1, ge=-1)
    """Top-k cut-off; -1 disables it."""

    min_p: float = Field(default=0.0, ge=0.0, le=1.0)
    """Minimum probability relative to the most likely token."""

    max_new_tokens: int = Field(default=DEFAULT_MAX_NEW_TOKENS, ge=1, le=1_048_576)
    """Completion tokens at most per request. Generations that reach it finish as `length`."""

    stop_token_ids: list[int] = Field(default_factory=list)
    """Token ids that end a generation besides the model's own end-of-turn."""

    seed: int | None = None
    """Per-request sampling seed base (`sampling_seed`); each request adds a stable offset."""


class SamplingOverrides(SpecModel):
    """Per-dataset changes to `spec.sampling`; unset fields inherit."""

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Sampling temperature; 0 is greedy."""

    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    """Nucleus sampling mass."""

    top_k: int | None = Field(default=None, ge=-1)
    """Top-k cut-off; -1 disables it."""

    min_p: float | None = Field(default=None, ge=0.0, le=1.0)
    """Minimum probability relative to the most likely token."""

    max_new_tokens: int | None = Field(default=None, ge=1, le=1_048_576)
    """Completion tokens at most per request."""

    stop_token_ids: list[int] | None = None
    """Token ids that end a generation besides the model's own end-of-turn."""

    seed: int | None = None
    """Per-request sampling seed base."""

    def apply(self, base: SamplingSpec) -> SamplingSpec:
        """`base` with this dataset's overrides."""
        return base.model_copy(update=self.model_dump(exclude_none=True))
