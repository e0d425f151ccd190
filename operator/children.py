"""Writes to a GenerationJob's children: the server's Service and Deployments, the generator's
ConfigMap and Job. Every write is idempotent (fixed names; a create that meets the object
returns it), so running one twice, or after an operator restart, changes nothing twice.

What to write is decided elsewhere (`decisions`); this module only carries it out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from draftgen.spec import GenerationJobSpec

from . import names
from .decisions import server_action
from .kube import Kube
from .render import generator as render_generator
from .render import server as render_server
from .settings import OperatorSettings

Adopt = Callable[[dict[str, Any], dict[str, Any]], None]


class Children:
    """The children of one operator: `adopt` sets owner references (kopf.adopt) on creation."""

    def __init__(self, kube: Kube, settings: OperatorSettings, adopt: Adopt | None = None) -> None:
        self.kube = kube
        self.settings = settings
        self._adopt = adopt

    def _create(self, obj: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
        if self._adopt is not None:
            self._adopt(obj, owner)
        return self.kube.create(obj)

    def server_deployments(self, job: str, namespace: str) -> list[dict[str, Any]]:
        return self.kube.list("Deployment", namespace, names.selector(job, "server"))

    # -- the server --------------------------------------------------------------------------
    def ensure_server(
        self, owner: dict[str, Any], spec: GenerationJobSpec, job: str, namespace: str
    ) -> tuple[list[dict[str, Any]], bool]:
        """Service and one Deployment per replica, running; returns the Deployments and
        whether a server was created or rolled (its KV capacity must be read again)."""
        if self.kube.get("Service", namespace, names.service_name(job)) is None:
            self._create(render_server.service(spec, job, namespace), owner)
        wanted = render_server.deployments(spec, job, namespace, self.settings)
        wanted_names = {d["metadata"]["name"] for d in wanted}
        out = []
        changed = False
        for want in wanted:
            name = want["metadata"]["name"]
            have = self.kube.get("Deployment", namespace, name)
            action = server_action(want, have)
            if action == "create":
                have = self._create(want, owner)
                changed = True
            elif action == "roll":
                have = self.kube.replace(
                    "Deployment",
                    namespace,
                    name,
                    "spec",
                    want["spec"],
                    {
                        names.SERVER_HASH_ANNOTATION: want["metadata"]["annotations"][
                            names.SERVER_HASH_ANNOTATION
                        ]
                    },
                )
                changed = True
            elif action == "scale":
                have = self.kube.patch("Deployment", namespace, name, {"spec": {"replicas": 1}})
            assert have is not None  # server_action creates what is missing
            out.append(have)
        for extra in self.server_deployments(job, namespace):
            if extra["metadata"]["name"] not in wanted_names:
                self.kube.delete("Deployment", namespace, extra["metadata"]["name"])
        return out, changed

    def scale_server(self, job: str, namespace: str, replicas: int) -> None:
        for dep in self.server_deployments(job, namespace):
            if int((dep.get("spec") or {}).get("replicas") or 0) != replicas:
                self.kube.patch(
                    "Deployment",
                    namespace,
                    dep["metadata"]["name"],
                    {"spec": {"replicas": replicas}},
                )

    def delete_server(self, job: str, namespace: str) -> None:
        deployments = self.server_deployments(job, namespace)
        if not deployments:
            return  # torn down already: a finished job's every poll costs one list, no deletes
        # The Service first: should its delete fail, the Deployments are still there to make
        # the next poll try again.
        self.kube.delete("Service", namespace, names.service_name(job))
        for dep in deployments:
            self.kube.delete("Deployment", namespace, dep["metadata"]["name"])

    # -- the generator -----------------------------------------------------------------------
    def ensure_config(
        self, owner: dict[str, Any], job: str, namespace: str, document: str, digest: str
    ) -> None:
        """The ConfigMap holding the job document, with this document."""
        name = names.generator_name(job)
        have = self.kube.get("ConfigMap", namespace, name)
        if have is None:
            self._create(render_generator.config_map(job, namespace, document), owner)
        elif (have.get("data") or {}).get(render_generator.CONFIG_KEY) != document:
            self.kube.replace(
                "ConfigMap",
                namespace,
                name,
                "data",
                {render_generator.CONFIG_KEY: document},
                {names.CONFIG_HASH_ANNOTATION: digest},
            )

    def start_generator(
        self,
        owner: dict[str, Any],
        spec: GenerationJobSpec,
        job: str,
        namespace: str,
        document: str,
    ) -> None:
        endpoints = names.server_endpoints(job, namespace, spec.server.replicas, spec.server.port)
        self._create(
            render_generator.job(spec, job, namespace, endpoints, document, self.settings), owner
        )

    def stop_generator(self, job: str, namespace: str) -> None:
        # Foreground: the Job stays until its pod is gone, so a restarted generator never
        # writes next to one still shutting down.
        self.kube.delete("Job", namespace, names.generator_name(job), propagation="Foreground")

    # -- everything --------------------------------------------------------------------------
    def delete_all(self, job: str, namespace: str) -> None:
        """Everything the job created (owner references let a real cluster's GC do the same)."""
        self.kube.delete("Job", namespace, names.generator_name(job), propagation="Background")
        self.kube.delete("ConfigMap", namespace, names.generator_name(job))
        self.kube.delete("Service", namespace, names.service_name(job))
        self.delete_server(job, namespace)
