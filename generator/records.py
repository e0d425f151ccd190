"""What a run writes about its work: the record of one generation, the line of one reject, and
the manifests (one per dataset, one for the job) together with the job-level gauges. Each answer
is written and counted by `recording.py`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from draftgen.contract import layout
from draftgen.generator.prompts.replies.facts import ReplyReader, read_reply
from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.generator.sglang.client import Generation
from draftgen.generator.telemetry.metrics import GeneratorMetrics
from draftgen.generator.telemetry.rate import eta_seconds
from draftgen.output.ledger import Ledger
from draftgen.output.manifest import DatasetManifest, JobManifest
from draftgen.output.quality import DEGENERATE_REASON
from draftgen.output.record import Meta, Record, reject_key_of
from draftgen.output.record import Reject as RejectLine
from draftgen.output.reply_facts import repetition
from draftgen.output.writer import DatasetWriter, atomic_write_json
from draftgen.redact import redact_text, redact_url
from draftgen.spec import GenerationJob
from draftgen.timefmt import rfc3339


class DatasetOutput(Protocol):
    """A dataset of the run as the manifests see it."""

    @property
    def name(self) -> str: ...
    @property
    def ledger(self) -> Ledger: ...
    @property
    def writer(self) -> DatasetWriter: ...
    @property
    def series(self) -> list[dict[str, Any]]: ...


def generation_record(
    dataset: str,
    sample: Sample,
    result: Generation,
    params: dict[str, Any],
    server: str,
    attempts: int,
    latency: float,
    reader: ReplyReader | None = None,
) -> Record:
    """One line of a shard: the prompt's ids, the server's answer, and how it was obtained;
    what the reply holds read by `reader` (generator/prompts/replies/facts.py)."""
    return Record(
        id=sample.id,
        dataset=dataset,
        source_index=sample.source_index,
        turn=sample.turn,
        input_ids=sample.input_ids,
        output_ids=result.output_ids,
        prompt_tokens=len(sample.input_ids),
        completion_tokens=len(result.output_ids),
        finish_reason=result.finish_reason,
        matched_stop=result.matched_stop,
        meta=Meta(
            sampling=params,
            cached_tokens=result.cached_tokens,
            e2e_latency=result.e2e_latency or latency,
            server=redact_url(server),
            attempts=attempts,
            created_at=time.time(),
            sample=sample.info or None,
            thinking=sample.thinking,
            reply=read_reply(sample.input_ids, result.output_ids, reader),
            degenerate=repetition(result.output_ids),
        ),
    )


def degenerate_reject(sample: Sample, record: Record) -> Reject:
    """The reject of a reply caught in a loop, under `onDegenerate: drop`."""
    loop = (record.meta.degenerate if record.meta else None) or {}
    return Reject(
        record.dataset,
        sample.source_index,
        sample.id,
        DEGENERATE_REASON,
        f"reply caught in a loop: {loop.get('repeated_share', 0):.0%} of the "
        f"{loop.get('ngram')}-grams of its last {loop.get('window')} tokens repeat "
        f"({record.completion_tokens} tokens, finish_reason {record.finish_reason})",
    )


def reject_record(r: Reject) -> RejectLine:
    """One line of `rejects.jsonl`."""
    return RejectLine(
        dataset=r.dataset,
        source_index=r.source_index,
        id=r.id,
        reason=r.reason,
        detail=redact_text(r.detail),
        created_at=time.time(),
        finish_reason=r.finish_reason,
    )


def reject_key(r: Reject) -> tuple:
    """What makes a reject the same one again (a resumed run does not record it twice)."""
    return reject_key_of(r.id, r.source_index, r.reason)


def write_manifests(
    output: Path,
    job: GenerationJob,
    datasets: Sequence[DatasetOutput],
    rate: float,
    metrics: GeneratorMetrics,
    template_date: str | None = None,
) -> None:
    """Rewrite every dataset's manifest and the job's, and set the throughput, ETA and done
    gauges from the same figures."""
    ledgers = [d.ledger for d in datasets]
    eta = eta_seconds(ledgers, rate)
    metrics.completion_tokens_per_second.set(rate)
    if eta is not None:
        metrics.eta.set(eta)
    done = all(ledger.done for ledger in ledgers)
    metrics.job_done.set(1 if done else 0)
    manifests: dict[str, DatasetManifest] = {}
    for ds in datasets:
        manifest = ds.ledger.manifest()
        # Which shards were written under which fingerprint (fingerprint.py).
        manifest.series = [{k: v for k, v in s.items() if k != "fingerprint"} for s in ds.series]
        ds.writer.write_manifest(manifest)
        manifests[ds.name] = manifest
        metrics.update_quality(ds.ledger)
    job_manifest = JobManifest(
        job=job.metadata.name,
        model=job.spec.model.weights,
        datasets=manifests,
        completion_tokens=sum(ledger.completion_tokens for ledger in ledgers),
        samples=sum(ledger.samples for ledger in ledgers),
        throughput_tokens_per_second=round(rate, 3),
        eta_seconds=None if eta is None else round(eta, 1),
        updated_at=rfc3339(),
        done=done,
        template_date=template_date,
    )
    atomic_write_json(layout.job_manifest(output), job_manifest.to_json())
