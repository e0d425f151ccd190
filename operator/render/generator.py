"""The generator as Kubernetes objects: a ConfigMap holding the job document and a `batch/v1` Job.

Pure functions. The ConfigMap holds the same GenerationJob document the user applied (status
and cluster bookkeeping removed), so `draftgen generate --job` reads exactly what a local run
reads. The output claim is the only writable data volume; inputs and model are read-only and the
root filesystem is read-only too (`/tmp` is an explicit emptyDir).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml

from draftgen.contract.export_cli import TERMINATION_MESSAGE_PATH
from draftgen.contract.generator_cli import FATAL_EXIT_CODES, GeneratorArgs
from draftgen.launch.model_volume import on_volume, tokenizer_offline
from draftgen.spec import API_VERSION, KIND, GenerationJobSpec

from .. import names
from ..settings import OperatorSettings
from . import batch, hardening
from . import volumes as volumes_

CONFIG_KEY = "job.yaml"


def job_document(
    name: str,
    namespace: str,
    spec: dict[str, Any],
    labels: dict[str, str] | None = None,
    created: str | None = None,
) -> str:
    """The GenerationJob YAML the generator reads: the user's spec, no status, no bookkeeping;
    `hf://` weights the operator downloads read as their path on the models volume. `created`
    (the job's `metadata.creationTimestamp`) is the chat template's default date
    (`spec.model.templateDate`): the same for every generator pod of the job."""
    spec = on_volume(spec)
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    if created:
        meta["creationTimestamp"] = created
    doc = {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": spec}
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


# Spec fields that steer the operator, not the generator: editing them never restarts it.
RUNTIME_ONLY_FIELDS = ("suspend", "ttlSecondsAfterFinished", "shutdownServerAfterCompletion")


def config_hash(document: str) -> str:
    """Hash of what the generator acts on: the document without the operator-only fields."""
    doc = yaml.safe_load(document)
    spec = {k: v for k, v in (doc.get("spec") or {}).items() if k not in RUNTIME_ONLY_FIELDS}
    canonical = json.dumps({**doc, "spec": spec}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def config_map(job: str, namespace: str, document: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": names.generator_name(job),
            "namespace": namespace,
            "labels": names.labels(job, "generator"),
            "annotations": {names.CONFIG_HASH_ANNOTATION: config_hash(document)},
        },
        "data": {CONFIG_KEY: document},
    }


def output_dir(spec: GenerationJobSpec) -> str:
    """`<output mount>/<output path>` inside the generator pod."""
    path = spec.output.path.strip("/")
    mount = spec.output.mount_path.rstrip("/") or "/"
    return mount if path in ("", ".") else f"{mount}/{path}"


METRICS_LINGER_SECONDS = 60


def generator_args(
    spec: GenerationJobSpec, endpoints: list[str], job_name: str, namespace: str
) -> list[str]:
    return GeneratorArgs(
        job=names.JOB_FILE,
        servers=list(endpoints),
        output=output_dir(spec),
        inputs=spec.inputs.mount_path,
        metrics_port=spec.generator.metrics_port,
        # outlive two scrape intervals (15-30 s) so the final counts reach Prometheus
        metrics_linger_seconds=METRICS_LINGER_SECONDS,
        # every series names its GenerationJob, whatever scrapes it (docs/metrics.md)
        generationjob=job_name,
        namespace=namespace,
        # spec.exports: written on the output volume after generation, reported to the
        # operator through the container's termination message
        exports_root=spec.output.mount_path if spec.exports else None,
        result_file=TERMINATION_MESSAGE_PATH if spec.exports else None,
        log_format="json",  # one object a line: what log stacks parse
    ).argv()


def pod_failure_policy() -> dict[str, Any]:
    """Fail at once on fatal exit codes; evictions and preemptions do not use up retries."""
    return batch.fail_fast_policy(names.GENERATOR_CONTAINER, [int(c) for c in FATAL_EXIT_CODES])


def job_file(job: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The container's read-only mount of the job document, and the pod's volume of it (the
    generator's ConfigMap), for every pod that reads the job document."""
    mount = {"name": "job", "mountPath": names.JOB_FILE_DIR, "readOnly": True}
    volume = {
        "name": "job",
        "configMap": {
            "name": names.generator_name(job),
            "items": [{"key": CONFIG_KEY, "path": CONFIG_KEY}],
        },
    }
    return mount, volume


def job(
    spec: GenerationJobSpec,
    job_name: str,
    namespace: str,
    endpoints: list[str],
    document: str,
    settings: OperatorSettings,
) -> dict[str, Any]:
    """The generator Job; each retry (up to `backoffLimit`) resumes from the output exactly."""
    g = spec.generator
    image = g.image or settings.generator_image
    job_mount, job_volume = job_file(job_name)
    mounts: list[dict[str, Any]] = [
        job_mount,
        {"name": "output", "mountPath": spec.output.mount_path},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    volumes: list[dict[str, Any]] = [
        job_volume,
        {
            "name": "output",
            **(
                {"persistentVolumeClaim": {"claimName": spec.output.claim_name}}
                if spec.output.claim_name
                else {"emptyDir": {}}
            ),
        },
        {"name": "tmp", "emptyDir": {"sizeLimit": "4Gi"}},
    ]
    # The datasets, and the tokenizer from the model volume.
    for mount, volume in volumes_.read_only_data(spec):
        mounts.append(mount)
        volumes.append(volume)
    env: list[dict[str, Any]] = list(hardening.DRAFTGEN_ENV)
    if tokenizer_offline(spec):
        env.append({"name": "HF_HUB_OFFLINE", "value": "1"})
    env += hardening.hf_token_env(spec)
    container: dict[str, Any] = {
        "name": names.GENERATOR_CONTAINER,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["draftgen"],
        "args": generator_args(spec, endpoints, job_name, namespace),
        "env": env,
        "ports": [{"name": "metrics", "containerPort": g.metrics_port, "protocol": "TCP"}],
        "volumeMounts": mounts,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": hardening.container_security(),
    }
    if g.resources:
        container["resources"] = dict(g.resources)
    metrics = {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(g.metrics_port),
        "prometheus.io/path": "/metrics",
    }
    return batch.batch_job(
        names.generator_name(job_name),
        namespace,
        job_name,
        "generator",
        {names.CONFIG_HASH_ANNOTATION: config_hash(document)},
        g.backoff_limit,
        pod_failure_policy(),
        batch.pod_template(job_name, "generator", container, volumes, settings, metrics),
    )
