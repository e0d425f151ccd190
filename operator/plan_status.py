"""`status.plan`: the capacity planner's key figures for a running job, from what the server and
the generator report (its KV pool, the measured throughput, the tokens already written).

Computed only once the server's `max_total_num_tokens` is known: the operator cannot read the
model's `config.json` (it sits on the model volume), so the observed capacity stands in for the
prediction. Never raises: a planner problem must not stop reconciling.
"""

from __future__ import annotations

import logging

from draftgen.spec import GenerationJob, GenerationJobSpec, GenerationJobStatus, PlanStatus
from draftgen.spec.job import ObjectMeta

log = logging.getLogger(__name__)


def plan_figures(
    name: str, namespace: str, spec: GenerationJobSpec, status: GenerationJobStatus
) -> PlanStatus | None:
    kv = status.server.max_total_num_tokens
    if not kv:
        return None
    try:
        from draftgen.plan.planner import plan_status
    except ImportError:  # pragma: no cover - the planner ships with the package
        return None
    job = GenerationJob(metadata=ObjectMeta(name=name, namespace=namespace), spec=spec)
    done = {d.name: d.completion_tokens for d in status.datasets}
    try:
        figures = plan_status(
            job,
            observed_kv_capacity_tokens=kv,
            measured_throughput=status.throughput_tokens_per_second or None,
            done_completion_tokens=done,
        )
    except Exception:
        log.exception("the capacity planner failed; status.plan left out")
        return None
    return figures if figures.model_dump(exclude_none=True) else None
