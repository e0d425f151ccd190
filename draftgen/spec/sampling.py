"""`spec.sampling`: how the target model samples; sent explicitly on every request."""

from __future__ import annotations

from pydantic import Field, StrictFloat, StrictInt, field_validator

from .base import SpecModel

# SGLang's own default for max_new_tokens is 128, which silently truncates reasoning models.
DEFAULT_MAX_NEW_TOKENS = 16384


class SamplingSpec(SpecModel):
    """Sampling parameters; draftgen always sends every one of them, never the server's default."""

    temperature: StrictFloat = Field(default=1.0, ge=0.0, le=2.0)
    """Sampling temperature; 0 is greedy."""

    top_p: StrictFloat = Field(default=1.0, gt=0.0, le=1.0)
    """Nucleus sampling mass."""

    top_k: StrictInt = Field(default=-1, ge=-1)
    """Top-k cut-off; -1 disables it."""

    min_p: StrictFloat = Field(default=0.0, ge=0.0, le=1.0)
    """Minimum probability relative to the most likely token."""

    max_new_tokens: StrictInt = Field(default=DEFAULT_MAX_NEW_TOKENS, ge=1, le=1_048_576)
    """Completion tokens at most per request. Generations that reach it finish as `length`."""

    stop_token_ids: list[StrictInt] = Field(default_factory=list)
    """Token ids that end a generation besides the model's own end-of-turn."""

    seed: StrictInt | None = None
    """Per-request sampling seed base (`sampling_seed`); each request adds a stable offset."""

    @field_validator("top_k")
    @classmethod
    def _top_k_keeps_a_token(cls, v: int | None) -> int | None:
        if v == 0:
            raise ValueError(
                "0 keeps no token (SGLang refuses every request); use -1 to disable the cut-off "
                "or a positive k"
            )
        return v


class SamplingOverrides(SpecModel):
    """Per-dataset changes to `spec.sampling`; unset fields inherit."""

    temperature: StrictFloat | None = Field(default=None, ge=0.0, le=2.0)
    """Sampling temperature; 0 is greedy."""

    top_p: StrictFloat | None = Field(default=None, gt=0.0, le=1.0)
    """Nucleus sampling mass."""

    top_k: StrictInt | None = Field(default=None, ge=-1)
    """Top-k cut-off; -1 disables it."""

    min_p: StrictFloat | None = Field(default=None, ge=0.0, le=1.0)
    """Minimum probability relative to the most likely token."""

    max_new_tokens: StrictInt | None = Field(default=None, ge=1, le=1_048_576)
    """Completion tokens at most per request."""

    stop_token_ids: list[StrictInt] | None = None
    """Token ids that end a generation besides the model's own end-of-turn."""

    seed: StrictInt | None = None
    """Per-request sampling seed base."""

    @field_validator("top_k")
    @classmethod
    def _top_k_keeps_a_token(cls, v: int | None) -> int | None:
        if v == 0:
            raise ValueError(
                "0 keeps no token (SGLang refuses every request); use -1 to disable the cut-off "
                "or a positive k"
            )
        return v

    def apply(self, base: SamplingSpec) -> SamplingSpec:
        """`base` with this dataset's overrides."""
        return base.model_copy(update=self.model_dump(exclude_none=True))
