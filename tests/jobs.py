"""One builder for the GenerationJob documents the tests write: the apiVersion/kind/metadata
skeleton once, each test's own values as keyword arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from draftgen.spec import API_VERSION, KIND


def job_document(name: str = "job", namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    """A GenerationJob document named `name` whose spec is `spec` (`model=`, `datasets=`, ...)."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}


def dataset(name: str, source: str, fmt: str, **fields: Any) -> dict[str, Any]:
    """A `spec.datasets` entry: `name`, read from `source` in format `fmt`; `fields` added
    (`budget=`, `sampling=`, `expected=`, ...)."""
    return {"name": name, "source": source, "format": fmt, **fields}


def kimi_like_model(weights: Path | str, **fields: Any) -> dict[str, Any]:
    """`spec.model` of a Kimi-style tokenizer at `weights`: thinking on, each prompt ending in the
    `<think>` generation prefix; `fields` added (`specialTokens=`, ...)."""
    return {
        "weights": str(weights),
        "chatTemplateKwargs": {"thinking": True},
        "generationPrefix": "<think>",
        **fields,
    }


def write_job_yaml(path: Path, document: dict[str, Any]) -> Path:
    """`document` as the YAML file `path` (what `draftgen ... --job` reads)."""
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path
