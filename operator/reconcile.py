"""One level-based reconcile of one GenerationJob: observe the children, act, return the status.

Every handler (create, update, resume, the timer) calls `reconcile_stored`; it decides only from
what is in the API now, creates by fixed names (a 409 means "already there"), so running it
twice, or after an operator restart, creates nothing twice.

Lifecycle (the table in `phases`): Pending → DownloadingModel (hf:// weights onto the models
volume) → Preflight (inputs and tokenizer checked by a CPU Job; both in `first_run`) →
StartingServer (a Service and per replica a Deployment, or a LeaderWorkerSet for multi-node) →
Generating (ConfigMap with the job document + generator Job) → Succeeded (server torn down with
`shutdownServerAfterCompletion`) or Failed. `suspend: true` → Suspended (generator deleted,
server scaled to 0). A spec edit restarts the generator with the new job document (it resumes
exactly); the server is rolled only when its own rendering changed.

This module sequences one reconcile: it reads the children, asks `decisions` what that means
(each phase change through the table in `phases`), and has `children` carry out the writes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from draftgen.spec import GenerationJobSpec, GenerationJobStatus, ServerStatus

from . import decisions, kueue, names, observe, readings
from .children import Adopt, Children
from .conditions import drop_condition, now_rfc3339, set_condition
from .first_run import FirstRun
from .job_ref import JobRef
from .kube import Kube, KubeError
from .ownership import NotOwned
from .phases import TERMINAL, Event, enter
from .plan_status import plan_figures
from .policy import secret_problems
from .render import generator as render_generator
from .settings import OperatorSettings
from .validate import check


@dataclasses.dataclass
class Outcome:
    """The status to write, and whether the GenerationJob itself should now be deleted (TTL)."""

    status: dict[str, Any]
    delete_job: bool = False


_SCALED_DOWN = (
    "server scaled to 0 after the failure (shutdownServerAfterCompletion); its "
    "objects are kept for inspection"
)


def status_to_wire(status: GenerationJobStatus) -> dict[str, Any]:
    return status.model_dump(by_alias=True, mode="json", exclude_none=True)


def status_patch(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A merge patch from `old` to `new` (keys that disappeared are set to null)."""
    out: dict[str, Any] = {k: v for k, v in new.items() if old.get(k) != v}
    out.update({k: None for k in old if k not in new and k != "kopf"})
    return out


class Reconciler:
    """Holds the API client and settings; `adopt` sets owner references (kopf.adopt)."""

    def __init__(self, kube: Kube, settings: OperatorSettings, adopt: Adopt | None = None) -> None:
        self.kube = kube
        self.settings = settings
        self.children = Children(kube, settings, adopt)
        self.first_run = FirstRun(kube, settings, self.children)

    @property
    def _stuck_limit(self) -> int:
        return self.settings.stuck_pod_seconds

    def delete_children(self, ref: JobRef, phase: str | None = None) -> list[str]:
        """The generator first: while its pods run (they may be writing their last records)
        nothing else is deleted and their names are returned, to be asked again. Then
        everything the job created and controls (owner references let a real cluster's GC do
        the same); objects of the same names it does not control stay."""
        name, namespace = ref.name, ref.namespace
        job = self.kube.get("Job", namespace, names.generator_name(name))
        ended = phase in TERMINAL or (job is not None and observe.job_outcome(job)[0] != "running")
        if not ended:
            # Running (or already being deleted): its pods may still write. An ended job's or
            # Job's pods have exited, whatever a stale pod status says.
            self.children.stop_job(names.generator_name(name), ref)  # if it is ours
            pods = self.kube.list("Pod", namespace, names.selector(name, "generator"))
            running = observe.live_pods(pods, now_rfc3339())
            if running:
                return running
        self.children.delete_all(ref)
        return []

    def reconcile_stored(self, namespace: str, name: str) -> tuple[JobRef, Outcome] | None:
        """What every handler does: reconcile the job as it is stored now (not as an event
        delivered it) and write the status, only what changed; None if it is gone or going."""
        fresh = self.kube.get("GenerationJob", namespace, name)
        if fresh is None or fresh["metadata"].get("deletionTimestamp"):
            return None
        ref = JobRef(body=fresh)
        outcome = self.reconcile(ref)
        patch = status_patch(ref.old_status, outcome.status)
        if patch:
            self.kube.patch(
                "GenerationJob", namespace, name, {"status": patch}, subresource="status"
            )
        return ref, outcome

    def reconcile(self, ref: JobRef, now: str | None = None) -> Outcome:
        now = now or now_rfc3339()
        status = GenerationJobStatus.model_validate(ref.old_status)
        gen = ref.generation
        spec, problems = check(ref.name, ref.spec, self.settings)
        if spec is None:
            return self._rejected(ref, status, problems, now)
        problems = secret_problems(self.kube, spec, ref.namespace, self.settings)
        if problems:  # the policy's secret label: needs the Secret, so checked here
            return self._rejected(ref, status, problems, now)
        set_condition(status.conditions, "SpecValid", True, "Valid", "spec accepted", gen, now)
        status.warnings = spec.warnings()
        if decisions.was_rejected(status):
            enter(status, Event.SPEC_FIXED)
            status.message = ""
            status.completion_time = None
        try:
            return self._act(ref, spec, status, gen, now)
        except NotOwned as err:
            # Nothing was written to the foreign object; the status says which one it is.
            decisions.mark_not_owned(status, err, gen, now)
            return Outcome(status_to_wire(status))
        except KubeError as err:
            if err.status != 422:
                raise
            # A child the API server refuses is refused the same way on every poll: fail with
            # its words and the spec's field instead of retrying forever.
            message = decisions.child_rejected_message(ref.spec, err.message)
            return self._fail(
                ref,
                spec,
                status,
                Event.CHILD_REJECTED,
                decisions.CHILD_REJECTED_REASON,
                message,
                now,
            )

    def _rejected(
        self, ref: JobRef, status: GenerationJobStatus, problems: list[str], now: str
    ) -> Outcome:
        decisions.reject_spec(status, problems, ref.generation, now)
        ended = status.phase == "Failed"
        delete_job = ended and decisions.ttl_expired(
            decisions.raw_ttl(ref.spec), status.completion_time, now
        )
        return Outcome(status_to_wire(status), delete_job=delete_job)

    def _act(
        self,
        ref: JobRef,
        spec: GenerationJobSpec,
        status: GenerationJobStatus,
        gen: int | None,
        now: str,
    ) -> Outcome:
        if decisions.was_not_owned(status):
            # Try again: the foreign object may be gone (if not, the same refusal stands).
            enter(status, Event.OWNERSHIP_RETRY)
            drop_condition(status.conditions, "Failed")
        elif decisions.was_refused_for_lws(status):
            # Try again: LeaderWorkerSet may be installed now (if not, the same refusal stands).
            enter(status, Event.SERVER_SUPPORT_RETRY)
            status.completion_time = None
            drop_condition(status.conditions, "Failed")
        elif decisions.finished_at_generation(status, gen) or self._succeeded_with_this_document(
            ref, status, gen, now
        ):
            return self._finished(ref, spec, status, now)
        if status.phase in TERMINAL:
            # The spec changed after the job ended: run again (the generator resumes).
            enter(status, Event.SPEC_CHANGED_AFTER_END)
            status.completion_time = None
            drop_condition(status.conditions, "Failed")
            drop_condition(status.conditions, "Complete")
        status.observed_generation = gen

        if spec.suspend:
            return self._suspend(ref, status, now)
        drop_condition(status.conditions, "Suspended")
        return self._run(ref, spec, status, now)

    def _succeeded_with_this_document(
        self, ref: JobRef, status: GenerationJobStatus, gen: int | None, now: str
    ) -> bool:
        """After success, an edit that changes nothing the generator acts on (a TTL, suspend,
        shutdownServerAfterCompletion) must not start the server again."""
        if status.phase != "Succeeded":
            return False
        job = self.children.generator_job(ref)
        document = render_generator.job_document(
            ref.name, ref.namespace, ref.spec, created=ref.created
        )
        if not decisions.ran_this_document(job, render_generator.config_hash(document)):
            return False
        decisions.confirm_complete(status, gen, now)
        return True

    def _finished(
        self, ref: JobRef, spec: GenerationJobSpec, status: GenerationJobStatus, now: str
    ) -> Outcome:
        if spec.shutdown_server_after_completion:
            if status.phase == "Succeeded":
                self.children.delete_server(ref)
                decisions.mark_server_down(
                    status,
                    "ServerDeleted",
                    "server deleted after completion (shutdownServerAfterCompletion)",
                    ref.generation,
                    now,
                )
            else:
                self.children.scale_server(ref, 0)
                decisions.mark_server_down(
                    status, "ServerScaledDown", _SCALED_DOWN, ref.generation, now
                )
        delete_job = decisions.ttl_expired(
            spec.ttl_seconds_after_finished, status.completion_time, now
        )
        return Outcome(status_to_wire(status), delete_job=delete_job)

    def _suspend(self, ref: JobRef, status: GenerationJobStatus, now: str) -> Outcome:
        self.children.stop_generator(ref)
        self.children.scale_server(ref, 0)
        decisions.mark_suspended(status, ref.generation, now)
        return Outcome(status_to_wire(status))

    def _fail(
        self,
        ref: JobRef,
        spec: GenerationJobSpec,
        status: GenerationJobStatus,
        event: Event,
        reason: str,
        message: str,
        now: str,
        *,
        stop_generator: bool = True,
    ) -> Outcome:
        if stop_generator:
            self.children.stop_generator(ref)
        decisions.mark_failed(status, event, reason, message, ref.generation, now)
        if spec.shutdown_server_after_completion:
            # Give the GPUs back; the objects stay for inspection.
            self.children.scale_server(ref, 0)
            decisions.mark_server_down(
                status, "ServerScaledDown", _SCALED_DOWN, ref.generation, now
            )
        return Outcome(status_to_wire(status))

    def _run(
        self, ref: JobRef, spec: GenerationJobSpec, status: GenerationJobStatus, now: str
    ) -> Outcome:
        gen = ref.generation
        job = self.children.generator_job(ref)
        # Name, namespace and spec only: a label edit must not restart the generator.
        document = render_generator.job_document(
            ref.name, ref.namespace, ref.spec, created=ref.created
        )
        digest = render_generator.config_hash(document)
        if job is not None and decisions.generator_ended(job, digest):
            # The generator already ended with this spec: decide from it without bringing the
            # server back (a restart, or a lost status write, after the teardown must not
            # re-create or re-scale the GPU server).
            return self._generator_ended(ref, spec, status, job, now)
        if spec.server.multi_node and (lws := self.children.leader_worker_set_problem()):
            set_condition(
                status.conditions, "ServerReady", False, decisions.LWS_MISSING_REASON, lws, gen, now
            )
            return self._fail(
                ref, spec, status, Event.SERVER_UNSUPPORTED, decisions.LWS_MISSING_REASON, lws, now
            )
        if decisions.first_run_applies(self.children.server_deployments(ref), job):
            # Weights on the volume and inputs checked before the GPUs are booked.
            gate = self.first_run.gate(ref, spec, status, document, digest, now)
            if gate is not None and gate.fail is not None:
                event, reason, message = gate.fail
                return self._fail(ref, spec, status, event, reason, message, now)
            if gate is not None:
                return Outcome(status_to_wire(status))
        deployments, changed = self.children.ensure_server(ref, spec)
        server_pods = self.kube.list("Pod", ref.namespace, names.selector(ref.name, "server"))
        health = observe.server_health(server_pods, self.settings.crash_loop_restarts)
        ready = observe.ready_replicas(deployments)
        status.server = ServerStatus(
            ready_replicas=ready,
            restarts=health.restarts,
            max_total_num_tokens=None if changed else status.server.max_total_num_tokens,
            kv_tokens_per_rank=None if changed else status.server.kv_tokens_per_rank,
        )
        if health.failure is not None:
            reason, message = health.failure
            set_condition(status.conditions, "ServerReady", False, reason, message, gen, now)
            return self._fail(ref, spec, status, Event.SERVER_FAILED, reason, message, now)

        if ready < spec.server.replicas and (queued := kueue.server_queued(ref.body, server_pods)):
            # Not admitted yet, or preempted (its pods come back gated): the generator waits.
            kueue.mark_queued(status, queued, gen, now)
            return Outcome(status_to_wire(status))
        late = decisions.overdue(health.waiting, health.waiting_since, now, self._stuck_limit)
        if late is not None and ready < spec.server.replicas:
            set_condition(status.conditions, "ServerReady", False, *late, gen, now)
            return self._fail(ref, spec, status, Event.SERVER_FAILED, *late, now)
        if ready < spec.server.replicas and job is None:
            decisions.mark_server_starting(
                status, health.waiting, ready, spec.server.replicas, gen, now
            )
            return Outcome(status_to_wire(status))
        decisions.mark_server_ready(status, ready, spec.server.replicas, gen, now)
        if status.server.max_total_num_tokens is None:
            kv, per_rank = readings.kv_capacity(
                spec, server_pods, self.settings.http_timeout_seconds
            )
            status.server.max_total_num_tokens, status.server.kv_tokens_per_rank = kv, per_rank

        self.children.ensure_config(ref, document, digest)
        action = decisions.generator_action(job, digest)
        if action == "wait_for_stop":
            decisions.mark_generator_restarting(
                status, "waiting for the previous generator pod to stop", gen, now
            )
        elif action == "restart":
            self.children.stop_generator(ref)
            decisions.mark_generator_restarting(
                status,
                "spec changed: restarting the generator with it (server untouched)",
                gen,
                now,
            )
        elif action == "start":
            self.children.start_generator(ref, spec, document)
            decisions.mark_generator_started(status, gen, now)
        else:
            assert job is not None
            return self._generator_ended(ref, spec, status, job, now)
        return Outcome(status_to_wire(status))

    def _generator_ended(
        self,
        ref: JobRef,
        spec: GenerationJobSpec,
        status: GenerationJobStatus,
        job: dict[str, Any],
        now: str,
    ) -> Outcome:
        """Status from the generator Job (running, succeeded or failed) and its pods."""
        gen = ref.generation
        if queued := kueue.generator_queued(ref.body, job):
            kueue.mark_queued(status, queued, gen, now, condition="Generating")
            return Outcome(status_to_wire(status))
        outcome, detail = observe.job_outcome(job)
        gen_pods = self.kube.list("Pod", ref.namespace, names.selector(ref.name, "generator"))
        readings.read_into(status, spec, gen_pods, self.settings.http_timeout_seconds)
        if outcome == "failed":
            message = decisions.generator_failure_message(
                int((job.get("status") or {}).get("failed") or 0),
                detail,
                observe.generator_failure_detail(gen_pods),
            )
            # The failed Job has no running pod: keep it, so its pods' logs stay readable and a
            # restarted operator (or a lost status write) finds the same failure instead of
            # starting a new generator.
            return self._fail(
                ref,
                spec,
                status,
                Event.GENERATOR_FAILED,
                "GeneratorFailed",
                message,
                now,
                stop_generator=False,
            )
        if outcome == "succeeded":
            exports = observe.export_results(gen_pods) if spec.exports else None
            if exports is not None:
                status.exports = exports
            decisions.mark_succeeded(status, gen, now)
            return self._finished(ref, spec, status, now)
        status.plan = plan_figures(ref.name, ref.namespace, spec, status) or status.plan
        stuck = observe.generator_stuck(gen_pods)
        since = observe.stuck_since_first(gen_pods, names.GENERATOR_CONTAINER)
        late = decisions.overdue(stuck, since, now, self._stuck_limit)
        if late is not None:
            return self._fail(ref, spec, status, Event.GENERATOR_FAILED, *late, now)
        decisions.mark_generator_running(status, stuck, gen, now)
        return Outcome(status_to_wire(status))
