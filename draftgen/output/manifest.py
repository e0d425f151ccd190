"""The manifests: `DIR/<dataset>/manifest.json` (`DatasetManifest`) and `DIR/manifest.json`
(`JobManifest`). They are summaries rewritten from the records; the records win when the two
disagree (docs/output-format.md).

Each carries `schemaVersion`. A reader reads `SCHEMA_VERSION` and the one before (a manifest
without the key is the layout before versioning, version 1) and refuses a newer one with
`NewerSchema`: the output was written by a newer draftgen, whose meaning this one cannot know."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import draftgen.safe_json as safe_json
from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError, RunError

__all__ = [
    "SCHEMA_VERSION",
    "DatasetManifest",
    "JobManifest",
    "ManifestDamaged",
    "NewerSchema",
    "check_version",
    "read_manifest",
]

SCHEMA_VERSION = 2
"""2: `schemaVersion` written. 1: the manifests before it (no key)."""
READS = (SCHEMA_VERSION - 1, SCHEMA_VERSION)
VERSION_KEY = "schemaVersion"


def _count(value: Any) -> int:
    return value if type(value) is int else 0


def _number(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


class ManifestDamaged(DraftgenError, ValueError):
    """A manifest that is not a JSON object (garbage, non-UTF-8, too deep)."""

    exit_code = ExitCode.INVALID
    fix = "the records are the truth: move the damaged manifest aside and run again"


class NewerSchema(RunError):
    """The output was written by a newer draftgen than this one: `generate` will not resume
    it, `stats`, `top` and `export` will not read it."""

    exit_code = ExitCode.INVALID
    fix = "upgrade draftgen to the version that wrote this output (or newer)"


def check_version(data: dict[str, Any], path: Path | str) -> int:
    """The manifest's schema version, or `NewerSchema`/`ManifestDamaged` when this draftgen
    cannot read it."""
    version = data.get(VERSION_KEY, 1)
    if type(version) is not int or version < 1:
        raise ManifestDamaged(f"{path}: {VERSION_KEY} {version!r} is not a positive integer")
    if version > SCHEMA_VERSION:
        raise NewerSchema(
            f"{path}: {VERSION_KEY} {version} was written by a newer draftgen; this one reads "
            f"{READS[0]} and {READS[1]}: upgrade draftgen to read this output"
        )
    return version


def read_manifest(path: Path) -> dict[str, Any] | None:
    """A manifest's object (its version checked), or None when it does not exist yet.
    `ManifestDamaged` when it is not a JSON object; `NewerSchema` when written by a newer
    draftgen."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise ManifestDamaged(f"{path}: unreadable ({err})") from None
    try:
        data = safe_json.loads(text)
    except safe_json.JsonLimitError as err:
        raise ManifestDamaged(f"{path}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise ManifestDamaged(f"{path}: a manifest must be a JSON object")
    check_version(data, path)
    return data


@dataclass(slots=True)
class DatasetManifest:
    """One dataset's counts against its budget (`DIR/<dataset>/manifest.json`)."""

    dataset: str
    samples: int
    prompt_tokens: int
    completion_tokens: int
    finish_reasons: dict[str, int]
    """`{"stop": n, "length": n, "abort": n}` (abort: samples whose last attempt SGLang aborted;
    older manifests lack it)."""
    truncation_rate: float
    rejects: int
    tool_fallbacks: int
    budget: dict[str, int | None]
    """`{"completionTokens", "totalTokens", "maxSamples"}` (null: no such limit)."""
    overshoot_completion_tokens: int
    overshoot_percent: float
    overshoot_samples: int
    done: bool
    exhausted: bool
    updated_at: str
    """RFC 3339, UTC."""
    series: list[dict[str, Any]] = field(default_factory=list)
    """Which shards were written under which fingerprint (draftgen/output/fingerprint.py)."""
    quality: dict[str, Any] = field(default_factory=dict)
    """The data-quality report (draftgen/output/quality.py; empty in older manifests)."""

    def to_json(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in _DATASET_FIELDS}
        out[VERSION_KEY] = SCHEMA_VERSION
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], name: str = "") -> DatasetManifest:
        """Tolerant (a manifest is a summary; the records are the truth): a missing or mistyped
        field reads as nothing counted, not done. `name`: the dataset, when the manifest is an
        entry of the job manifest's `datasets`."""
        reasons = data.get("finish_reasons")
        budget = data.get("budget")
        return cls(
            dataset=_str(data.get("dataset")) or name,
            samples=_count(data.get("samples")),
            prompt_tokens=_count(data.get("prompt_tokens")),
            completion_tokens=_count(data.get("completion_tokens")),
            finish_reasons=(
                {k: v for k, v in reasons.items() if type(v) is int}
                if isinstance(reasons, dict)
                else {}
            ),
            truncation_rate=_number(data.get("truncation_rate")) or 0.0,
            rejects=_count(data.get("rejects")),
            tool_fallbacks=_count(data.get("tool_fallbacks")),
            budget=(
                {k: v for k, v in budget.items() if type(v) is int or v is None}
                if isinstance(budget, dict)
                else {}
            ),
            overshoot_completion_tokens=_count(data.get("overshoot_completion_tokens")),
            overshoot_percent=_number(data.get("overshoot_percent")) or 0.0,
            overshoot_samples=_count(data.get("overshoot_samples")),
            done=data.get("done") is True,
            exhausted=data.get("exhausted") is True,
            updated_at=_str(data.get("updated_at")),
            series=[s for s in data.get("series") or [] if isinstance(s, dict)]
            if isinstance(data.get("series"), list)
            else [],
            quality=data["quality"] if isinstance(data.get("quality"), dict) else {},
        )


_DATASET_FIELDS = tuple(DatasetManifest.__dataclass_fields__)


@dataclass(slots=True)
class JobManifest:
    """The job's summary (`DIR/manifest.json`)."""

    job: str
    model: str
    datasets: dict[str, DatasetManifest]
    """In spec order."""
    completion_tokens: int
    samples: int
    throughput_tokens_per_second: float
    eta_seconds: float | None
    updated_at: str
    """RFC 3339, UTC."""
    done: bool
    template_date: str | None = None
    """The date the chat template saw (`spec.model.templateDate`, template_clock.py)."""

    def to_json(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in _JOB_FIELDS}
        out["datasets"] = {name: m.to_json() for name, m in self.datasets.items()}
        out[VERSION_KEY] = SCHEMA_VERSION
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobManifest:
        """Tolerant, as `DatasetManifest.from_json`; `ManifestDamaged` without a `datasets`
        object (then it is not a job manifest)."""
        datasets = data.get("datasets")
        if not isinstance(datasets, dict):
            raise ManifestDamaged("not a job manifest (no `datasets` object)")
        eta = _number(data.get("eta_seconds"))
        model = data.get("model")
        return cls(
            job=_str(data.get("job")),
            model=model if isinstance(model, str) else "",
            datasets={
                str(n): DatasetManifest.from_json(d, str(n))
                for n, d in datasets.items()
                if isinstance(d, dict)
            },
            completion_tokens=_count(data.get("completion_tokens")),
            samples=_count(data.get("samples")),
            throughput_tokens_per_second=_number(data.get("throughput_tokens_per_second")) or 0.0,
            eta_seconds=eta,
            updated_at=_str(data.get("updated_at")),
            done=data.get("done") is True,
            template_date=day if isinstance(day := data.get("template_date"), str) else None,
        )


_JOB_FIELDS = tuple(JobManifest.__dataclass_fields__)
