"""`spec.sampling`: how the target model samples; sent explicitly on every request."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StrictFloat, StrictInt

from .base import SpecModel

# SGLang's own default for max_new_tokens is 128, which silently truncates reasoning models.
DEFAULT_MAX_NEW_TOKENS = 16384


def _top_k_keeps_a_token(v: int) -> int:
    if v == 0:
        raise ValueError(
            "0 keeps no token (SGLang refuses every request); use -1 to disable the cut-off "
            "or a positive k"
        )
    return v


# One definition of each parameter's range, shared by the job-wide values and the overrides.
Temperature = Annotated[StrictFloat, Field(ge=0.0, le=2.0)]
TopP = Annotated[StrictFloat, Field(gt=0.0, le=1.0)]
TopK = Annotated[StrictInt, Field(ge=-1), AfterValidator(_top_k_keeps_a_token)]
MinP = Annotated[StrictFloat, Field(ge=0.0, le=1.0)]
MaxNewTokens = Annotated[StrictInt, Field(ge=1, le=1_048_576)]


class SamplingSpec(SpecModel):
    """Sampling parameters; draftgen always sends every one of them, never the server's default."""

    temperature: Temperature = 1.0
    """Sampling temperature; 0 is greedy."""

    top_p: TopP = 1.0
    """Nucleus sampling mass."""

    top_k: TopK = -1
    """Top-k cut-off; -1 disables it."""

    min_p: MinP = 0.0
    """Minimum probability relative to the most likely token."""

    max_new_tokens: MaxNewTokens = DEFAULT_MAX_NEW_TOKENS
    """Completion tokens at most per request. Generations that reach it finish as `length`."""

    stop_token_ids: list[StrictInt] = Field(default_factory=list)
    """Token ids that end a generation besides the model's own end-of-turn."""

    seed: StrictInt | None = None
    """Per-request sampling seed base (`sampling_seed`); each request adds a stable offset."""


class SamplingOverrides(SpecModel):
    """Per-dataset changes to `spec.sampling`; unset fields inherit."""

    temperature: Temperature | None = None
    """Sampling temperature; 0 is greedy."""

    top_p: TopP | None = None
    """Nucleus sampling mass."""

    top_k: TopK | None = None
    """Top-k cut-off; -1 disables it."""

    min_p: MinP | None = None
    """Minimum probability relative to the most likely token."""

    max_new_tokens: MaxNewTokens | None = None
    """Completion tokens at most per request."""

    stop_token_ids: list[StrictInt] | None = None
    """Token ids that end a generation besides the model's own end-of-turn."""

    seed: StrictInt | None = None
    """Per-request sampling seed base."""

    def apply(self, base: SamplingSpec) -> SamplingSpec:
        """`base` with this dataset's overrides."""
        return base.model_copy(update=self.model_dump(exclude_none=True))
