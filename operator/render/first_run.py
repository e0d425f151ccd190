"""What runs before the GPUs are booked, as Kubernetes objects: pure functions of a validated spec.

- The **model download Job** (`hf://` weights with `model.volume`): `draftgen download` fetches
  the repository at `model.revision` into `<volume>/hub/<ORG>/<NAME>` with
  `huggingface_hub.snapshot_download`; a retried or restarted pod fetches only what is missing.
  The server then reads that path (`on_volume`), offline.
- The **preflight Job**: `draftgen preflight` reads the job document (the generator's
  ConfigMap), opens every source on the inputs volume, reads each dataset's first rows through the
  real parsers and the tokenizer from the models volume. CPU only, the generator's image. It
  reports by exit code and termination message (the report as JSON, `contract.preflight_cli`).

Both are `batch/v1` Jobs with the generator's pod hardening (read-only root, unprivileged, no
service account token); only the download Job mounts the models volume writable.
"""

from __future__ import annotations

from typing import Any

from draftgen.contract import download_cli, preflight_cli
from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.model_location import HubModel, parse
from draftgen.launch.model_volume import tokenizer_offline, volume_path
from draftgen.spec import GenerationJobSpec

from .. import names
from ..settings import OperatorSettings
from . import batch, hardening
from . import volumes as volumes_
from .generator import config_hash, job_file

DOWNLOAD_RETRIES = 6
"""Pod retries of the download Job: each resumes where the last one stopped."""
PREFLIGHT_RETRIES = 1
"""A preflight that fails on the inputs fails the Job at once (exit code); this covers a lost
node."""


def _container(name: str, image: str, args: list[str], env: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["draftgen"],
        "args": args,
        "env": [*hardening.DRAFTGEN_ENV, *env],
        # The report (or the resolved commit) as written; the log's end if the process crashed.
        "terminationMessagePath": preflight_cli.TERMINATION_LOG,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": hardening.container_security(),
    }


def revision_key(spec: GenerationJobSpec) -> str:
    """What the download Job fetches, as its annotation: `ORG/NAME@REVISION`."""
    repo = parse(spec.model.weights)
    assert isinstance(repo, HubModel)
    return f"{repo.repo_id}@{spec.model.revision or 'main'}"


def download_job(
    spec: GenerationJobSpec, job: str, namespace: str, settings: OperatorSettings
) -> dict[str, Any]:
    """The model download Job `<job>-model-download` (only when `downloads(spec)`)."""
    assert spec.model.volume is not None
    repo = parse(spec.model.weights)
    assert isinstance(repo, HubModel)
    args = download_cli.DownloadArgs(
        repo=repo.repo_id,
        to=volume_path(spec),
        revision=spec.model.revision,
        metrics_port=download_cli.METRICS_PORT,
        report=preflight_cli.TERMINATION_LOG,
    ).argv()
    container = _container(
        names.DOWNLOAD_CONTAINER,
        spec.generator.image or settings.generator_image,
        args,
        [{"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"}, *hardening.hf_token_env(spec)],
    )
    container["ports"] = [
        {"name": "metrics", "containerPort": download_cli.METRICS_PORT, "protocol": "TCP"}
    ]
    container["resources"] = {
        "requests": {"cpu": "1", "memory": "2Gi"},
        "limits": {"memory": "8Gi"},
    }
    # The one writer of the models volume.
    model_mount, model_volume = volumes_.claim(
        "model", spec.model.volume.claim_name, spec.model.volume.mount_path, read_only=False
    )
    container["volumeMounts"] = [model_mount, {"name": "tmp", "mountPath": "/tmp"}]
    volumes = [model_volume, {"name": "tmp", "emptyDir": {"sizeLimit": "4Gi"}}]
    # A repository, revision or token refused, or a full volume: retrying cannot help.
    policy = batch.fail_fast_policy(
        names.DOWNLOAD_CONTAINER, [int(ExitCode.INVALID), int(ExitCode.DISK_FULL)]
    )
    return batch.batch_job(
        names.download_name(job),
        namespace,
        job,
        "model-download",
        {names.REVISION_ANNOTATION: revision_key(spec)},
        DOWNLOAD_RETRIES,
        policy,
        batch.pod_template(job, "model-download", container, volumes, settings),
    )


def preflight_job(
    spec: GenerationJobSpec,
    job: str,
    namespace: str,
    document: str,
    generation: int | None,
    settings: OperatorSettings,
) -> dict[str, Any]:
    """The preflight Job `<job>-preflight`: reads the generator's ConfigMap, the inputs and the
    model volume (read-only)."""

    args = preflight_cli.PreflightArgs(
        job=names.JOB_FILE, inputs=spec.inputs.mount_path, report=preflight_cli.TERMINATION_LOG
    ).argv()
    env = [{"name": "HF_HUB_OFFLINE", "value": "1"}] if tokenizer_offline(spec) else []
    container = _container(
        names.PREFLIGHT_CONTAINER,
        spec.generator.image or settings.generator_image,
        args,
        env + hardening.hf_token_env(spec),
    )
    container["resources"] = {
        "requests": {"cpu": "1", "memory": "2Gi"},
        "limits": {"memory": "8Gi"},
    }
    job_mount, job_volume = job_file(job)
    mounts: list[dict[str, Any]] = [job_mount, {"name": "tmp", "mountPath": "/tmp"}]
    volumes: list[dict[str, Any]] = [job_volume, {"name": "tmp", "emptyDir": {"sizeLimit": "4Gi"}}]
    for mount, volume in volumes_.read_only_data(spec):
        mounts.append(mount)
        volumes.append(volume)
    container["volumeMounts"] = mounts
    policy = batch.fail_fast_policy(
        names.PREFLIGHT_CONTAINER, [int(ExitCode.INVALID), int(ExitCode.INTEGRITY)]
    )
    annotations = {
        names.CONFIG_HASH_ANNOTATION: config_hash(document),
        names.GENERATION_ANNOTATION: str(generation or 0),
    }
    return batch.batch_job(
        names.preflight_name(job),
        namespace,
        job,
        "preflight",
        annotations,
        PREFLIGHT_RETRIES,
        policy,
        batch.pod_template(job, "preflight", container, volumes, settings),
    )
