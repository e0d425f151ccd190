"""Pure renderers: a validated GenerationJob spec → the Kubernetes objects the operator creates."""

from __future__ import annotations

from typing import Any

from draftgen.launch import model_volume
from draftgen.spec import parse_spec

from ..settings import OperatorSettings, effective_spec
from . import first_run, generator, leaderworkerset, network, server


def render_all(
    name: str, namespace: str, spec: dict[str, Any], settings: OperatorSettings | None = None
) -> list[dict[str, Any]]:
    """Every object the operator creates for a job, in creation order: the model download Job
    (`hf://` weights with a volume), the ConfigMap and the preflight Job (unless turned off),
    then the server, then the generator."""
    settings = settings or OperatorSettings()
    parsed = parse_spec(effective_spec(spec, settings), name=name)
    document = generator.job_document(name, namespace, spec)
    endpoints = leaderworkerset.endpoints(parsed, name, namespace)
    before: list[dict[str, Any]] = []
    if model_volume.downloads(parsed):
        before.append(first_run.download_job(parsed, name, namespace, settings))
    config = generator.config_map(name, namespace, document)
    if settings.preflight:
        before += [config, first_run.preflight_job(parsed, name, namespace, document, 1, settings)]
    return [
        *before,
        network.network_policy(name, namespace, settings, multi_node=parsed.server.multi_node),
        server.service(parsed, name, namespace),
        *leaderworkerset.server_objects(parsed, name, namespace, settings),
        *([] if settings.preflight else [config]),
        generator.job(parsed, name, namespace, endpoints, document, settings),
    ]


__all__ = [
    "first_run",
    "generator",
    "leaderworkerset",
    "network",
    "render_all",
    "server",
]
