"""The GenerationJob API: one typed spec that the CRD, the operator and the generator share."""

from .base import SpecModel
from .datasets import Budget, DatasetFormat, DatasetSpec, Selection
from .exports import ExportFormat, ExportOptionsSpec, ExportSpec, ExportStatus
from .job import (
    API_VERSION,
    GROUP,
    KIND,
    PLURAL,
    SHORT_NAMES,
    SINGULAR,
    VERSION,
    GenerationJob,
    GenerationJobSpec,
    ObjectMeta,
)
from .load import (
    STDIN,
    JobDocument,
    SpecError,
    format_errors,
    job_documents,
    load_job,
    load_job_document,
    parse_job,
    parse_spec,
)
from .model import ModelSpec, SecretKeyRef, VolumeSource
from .planning import ExpectedLengths, MeasuredStart, PlanningSpec
from .runtime import Concurrency, GeneratorSpec, InputsSpec, OutputSpec
from .sampling import DEFAULT_MAX_NEW_TOKENS, SamplingOverrides, SamplingSpec
from .server import HierarchicalCache, ServerSpec
from .status import (
    PHASES,
    Condition,
    DatasetProgress,
    GenerationJobStatus,
    PlanStatus,
    ServerStatus,
)

__all__ = [
    "API_VERSION",
    "DEFAULT_MAX_NEW_TOKENS",
    "GROUP",
    "KIND",
    "PHASES",
    "PLURAL",
    "SHORT_NAMES",
    "SINGULAR",
    "STDIN",
    "VERSION",
    "Budget",
    "Concurrency",
    "Condition",
    "DatasetFormat",
    "DatasetProgress",
    "DatasetSpec",
    "ExpectedLengths",
    "ExportFormat",
    "ExportOptionsSpec",
    "ExportSpec",
    "ExportStatus",
    "GenerationJob",
    "GenerationJobSpec",
    "GenerationJobStatus",
    "GeneratorSpec",
    "HierarchicalCache",
    "InputsSpec",
    "JobDocument",
    "MeasuredStart",
    "ModelSpec",
    "ObjectMeta",
    "OutputSpec",
    "PlanStatus",
    "PlanningSpec",
    "SamplingOverrides",
    "SamplingSpec",
    "SecretKeyRef",
    "Selection",
    "ServerSpec",
    "ServerStatus",
    "SpecError",
    "SpecModel",
    "VolumeSource",
    "format_errors",
    "job_documents",
    "load_job",
    "load_job_document",
    "parse_job",
    "parse_spec",
]
