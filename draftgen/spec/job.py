"""The GenerationJob resource: `spec` as users write it, plus Kubernetes metadata."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field, StrictBool, StrictInt, field_validator, model_validator

from .base import SpecModel
from .datasets import DatasetSpec
from .exports import ExportSpec
from .model import ModelSpec
from .planning import PlanningSpec
from .runtime import GeneratorSpec, InputsSpec, OutputSpec
from .sampling import SamplingSpec
from .server import SCHEDULE_CONSERVATIVENESS_AUTO, SCHEDULE_CONSERVATIVENESS_FIXED, ServerSpec
from .status import GenerationJobStatus

API_VERSION: Final = "draftgen.io/v1alpha1"  # a literal, so that the field below can be typed by it
GROUP, VERSION = API_VERSION.split("/")
KIND: Final = "GenerationJob"
PLURAL = "generationjobs"
SINGULAR = "generationjob"
SHORT_NAMES = ("gj",)

# Children are named `<job>-server-<n>`, `<job>-generator`: keep room for the suffixes.
JOB_NAME_MAX = 40
JOB_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class GenerationJobSpec(SpecModel):
    """Desired state of a GenerationJob: one target model, one server, many datasets."""

    model: ModelSpec
    """The target model and its tokenizer."""

    server: ServerSpec = Field(default_factory=ServerSpec)
    """The SGLang server."""

    datasets: list[DatasetSpec] = Field(min_length=1, max_length=256)
    """Input datasets, generated interleaved so the server never drains between them."""

    sampling: SamplingSpec = Field(default_factory=SamplingSpec)
    """Default sampling parameters; datasets may override them."""

    generator: GeneratorSpec = Field(default_factory=GeneratorSpec)
    """The generator process."""

    inputs: InputsSpec = Field(default_factory=InputsSpec)
    """Where dataset sources live in the cluster."""

    output: OutputSpec = Field(default_factory=OutputSpec)
    """Where records are written."""

    exports: list[ExportSpec] = Field(default_factory=list, max_length=32)
    """Exports for drafter trainers, written on the output volume by the generator Job after
    every dataset is done (`draftgen export`); `status.exports` lists them."""

    planning: PlanningSpec = Field(default_factory=PlanningSpec)
    """Inputs of the capacity planner (`draftgen plan`): GPU memory, one measured start, mean
    lengths, decode speed. Changes nothing at run time."""

    suspend: StrictBool = False
    """Stop the generator and scale the server to zero, keeping all output; false resumes."""

    shutdown_server_after_completion: StrictBool = True
    """Delete the server once every dataset is done, so the GPUs are given back."""

    ttl_seconds_after_finished: StrictInt | None = Field(default=None, ge=0)
    """Delete the whole GenerationJob this long after it succeeded or failed."""

    @property
    def schedule_conservativeness(self) -> float:
        """`server.scheduleConservativeness`, or its default for the job's concurrency mode."""
        if self.server.schedule_conservativeness is not None:
            return self.server.schedule_conservativeness
        if self.generator.concurrency.mode == "auto":
            return SCHEDULE_CONSERVATIVENESS_AUTO
        return SCHEDULE_CONSERVATIVENESS_FIXED

    @model_validator(mode="after")
    def _unique_dataset_names(self) -> GenerationJobSpec:
        seen: set[str] = set()
        for ds in self.datasets:
            if ds.name in seen:
                raise ValueError(
                    f"datasets: the name {ds.name!r} is used twice; dataset names must be unique "
                    "(they name output directories)"
                )
            seen.add(ds.name)
        return self

    @model_validator(mode="after")
    def _exports_beside_the_records(self) -> GenerationJobSpec:
        records = self.output.path.strip("/")
        seen: set[str] = set()
        for i, export in enumerate(self.exports):
            if records in ("", "."):
                raise ValueError(
                    f"exports[{i}].path: the records fill the whole output volume (output.path "
                    "is '.'), and an export must sit beside them, not inside; set output.path, "
                    "e.g. output.path: records"
                )
            if export.path == records or export.path.startswith(records + "/"):
                raise ValueError(
                    f"exports[{i}].path: {export.path!r} is inside the records directory "
                    f"{records!r}; put it beside them, e.g. exports/{export.format}"
                )
            if records.startswith(export.path + "/"):
                raise ValueError(
                    f"exports[{i}].path: {export.path!r} holds the records directory "
                    f"{records!r} (each run replaces the export whole); choose another path"
                )
            if export.path in seen:
                raise ValueError(f"exports[{i}].path: {export.path!r} is used twice")
            seen.add(export.path)
        return self

    @model_validator(mode="after")
    def _completions_fit_the_context(self) -> GenerationJobSpec:
        context = self.server.context_length
        if context is None:
            return self
        for i, ds in enumerate(self.datasets):
            limit = self.sampling_for(ds).max_new_tokens
            if limit >= context:
                own = ds.sampling is not None and ds.sampling.max_new_tokens is not None
                where = f"datasets[{i}]({ds.name}).sampling" if own else "sampling"
                raise ValueError(
                    f"{where}.maxNewTokens: {limit} leaves no room for a prompt within "
                    f"server.contextLength {context} (SGLang refuses a request whose prompt plus "
                    f"maxNewTokens exceeds it); lower maxNewTokens below {context} or raise "
                    "server.contextLength"
                )
        return self

    def completion_limits(self) -> dict[str, int]:
        """Each dataset's `maxNewTokens`, keyed by where the YAML sets it for that dataset."""
        return {
            f"spec.datasets[{i}]({ds.name}).sampling": self.sampling_for(ds).max_new_tokens
            for i, ds in enumerate(self.datasets)
        }

    def sampling_for(self, dataset: DatasetSpec) -> SamplingSpec:
        """The sampling parameters one dataset uses."""
        return dataset.sampling.apply(self.sampling) if dataset.sampling else self.sampling

    def dataset(self, name: str) -> DatasetSpec:
        for ds in self.datasets:
            if ds.name == name:
                return ds
        raise KeyError(name)

    def warnings(self) -> list[str]:
        """Legal but risky settings, each with the value that will be used."""
        out = self.server.warnings()
        defaulted = [
            ds.name
            for ds in self.datasets
            if "max_new_tokens" not in self.sampling.model_fields_set
            and (ds.sampling is None or ds.sampling.max_new_tokens is None)
        ]
        if defaulted:
            out.append(
                f"sampling.maxNewTokens: not set; {self.sampling.max_new_tokens} (draftgen's "
                f"default, not SGLang's 128) will be used for {', '.join(defaulted)}: set it to "
                "the longest completion to keep (longer ones finish as `length`)"
            )
        for i, ds in enumerate(self.datasets):
            if ds.budget.unlimited:
                out.append(
                    f"datasets[{i}]({ds.name}).budget: no limit; every row of {ds.source} will be "
                    "generated: set completionTokens (or totalTokens, maxSamples) to cap it"
                )
        return out


class ObjectMeta(SpecModel):
    """The parts of Kubernetes metadata draftgen reads; the rest is kept as is."""

    model_config = SpecModel.model_config | {"extra": "allow"}

    name: str = Field(pattern=JOB_NAME_PATTERN, max_length=JOB_NAME_MAX)
    """Job name (a DNS label of at most 40 characters, leaving room for child names)."""

    namespace: str | None = None
    """Namespace of the job."""

    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class GenerationJob(SpecModel):
    """A GenerationJob as applied to a cluster or run with `draftgen generate --job`."""

    api_version: Literal["draftgen.io/v1alpha1"] = Field(default=API_VERSION, alias="apiVersion")
    kind: Literal["GenerationJob"] = KIND
    metadata: ObjectMeta
    spec: GenerationJobSpec
    status: GenerationJobStatus | None = None

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata_dict(cls, value: Any) -> Any:
        return value if value is not None else {}
