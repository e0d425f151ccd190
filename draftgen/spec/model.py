"""`spec.model`: which weights and tokenizer, and what the rendered prompt must look like."""

from __future__ import annotations

from datetime import date
from typing import Any

from pydantic import Field, StrictBool, field_validator, model_validator

from draftgen.contract.model_location import HubModel, is_hub, parse

from .base import SpecModel


class SecretKeyRef(SpecModel):
    """A key of a Kubernetes Secret; the value never appears in the spec, status or logs."""

    name: str = Field(min_length=1, max_length=253)
    """Name of the Secret in the job's namespace."""

    key: str = Field(min_length=1)
    """Key inside the Secret."""


class VolumeSource(SpecModel):
    """A PersistentVolumeClaim mounted into the pods at a fixed path."""

    claim_name: str = Field(min_length=1, max_length=253)
    """Name of the PersistentVolumeClaim."""

    mount_path: str = Field(pattern=r"^/")
    """Absolute path at which the claim is mounted."""


class ModelSpec(SpecModel):
    """The target model whose outputs become the drafter's training data."""

    weights: str = Field(min_length=1)
    """Weights location: a path inside `volume` (e.g. `/models/kimi-k2.5`) or `hf://org/name`."""

    tokenizer: str | None = None
    """Tokenizer location, same forms as `weights`; defaults to the weights."""

    volume: VolumeSource | None = None
    """Claim holding the weights (and tokenizer), mounted read-only in server and generator."""

    trust_remote_code: StrictBool = False
    """Allow the tokenizer's and model's own Python code to run (Kimi-K2.5 needs it)."""

    chat_template_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Extra keyword arguments for the chat template, e.g. `{thinking: true}` for Kimi-K2.5 or
    `{enable_thinking: true}` for Qwen3."""

    special_tokens: list[str] = Field(default_factory=list)
    """Tokens that must each be exactly one vocabulary id (e.g. `<think>`, `</think>`, the
    tool-call section tokens); the generator refuses to start otherwise."""

    generation_prefix: str | None = None
    """Text every rendered prompt must end with (Kimi-K2.5's thinking mode ends with `<think>`)."""

    template_date: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    """The date (`YYYY-MM-DD`) the chat template's `strftime_now` gives while prompts are
    rendered: gpt-oss's `Current date:` line, for example. Default: the job's creation day (in a
    cluster its `metadata.creationTimestamp`; run locally, the day its output was first
    generated into), recorded in the job manifest (`template_date`) so a resumed job renders the
    prompts it started with; a template that reads no date is unaffected."""

    revision: str | None = Field(default=None, min_length=1, max_length=255)
    """Hub revision (commit hash, branch or tag) of `hf://` weights: in a cluster the model
    download Job fetches exactly this revision into `volume` and records the commit it resolved
    to in `status.model.commit`; default: the repository's default branch."""

    hf_token_secret: SecretKeyRef | None = None
    """Secret holding a Hugging Face token, for `hf://` weights that need one (read by the model
    download Job, the server and the generator; never copied into the spec or status)."""

    config_path: str | None = None
    """The model's `config.json` for the capacity planner (`draftgen plan`, relative to the job
    file); defaults to `config.json` in the weights."""

    @field_validator("weights", "tokenizer")
    @classmethod
    def _location(cls, value: str | None) -> str | None:
        if value is None:
            return value
        location = parse(value)  # a ModelLocationError (a ValueError) names the accepted forms
        if isinstance(location, HubModel) and location.revision:
            # Neither SGLang's --model-path nor the tokenizer would get it: refuse, not ignore.
            raise ValueError(
                f"{value!r}: write the revision as model.revision: {location.revision} and the "
                f"weights as hf://{location.repo_id}"
            )
        return value

    @field_validator("template_date")
    @classmethod
    def _date(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                date.fromisoformat(value)
            except ValueError:
                raise ValueError(f"{value!r} is not a date; write it as YYYY-MM-DD") from None
        return value

    @model_validator(mode="after")
    def _revision_needs_hub(self) -> ModelSpec:
        if self.revision is not None and not is_hub(self.weights):
            raise ValueError(
                f"revision: {self.revision!r} applies to hf:// weights only, and weights is the "
                f"path {self.weights!r}; remove revision, or set weights to hf://ORG/NAME"
            )
        return self

    @property
    def tokenizer_location(self) -> str:
        """Where the tokenizer comes from: `tokenizer`, else the weights."""
        return self.tokenizer or self.weights
