"""Writes to a GenerationJob's children: the model download and preflight Jobs, the server's Service and Deployments (LeaderWorkerSets
for a multi-node server), the generator's ConfigMap and Job. Every write is idempotent (fixed
names; a create that meets the object returns it), so running one twice, or after an operator
restart, changes nothing twice. An object of a child's name that the job does not control is
never adopted, changed or deleted (`ownership`).

What to write is decided elsewhere (`decisions`); this module only carries it out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from draftgen.spec import GenerationJobSpec

from . import kueue, names, ownership
from .decisions import server_action
from .kube import Kube
from .render import first_run as render_first_run
from .render import generator as render_generator
from .render import leaderworkerset as render_lws
from .render import network as render_network
from .render import server as render_server
from .settings import OperatorSettings

log = logging.getLogger(__name__)

Adopt = Callable[[dict[str, Any], dict[str, Any]], None]


class Children:
    """The children of one operator: `adopt` sets owner references (kopf.adopt) on creation.

    Every object read by name is checked against the job's uid before it is used, changed or
    deleted (`ownership`): an object of that name the job does not control raises NotOwned and
    is left exactly as it is."""

    def __init__(self, kube: Kube, settings: OperatorSettings, adopt: Adopt | None = None) -> None:
        self.kube = kube
        self.settings = settings
        self._adopt = adopt or ownership.set_controller

    def _create(self, obj: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
        self._adopt(obj, owner)
        kueue.prepare(obj, owner)  # queue labels, a suspended generator Job (operator/kueue.py)
        # A create that meets an existing object returns it: ours (a retried create) or not.
        return ownership.require_owned(
            obj["kind"], self.kube.create(obj), ownership.owner_uid(owner)
        )

    def _get_owned(
        self, kind: str, namespace: str, name: str, uid: str | None
    ) -> dict[str, Any] | None:
        """The object of this name if the job controls it, None if there is none; NotOwned if
        another object holds the name."""
        have = self.kube.get(kind, namespace, name)
        return None if have is None else ownership.require_owned(kind, have, uid)

    def _delete_owned(
        self, kind: str, namespace: str, name: str, uid: str | None, propagation: str = "Background"
    ) -> None:
        """Delete the object of this name only if the job controls it (foreign ones stay)."""
        have = self.kube.get(kind, namespace, name)
        if have is None:
            return
        if not ownership.is_owned(have, uid):
            log.warning(
                "not deleting %s %s/%s: not controlled by this GenerationJob", kind, namespace, name
            )
            return
        self.kube.delete(
            kind, namespace, name, propagation=propagation, uid=have["metadata"].get("uid")
        )

    def server_kinds(self) -> tuple[str, ...]:
        """Kinds a server replica may be: LeaderWorkerSets only when the operator runs them (it
        then has RBAC for them), and only once their CRD is installed."""
        if self.settings.leader_worker_set and self.kube.serves(render_lws.KIND):
            return ("Deployment", render_lws.KIND)
        return ("Deployment",)

    def leader_worker_set_problem(self) -> str | None:
        """Why a multi-node server cannot be created here, with the fix; None if it can."""
        if not self.settings.leader_worker_set:
            return (
                "spec.server.nodesPerReplica > 1 needs LeaderWorkerSets, which this operator does "
                "not run: install LeaderWorkerSet (https://lws.sigs.k8s.io) and set the chart "
                "value operator.leaderWorkerSet.enabled=true, or set nodesPerReplica: 1"
            )
        if not self.kube.serves(render_lws.KIND):
            return (
                f"spec.server.nodesPerReplica > 1: the {render_lws.CRD_NAME} CRD is not "
                "installed: install LeaderWorkerSet (https://lws.sigs.k8s.io/docs/installation/); "
                "the job starts on the next poll after it is"
            )
        return None

    def server_deployments(self, job: str, namespace: str, uid: str | None) -> list[dict[str, Any]]:
        """The job's server replicas (Deployments, LeaderWorkerSets): labelled as its own and
        controlled by it."""
        return [
            {**d, "kind": kind}  # list items of built-in kinds carry no `kind`
            for kind in self.server_kinds()
            for d in self.kube.list(kind, namespace, names.selector(job, "server"))
            if ownership.is_owned(d, uid)
        ]

    # -- the server --------------------------------------------------------------------------
    def ensure_server(
        self, owner: dict[str, Any], spec: GenerationJobSpec, job: str, namespace: str
    ) -> tuple[list[dict[str, Any]], bool]:
        """Service and one Deployment per replica, running; returns the Deployments and
        whether a server was created or rolled (its KV capacity must be read again)."""
        uid = ownership.owner_uid(owner)
        # The NetworkPolicy before any server pod: none ever runs reachable by every pod.
        self.ensure_network_policy(owner, job, namespace, multi_node=spec.server.multi_node)
        service = render_server.service(spec, job, namespace)
        have_service = self._get_owned("Service", namespace, names.service_name(job), uid)
        if (
            have_service is not None
            and (have_service.get("spec") or {}).get("selector") != service["spec"]["selector"]
        ):
            # nodesPerReplica changed: leaders only, or every server pod (no `patch` granted).
            self._delete_owned("Service", namespace, names.service_name(job), uid)
            have_service = None
        if have_service is None:
            self._create(service, owner)
        kind = render_lws.server_kind(spec)
        wanted = render_lws.server_objects(spec, job, namespace, self.settings)
        for want in wanted:  # a roll keeps the Kueue labels on the pod template
            kueue.prepare(want, owner)
        wanted_names = {d["metadata"]["name"] for d in wanted}
        out = []
        changed = False
        for extra in self.server_deployments(job, namespace, uid):
            if extra["kind"] != kind:
                # nodesPerReplica changed across 1: the other kind's replicas go first (their
                # names are the new ones'; a real API server's delete takes effect at once).
                self.kube.delete(
                    extra["kind"],
                    namespace,
                    extra["metadata"]["name"],
                    uid=extra["metadata"].get("uid"),
                )
        for want in wanted:
            name = want["metadata"]["name"]
            have = self._get_owned(kind, namespace, name, uid)
            action = server_action(want, have)
            if action == "create":
                have = self._create(want, owner)
                changed = True
            elif action == "roll":
                have = self.kube.replace(
                    kind,
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
                have = self.kube.patch(kind, namespace, name, {"spec": {"replicas": 1}})
            assert have is not None  # server_action creates what is missing
            out.append(have)
        for extra in self.server_deployments(job, namespace, uid):
            if extra["kind"] == kind and extra["metadata"]["name"] not in wanted_names:
                self.kube.delete(
                    kind,
                    namespace,
                    extra["metadata"]["name"],
                    uid=extra["metadata"].get("uid"),
                )
        return out, changed

    def ensure_network_policy(
        self, owner: dict[str, Any], job: str, namespace: str, *, multi_node: bool = False
    ) -> None:
        """Only the generator, the operator and monitoring reach the server port (and a
        multi-node group's pods each other); an edited policy is put back."""
        want = render_network.network_policy(job, namespace, self.settings, multi_node=multi_node)
        name = want["metadata"]["name"]
        have = self._get_owned("NetworkPolicy", namespace, name, ownership.owner_uid(owner))
        if have is None:
            self._create(want, owner)
        elif have.get("spec") != want["spec"]:
            self.kube.replace("NetworkPolicy", namespace, name, "spec", want["spec"])

    def scale_server(self, job: str, namespace: str, uid: str | None, replicas: int) -> None:
        for dep in self.server_deployments(job, namespace, uid):
            if int((dep.get("spec") or {}).get("replicas") or 0) != replicas:
                self.kube.patch(
                    dep["kind"],
                    namespace,
                    dep["metadata"]["name"],
                    {"spec": {"replicas": replicas}},
                )

    def delete_server(self, job: str, namespace: str, uid: str | None) -> None:
        deployments = self.server_deployments(job, namespace, uid)
        if not deployments:
            return  # torn down already: a finished job's every poll costs one list, no deletes
        # The Service first: should its delete fail, the Deployments are still there to make
        # the next poll try again.
        self._delete_owned("Service", namespace, names.service_name(job), uid)
        for dep in deployments:
            self.kube.delete(
                dep["kind"], namespace, dep["metadata"]["name"], uid=dep["metadata"].get("uid")
            )
        # Last: the server pods never outlive the policy guarding them.
        self._delete_owned("NetworkPolicy", namespace, render_network.policy_name(job), uid)

    # -- the generator -----------------------------------------------------------------------
    def ensure_config(
        self, owner: dict[str, Any], job: str, namespace: str, document: str, digest: str
    ) -> None:
        """The ConfigMap holding the job document, with this document."""
        name = names.generator_name(job)
        have = self._get_owned("ConfigMap", namespace, name, ownership.owner_uid(owner))
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
        endpoints = render_lws.endpoints(spec, job, namespace)
        self._create(
            render_generator.job(spec, job, namespace, endpoints, document, self.settings), owner
        )

    def generator_job(self, job: str, namespace: str, uid: str | None) -> dict[str, Any] | None:
        """The generator Job if the job controls it; NotOwned if a foreign Job holds its name
        (its status must not be read as this job's outcome)."""
        return self._get_owned("Job", namespace, names.generator_name(job), uid)

    def stop_generator(self, job: str, namespace: str, uid: str | None) -> None:
        # Foreground: the Job stays until its pod is gone, so a restarted generator never
        # writes next to one still shutting down.
        have = self.generator_job(job, namespace, uid)
        if have is not None:
            self.kube.delete(
                "Job",
                namespace,
                names.generator_name(job),
                propagation="Foreground",
                uid=have["metadata"].get("uid"),
            )

    # -- before the server: the model download and the preflight ------------------------------
    def download_job(self, job: str, namespace: str, uid: str | None) -> dict[str, Any] | None:
        return self._get_owned("Job", namespace, names.download_name(job), uid)

    def start_download(
        self, owner: dict[str, Any], spec: GenerationJobSpec, job: str, namespace: str
    ) -> None:
        self._create(render_first_run.download_job(spec, job, namespace, self.settings), owner)

    def preflight_job(self, job: str, namespace: str, uid: str | None) -> dict[str, Any] | None:
        return self._get_owned("Job", namespace, names.preflight_name(job), uid)

    def start_preflight(
        self,
        owner: dict[str, Any],
        spec: GenerationJobSpec,
        job: str,
        namespace: str,
        document: str,
        generation: int | None,
    ) -> None:
        self._create(
            render_first_run.preflight_job(
                spec, job, namespace, document, generation, self.settings
            ),
            owner,
        )

    def stop_job(self, name: str, namespace: str, uid: str | None) -> None:
        """Delete one of the job's batch Jobs (Foreground: gone once its pod is)."""
        self._delete_owned("Job", namespace, name, uid, propagation="Foreground")

    # -- everything --------------------------------------------------------------------------
    def delete_all(self, job: str, namespace: str, uid: str | None) -> None:
        """Everything the job created and still controls (owner references let a real
        cluster's GC do the same); objects of the same names it does not control stay."""
        self._delete_owned("Job", namespace, names.generator_name(job), uid)
        self._delete_owned("Job", namespace, names.preflight_name(job), uid)
        self._delete_owned("Job", namespace, names.download_name(job), uid)
        self._delete_owned("ConfigMap", namespace, names.generator_name(job), uid)
        self._delete_owned("Service", namespace, names.service_name(job), uid)
        self.delete_server(job, namespace, uid)
        self._delete_owned("NetworkPolicy", namespace, render_network.policy_name(job), uid)
