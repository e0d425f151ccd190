"""Volumes the rendered pods share: one way to mount a claim, so the server, the generator and
any Job that reads the same claims mount them alike."""

from __future__ import annotations

from typing import Any

from draftgen.spec import GenerationJobSpec


def claim(
    name: str, claim_name: str, mount_path: str, read_only: bool = True
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The container's volumeMount and the pod's volume for one PersistentVolumeClaim."""
    mount: dict[str, Any] = {"name": name, "mountPath": mount_path}
    source: dict[str, Any] = {"claimName": claim_name}
    if read_only:
        mount["readOnly"] = True
        source["readOnly"] = True
    return mount, {"name": name, "persistentVolumeClaim": source}


def model_claim(spec: GenerationJobSpec) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The model volume, read-only (weights for the server, the tokenizer for the generator)."""
    volume = spec.model.volume
    if volume is None:
        return None
    return claim("model", volume.claim_name, volume.mount_path)


def inputs_claim(spec: GenerationJobSpec) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The datasets' volume, read-only."""
    if not spec.inputs.claim_name:
        return None
    return claim("inputs", spec.inputs.claim_name, spec.inputs.mount_path)


def read_only_data(spec: GenerationJobSpec) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """What a CPU pod that reads the job's data mounts: the datasets, and the tokenizer from the
    model volume (each only when the spec has that claim)."""
    return [pair for pair in (inputs_claim(spec), model_claim(spec)) if pair is not None]
