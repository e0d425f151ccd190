"""Pure renderers: a validated GenerationJob spec → the Kubernetes objects the operator creates."""

from __future__ import annotations

from typing import Any

from draftgen.spec import parse_spec

from ..settings import OperatorSettings, effective_spec
from . import generator, leaderworkerset, network, server


def render_all(
    name: str, namespace: str, spec: dict[str, Any], settings: OperatorSettings | None = None
) -> list[dict[str, Any]]:
    """Every object the operator creates for a job once its server is ready, in creation order."""
    settings = settings or OperatorSettings()
    parsed = parse_spec(effective_spec(spec, settings), name=name)
    document = generator.job_document(name, namespace, spec)
    endpoints = leaderworkerset.endpoints(parsed, name, namespace)
    return [
        network.network_policy(name, namespace, settings, multi_node=parsed.server.multi_node),
        server.service(parsed, name, namespace),
        *leaderworkerset.server_objects(parsed, name, namespace, settings),
        generator.config_map(name, namespace, document),
        generator.job(parsed, name, namespace, endpoints, document, settings),
    ]


__all__ = ["generator", "leaderworkerset", "network", "render_all", "server"]
