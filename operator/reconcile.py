"""One level-based reconcile of one GenerationJob: observe the children, act, return the status.

Every handler (create, update, resume, the timer) calls `reconcile`; it decides only from what is
in the API now, creates by fixed names (a 409 means "already there"), so running it twice, or
after an operator restart, creates nothing twice.

Lifecycle: Pending → StartingServer (Service + a Deployment per replica, until every replica is
ready) → Generating (ConfigMap with the job document + generator Job) → Succeeded (server torn
down when `shutdownServerAfterCompletion`) or Failed (spec rejected, server crash loop, generator
out of retries). `suspend: true` → Suspended (generator Job deleted, server scaled to 0); false
resumes. A spec edit changes the job document: the generator is restarted with it (it resumes
exactly); the server is rolled only when its own rendering changed.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from typing import Any

from draftgen.plan.eta import format_duration
from draftgen.spec import GenerationJobSpec, GenerationJobStatus, ServerStatus

from . import names, observe, progress
from .conditions import drop_condition, get_condition, now_rfc3339, parse_time, set_condition
from .kube import Kube
from .plan import plan_figures
from .render import generator as render_generator
from .render import server as render_server
from .settings import OperatorSettings
from .validate import check

log = logging.getLogger(__name__)

TERMINAL = ("Succeeded", "Failed")


@dataclasses.dataclass
class JobRef:
    """The GenerationJob being reconciled, as the API returned it."""

    body: dict[str, Any]

    @property
    def name(self) -> str:
        return self.body["metadata"]["name"]

    @property
    def namespace(self) -> str:
        return self.body["metadata"].get("namespace") or "default"

    @property
    def generation(self) -> int | None:
        return self.body["metadata"].get("generation")

    @property
    def spec(self) -> dict[str, Any]:
        return dict(self.body.get("spec") or {})

    @property
    def old_status(self) -> dict[str, Any]:
        status = dict(self.body.get("status") or {})
        status.pop("kopf", None)
        return status


@dataclasses.dataclass
class Outcome:
    """The status to write, and whether the GenerationJob itself should now be deleted (TTL)."""

    status: dict[str, Any]
    delete_job: bool = False


def status_to_wire(status: GenerationJobStatus) -> dict[str, Any]:
    return status.model_dump(by_alias=True, mode="json", exclude_none=True)


class Reconciler:
    """Holds the API client and settings; `adopt` sets owner references (kopf.adopt)."""

    def __init__(self, kube: Kube, settings: OperatorSettings, adopt=None) -> None:
        self.kube = kube
        self.settings = settings
        self._adopt = adopt

    # -- helpers ----------------------------------------------------------------------------
    def _create(self, obj: dict[str, Any], ref: JobRef) -> dict[str, Any]:
        if self._adopt is not None:
            self._adopt(obj, ref.body)
        return self.kube.create(obj)

    def _server_objects(self, ref: JobRef) -> list[dict[str, Any]]:
        return self.kube.list("Deployment", ref.namespace, names.selector(ref.name, "server"))

    def _scale_server(self, ref: JobRef, replicas: int) -> None:
        for dep in self._server_objects(ref):
            if int((dep.get("spec") or {}).get("replicas") or 0) != replicas:
                self.kube.patch("Deployment", ref.namespace, dep["metadata"]["name"],
                                {"spec": {"replicas": replicas}})

    def _delete_server(self, ref: JobRef) -> None:
        deployments = self._server_objects(ref)
        if not deployments:
            return  # torn down already: a finished job's every poll costs one list, no deletes
        # The Service first: should its delete fail, the Deployments are still there to make
        # the next poll try again.
        self.kube.delete("Service", ref.namespace, names.service_name(ref.name))
        for dep in deployments:
            self.kube.delete("Deployment", ref.namespace, dep["metadata"]["name"])

    def _stop_generator(self, ref: JobRef) -> None:
        # Foreground: the Job stays until its pod is gone, so a restarted generator never
        # writes next to one still shutting down.
        self.kube.delete("Job", ref.namespace, names.generator_name(ref.name),
                         propagation="Foreground")

    def delete_children(self, name: str, namespace: str) -> None:
        """Everything the job created (owner references let a real cluster's GC do the same)."""
        ref = JobRef({"metadata": {"name": name, "namespace": namespace}})
        self.kube.delete("Job", namespace, names.generator_name(name), propagation="Background")
        self.kube.delete("ConfigMap", namespace, names.generator_name(name))
        self.kube.delete("Service", namespace, names.service_name(name))
        self._delete_server(ref)

    # -- the reconcile ----------------------------------------------------------------------
    def reconcile(self, ref: JobRef, now: str | None = None) -> Outcome:
        now = now or now_rfc3339()
        status = GenerationJobStatus.model_validate(ref.old_status)
        gen = ref.generation
        spec, problems = check(ref.name, ref.spec, self.settings)
        if spec is None:
            set_condition(status.conditions, "SpecValid", False, "InvalidSpec",
                          "; ".join(problems), gen, now)
            status.observed_generation = gen
            if status.phase in ("StartingServer", "Generating", "Suspended"):
                # An edit broke a running job: keep running what was last accepted, say so.
                status.message = (f"spec edit rejected, still running the last accepted spec: "
                                  f"{problems[0]}")
                return Outcome(status_to_wire(status))
            status.phase = "Failed"
            status.message = f"spec rejected: {problems[0]}"
            return Outcome(status_to_wire(status))
        set_condition(status.conditions, "SpecValid", True, "Valid", "spec accepted", gen, now)
        status.warnings = spec.warnings()
        if status.phase == "Failed" and status.message.startswith("spec rejected"):
            status.phase, status.message = "Pending", ""

        finished = self._finished_at_this_generation(status, gen) or \
            self._succeeded_with_this_document(ref, status, gen, now)
        if finished:
            return self._finished(ref, spec, status, now)
        if status.phase in TERMINAL:
            # The spec changed after the job ended: run again (the generator resumes).
            status.phase, status.completion_time = "Pending", None
            drop_condition(status.conditions, "Failed")
            drop_condition(status.conditions, "Complete")
        status.observed_generation = gen

        if spec.suspend:
            return self._suspend(ref, status, now)
        drop_condition(status.conditions, "Suspended")
        return self._run(ref, spec, status, now)

    @staticmethod
    def _finished_at_this_generation(status: GenerationJobStatus, gen: int | None) -> bool:
        if status.phase not in TERMINAL:
            return False
        cond = get_condition(status.conditions, "Complete" if status.phase == "Succeeded"
                             else "Failed")
        return cond is not None and cond.observed_generation == gen

    def _succeeded_with_this_document(self, ref: JobRef, status: GenerationJobStatus,
                                      gen: int | None, now: str) -> bool:
        """After success, an edit that changes nothing the generator acts on (a TTL, suspend,
        shutdownServerAfterCompletion) must not start the server again."""
        if status.phase != "Succeeded":
            return False
        job = self.kube.get("Job", ref.namespace, names.generator_name(ref.name))
        document = render_generator.job_document(ref.name, ref.namespace, ref.spec)
        ran = ((job or {}).get("metadata", {}).get("annotations") or {}).get(
            names.CONFIG_HASH_ANNOTATION)
        if ran != render_generator.config_hash(document):
            return False
        complete = get_condition(status.conditions, "Complete")
        set_condition(status.conditions, "Complete", True, "AllDatasetsDone",
                      complete.message if complete else "every dataset is done", gen, now)
        status.observed_generation = gen
        return True

    def _finished(self, ref: JobRef, spec: GenerationJobSpec, status: GenerationJobStatus,
                  now: str) -> Outcome:
        if spec.shutdown_server_after_completion:
            if status.phase == "Succeeded":
                self._delete_server(ref)
            else:
                self._scale_server(ref, 0)
            status.server.ready_replicas = 0
        delete_job = False
        ttl = spec.ttl_seconds_after_finished
        ended = parse_time(status.completion_time)
        if ttl is not None and ended is not None:
            age = (parse_time(now) or ended) - ended
            delete_job = age >= datetime.timedelta(seconds=ttl)
        return Outcome(status_to_wire(status), delete_job=delete_job)

    def _suspend(self, ref: JobRef, status: GenerationJobStatus, now: str) -> Outcome:
        self._stop_generator(ref)
        self._scale_server(ref, 0)
        status.phase = "Suspended"
        status.message = "suspended: generator stopped, server scaled to 0; output kept"
        status.server.ready_replicas = 0
        set_condition(status.conditions, "Suspended", True, "SuspendedBySpec",
                      "spec.suspend is true; set it to false to resume where it stopped",
                      ref.generation, now)
        set_condition(status.conditions, "Generating", False, "Suspended", "suspended",
                      ref.generation, now)
        return Outcome(status_to_wire(status))

    def _fail(self, ref: JobRef, spec: GenerationJobSpec, status: GenerationJobStatus,
              reason: str, message: str, now: str, *, stop_generator: bool = True) -> Outcome:
        if stop_generator:
            self._stop_generator(ref)
        if spec.shutdown_server_after_completion:
            self._scale_server(ref, 0)  # give the GPUs back; the objects stay for inspection
        status.phase = "Failed"
        status.message = message
        status.completion_time = status.completion_time or now
        set_condition(status.conditions, "Failed", True, reason, message, ref.generation, now)
        set_condition(status.conditions, "Generating", False, reason, message, ref.generation,
                      now)
        return Outcome(status_to_wire(status))

    def _ensure_server(self, ref: JobRef,
                       spec: GenerationJobSpec) -> tuple[list[dict[str, Any]], bool]:
        """Service and one Deployment per replica, running; returns the Deployments and
        whether a server was created or rolled (its KV capacity must be read again)."""
        if self.kube.get("Service", ref.namespace, names.service_name(ref.name)) is None:
            self._create(render_server.service(spec, ref.name, ref.namespace), ref)
        wanted = render_server.deployments(spec, ref.name, ref.namespace, self.settings)
        wanted_names = {d["metadata"]["name"] for d in wanted}
        out = []
        changed = False
        for want in wanted:
            have = self.kube.get("Deployment", ref.namespace, want["metadata"]["name"])
            if have is None:
                out.append(self._create(want, ref))
                changed = True
                continue
            want_hash = want["metadata"]["annotations"][names.SERVER_HASH_ANNOTATION]
            have_hash = ((have["metadata"].get("annotations") or {})
                         .get(names.SERVER_HASH_ANNOTATION))
            if have_hash != want_hash:
                # The server's own spec changed: roll it (Recreate). Budgets never get here.
                have = self.kube.replace("Deployment", ref.namespace, want["metadata"]["name"],
                                         "spec", want["spec"],
                                         {names.SERVER_HASH_ANNOTATION: want_hash})
                changed = True
            elif int((have.get("spec") or {}).get("replicas") or 0) != 1:
                have = self.kube.patch("Deployment", ref.namespace, want["metadata"]["name"],
                                       {"spec": {"replicas": 1}})
            out.append(have)
        for extra in self._server_objects(ref):
            if extra["metadata"]["name"] not in wanted_names:
                self.kube.delete("Deployment", ref.namespace, extra["metadata"]["name"])
        return out, changed

    def _run(self, ref: JobRef, spec: GenerationJobSpec, status: GenerationJobStatus,
             now: str) -> Outcome:
        gen = ref.generation
        job_name = names.generator_name(ref.name)
        job = self.kube.get("Job", ref.namespace, job_name)
        # Name, namespace and spec only: a label edit must not restart the generator.
        document = render_generator.job_document(ref.name, ref.namespace, ref.spec)
        digest = render_generator.config_hash(document)
        if job is not None and not job["metadata"].get("deletionTimestamp") and \
                (job["metadata"].get("annotations") or {}).get(names.CONFIG_HASH_ANNOTATION) \
                == digest and observe.job_outcome(job)[0] != "running":
            # The generator already ended with this spec: decide from it without bringing the
            # server back (a restart, or a lost status write, after the teardown must not
            # re-create or re-scale the GPU server).
            return self._generator_ended(ref, spec, status, job, now)
        deployments, changed = self._ensure_server(ref, spec)
        server_pods = self.kube.list("Pod", ref.namespace, names.selector(ref.name, "server"))
        health = observe.server_health(server_pods, self.settings.crash_loop_restarts)
        ready = observe.ready_replicas(deployments)
        status.server = ServerStatus(
            ready_replicas=ready, restarts=health.restarts,
            max_total_num_tokens=None if changed else status.server.max_total_num_tokens)
        if health.failure is not None:
            reason, message = health.failure
            set_condition(status.conditions, "ServerReady", False, reason, message, gen, now)
            return self._fail(ref, spec, status, reason, message, now)

        if ready < spec.server.replicas and job is None:
            reason, message = health.waiting or (
                "Starting", f"{ready}/{spec.server.replicas} server replicas ready; SGLang is "
                "loading the model (a 1T-parameter model takes 10-30 minutes)")
            status.phase = "StartingServer"
            status.message = message
            set_condition(status.conditions, "ServerReady", False, reason, message, gen, now)
            return Outcome(status_to_wire(status))
        set_condition(status.conditions, "ServerReady", ready >= spec.server.replicas,
                      "Ready" if ready >= spec.server.replicas else "ReplicaNotReady",
                      f"{ready}/{spec.server.replicas} server replicas ready", gen, now)
        if status.server.max_total_num_tokens is None:
            for ip in observe.running_pod_ips(server_pods):
                kv = progress.server_kv_capacity(ip, spec.server.port,
                                                 self.settings.http_timeout_seconds)
                if kv is not None:
                    status.server.max_total_num_tokens = kv
                    break

        self._ensure_config(ref, document, digest)
        if job is not None and job["metadata"].get("deletionTimestamp"):
            status.phase = "Generating"
            status.message = "waiting for the previous generator pod to stop"
            set_condition(status.conditions, "Generating", False, "RestartingGenerator",
                          status.message, gen, now)
            return Outcome(status_to_wire(status))
        if job is not None and (job["metadata"].get("annotations") or {}).get(
                names.CONFIG_HASH_ANNOTATION) != digest:
            # The job document changed (e.g. a budget): restart only the generator; it resumes
            # from the output exactly. The server keeps running.
            self._stop_generator(ref)
            status.phase = "Generating"
            status.message = "spec changed: restarting the generator with it (server untouched)"
            set_condition(status.conditions, "Generating", False, "RestartingGenerator",
                          status.message, gen, now)
            return Outcome(status_to_wire(status))
        if job is None:
            endpoints = names.server_endpoints(ref.name, ref.namespace, spec.server.replicas,
                                               spec.server.port)
            self._create(render_generator.job(spec, ref.name, ref.namespace, endpoints,
                                              document, self.settings), ref)
            status.phase = "Generating"
            status.start_time = status.start_time or now
            status.message = "generator started"
            set_condition(status.conditions, "Generating", True, "GeneratorStarted",
                          status.message, gen, now)
            return Outcome(status_to_wire(status))

        return self._generator_ended(ref, spec, status, job, now)

    def _generator_ended(self, ref: JobRef, spec: GenerationJobSpec, status: GenerationJobStatus,
                         job: dict[str, Any], now: str) -> Outcome:
        """Status from the generator Job (running, succeeded or failed) and its pods."""
        gen = ref.generation
        outcome, detail = observe.job_outcome(job)
        gen_pods = self.kube.list("Pod", ref.namespace, names.selector(ref.name, "generator"))
        self._read_progress(spec, gen_pods, status)
        if outcome == "failed":
            more = observe.generator_failure_detail(gen_pods)
            message = (f"generator failed after {spec.generator.backoff_limit} retries: "
                       f"{detail or 'BackoffLimitExceeded'}" + (f"; {more}" if more else "")
                       + "; output so far is kept: fix the cause and edit the spec to resume")
            # The failed Job has no running pod: keep it, so its pods' logs stay readable and a
            # restarted operator (or a lost status write) finds the same failure instead of
            # starting a new generator.
            return self._fail(ref, spec, status, "GeneratorFailed", message, now,
                              stop_generator=False)
        if outcome == "succeeded":
            status.phase = "Succeeded"
            status.completion_time = status.completion_time or now
            status.message = "every dataset is done"
            status.eta_seconds, status.eta = 0.0, "0s"
            set_condition(status.conditions, "Complete", True, "AllDatasetsDone",
                          status.message, gen, now)
            set_condition(status.conditions, "Generating", False, "Completed", status.message,
                          gen, now)
            return self._finished(ref, spec, status, now)
        status.plan = plan_figures(ref.name, ref.namespace, spec, status) or status.plan
        status.phase = "Generating"
        status.start_time = status.start_time or now
        stuck = observe.generator_stuck(gen_pods)
        if stuck is not None:
            status.message = stuck[1]
            set_condition(status.conditions, "Generating", False, stuck[0], stuck[1], gen, now)
            return Outcome(status_to_wire(status))
        status.message = "generating"
        set_condition(status.conditions, "Generating", True, "GeneratorRunning",
                      "the generator is running", gen, now)
        return Outcome(status_to_wire(status))

    def _ensure_config(self, ref: JobRef, document: str, digest: str) -> None:
        name = names.generator_name(ref.name)
        have = self.kube.get("ConfigMap", ref.namespace, name)
        if have is None:
            self._create(render_generator.config_map(ref.name, ref.namespace, document), ref)
        elif (have.get("data") or {}).get(render_generator.CONFIG_KEY) != document:
            self.kube.replace("ConfigMap", ref.namespace, name, "data",
                              {render_generator.CONFIG_KEY: document},
                              {names.CONFIG_HASH_ANNOTATION: digest})

    def _read_progress(self, spec: GenerationJobSpec, pods: list[dict[str, Any]],
                       status: GenerationJobStatus) -> None:
        for ip in observe.running_pod_ips(pods):
            got = progress.scrape(ip, spec.generator.metrics_port,
                                  self.settings.http_timeout_seconds)
            if got is None:
                continue
            status.datasets = got.datasets
            status.completion_tokens = got.completion_tokens
            status.progress = got.percent()
            status.throughput_tokens_per_second = got.throughput_tokens_per_second
            status.eta_seconds = got.eta_seconds
            status.eta = format_duration(got.eta_seconds)
            return
