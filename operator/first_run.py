"""The steps before a job's first server: weights onto the volume, then the inputs checked.

    DownloadingModel (hf:// weights with model.volume: the model download Job, resumable)
      → Preflight (the preflight Job: every dataset's first rows, the tokenizer)
      → StartingServer (only once both passed)

`FirstRun.gate` is called by the reconcile before it creates a server; it returns None when the
job may go on to its server, or a `Gate` saying to wait (the status says on what) or to fail
(reason and message with the fix). What each observation means is decided in `decisions`,
the writes are done by `children`, the objects rendered by `render.first_run`.

How the Jobs report (docs/operator.md): the download Job serves bytes done/total on a metrics
port the operator scrapes while it runs and writes `{"commit": ...}` as its termination
message; the preflight Job exits 0 / 2 (inputs) / 3 (tokenizer) with its report as JSON in its
termination message, copied into `status.preflight`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from draftgen.contract import download_cli
from draftgen.contract.model_location import HubModel, parse
from draftgen.spec import GenerationJobSpec, GenerationJobStatus
from draftgen.spec.status import ModelDownloadStatus

from . import decisions, names, observe, readings
from .children import Children
from .conditions import set_condition
from .kube import Kube
from .phases import Event
from .render import first_run as render_first_run
from .render import model_volume
from .settings import OperatorSettings


@dataclasses.dataclass(frozen=True)
class Gate:
    """Not yet the server: wait (status already says why), or fail with reason and message."""

    fail: tuple[Event, str, str] | None = None


WAIT = Gate()


class FirstRun:
    def __init__(self, kube: Kube, settings: OperatorSettings, children: Children) -> None:
        self.kube, self.settings, self.children = kube, settings, children

    def gate(
        self,
        owner: dict[str, Any],
        spec: GenerationJobSpec,
        status: GenerationJobStatus,
        document: str,
        digest: str,
        now: str,
    ) -> Gate | None:
        meta = owner["metadata"]
        job, namespace = meta["name"], meta.get("namespace") or "default"
        gen = meta.get("generation")
        if model_volume.downloads(spec):
            gate = self._download(owner, spec, status, job, namespace, gen, now)
            if gate is not None:
                return gate
        if self.settings.preflight:
            # The preflight reads the job document from the generator's ConfigMap.
            self.children.ensure_config(owner, job, namespace, document, digest)
            return self._preflight(owner, spec, status, job, namespace, document, digest, gen, now)
        return None

    def _pods(self, job: str, namespace: str, component: str) -> list[dict[str, Any]]:
        return self.kube.list("Pod", namespace, names.selector(job, component))

    def _download(
        self,
        owner: dict[str, Any],
        spec: GenerationJobSpec,
        status: GenerationJobStatus,
        job: str,
        namespace: str,
        gen: int | None,
        now: str,
    ) -> Gate | None:
        uid = meta_uid(owner)
        repo = parse(spec.model.weights)
        assert isinstance(repo, HubModel)
        model = status.model if status.model and status.model.repo == repo.repo_id else None
        model = model or ModelDownloadStatus(repo=repo.repo_id)
        model.revision = spec.model.revision
        model.path = model_volume.volume_path(spec)
        have = self.children.download_job(job, namespace, uid)
        action = decisions.download_action(have, render_first_run.revision_key(spec))
        if action == "start":
            self.children.start_download(owner, spec, job, namespace)
            decisions.mark_downloading(status, model, gen, now)
            return WAIT
        if action in ("restart", "wait_for_stop"):
            if action == "restart":
                self.children.stop_job(names.download_name(job), namespace, uid)
            model.commit, model.progress = None, ""
            decisions.mark_downloading(
                status, model, gen, now, "model.revision changed: restarting the model download"
            )
            return WAIT
        assert have is not None
        outcome, detail = observe.job_outcome(have)
        pods = self._pods(job, namespace, "model-download")
        if outcome == "running":
            stuck = observe.first_stuck(
                pods,
                names.DOWNLOAD_CONTAINER,
                "model download",
                "model.volume.claimName and the cluster's CPU capacity",
            )
            if stuck is not None:
                gate = self._stuck(status, "ModelReady", "ModelDownload", stuck, gen, now)
                if gate is not None:
                    status.model = model
                    return gate
                decisions.mark_downloading(status, model, gen, now, stuck.message)
                reason = "ModelDownload" + stuck.reason
                set_condition(
                    status.conditions, "ModelReady", False, reason, stuck.message, gen, now
                )
                return WAIT
            for ip in observe.running_pod_ips(pods):
                got = readings.download_progress(
                    ip, download_cli.METRICS_PORT, self.settings.http_timeout_seconds
                )
                if got is not None:
                    model.bytes_done, model.bytes_total = got[0], got[1] or model.bytes_total
                    break
            decisions.mark_downloading(status, model, gen, now)
            return WAIT
        _, message = observe.termination_message(pods, names.DOWNLOAD_CONTAINER)
        if outcome == "failed":
            status.model = model
            text = decisions.download_failure_message(model, detail, message)
            set_condition(
                status.conditions, "ModelReady", False, "ModelDownloadFailed", text, gen, now
            )
            return Gate((Event.DOWNLOAD_FAILED, "ModelDownloadFailed", text))
        model.commit = decisions.download_commit(message) or model.commit
        decisions.mark_downloaded(status, model, gen, now)
        return None

    def _preflight(
        self,
        owner: dict[str, Any],
        spec: GenerationJobSpec,
        status: GenerationJobStatus,
        job: str,
        namespace: str,
        document: str,
        digest: str,
        gen: int | None,
        now: str,
    ) -> Gate | None:
        uid = meta_uid(owner)
        have = self.children.preflight_job(job, namespace, uid)
        action = decisions.preflight_action(have, digest, gen)
        if action == "start":
            self.children.start_preflight(owner, spec, job, namespace, document, gen)
        elif action == "restart":
            self.children.stop_job(names.preflight_name(job), namespace, uid)
        if action != "observe":
            status.preflight = None
            decisions.mark_preflight_running(status, gen, now)
            return WAIT
        assert have is not None
        outcome, _ = observe.job_outcome(have)
        pods = self._pods(job, namespace, "preflight")
        if outcome == "running":
            decisions.mark_preflight_running(status, gen, now)
            stuck = observe.first_stuck(
                pods,
                names.PREFLIGHT_CONTAINER,
                "preflight",
                "spec.inputs.claimName, model.volume.claimName and the cluster's CPU capacity",
            )
            if stuck is not None:
                gate = self._stuck(status, "InputsValid", "Preflight", stuck, gen, now)
                if gate is not None:
                    return gate
                status.message = stuck.message
                reason = "Preflight" + stuck.reason
                set_condition(
                    status.conditions, "InputsValid", False, reason, stuck.message, gen, now
                )
            return WAIT
        _, message = observe.termination_message(pods, names.PREFLIGHT_CONTAINER)
        report = decisions.preflight_report(message)
        if outcome == "failed":
            status.preflight = report
            text = decisions.preflight_failure_message(report, message)
            set_condition(
                status.conditions, "InputsValid", False, "PreflightFailed", text, gen, now
            )
            return Gate((Event.PREFLIGHT_FAILED, "PreflightFailed", text))
        decisions.mark_preflight_passed(status, report, gen, now)
        return None

    def _stuck(
        self,
        status: GenerationJobStatus,
        condition: str,
        prefix: str,
        stuck: observe.Stuck,
        gen: int | None,
        now: str,
    ) -> Gate | None:
        """Fail once a stuck pod used up `stuck_pod_seconds`; None while it may still run."""
        limit = self.settings.stuck_pod_seconds
        if not decisions.stuck_too_long(stuck.since, now, limit):
            return None
        text, reason = decisions.gave_up(stuck.message, limit), prefix + stuck.reason
        set_condition(status.conditions, condition, False, reason, text, gen, now)
        event = Event.DOWNLOAD_FAILED if condition == "ModelReady" else Event.PREFLIGHT_FAILED
        return Gate((event, reason, text))


def meta_uid(owner: dict[str, Any]) -> str | None:
    return owner["metadata"].get("uid")
