"""Where an answered request goes: its record into the dataset's shard, or its reject into
`rejects.jsonl` (a reply caught in a loop under `onDegenerate: drop` among them), and everything
counted from it on the way — the dataset's ledger and length model, the metrics, the progress,
and the figures admission reads (the completion speed, the KV tokens each pool freed).

What the lines hold is `records.py`'s; whether anything may land any more is the Runner's."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from draftgen.generator.prompts.replies.facts import ReplyReader
from draftgen.generator.prompts.samples import Reject
from draftgen.generator.records import (
    degenerate_reject,
    generation_record,
    reject_key,
    reject_record,
)
from draftgen.generator.scheduling.datasets import Dataset, Flight
from draftgen.generator.sglang.attempts import Answer
from draftgen.generator.telemetry.metrics import GeneratorMetrics
from draftgen.generator.telemetry.progress import Progress
from draftgen.generator.telemetry.rate import RateMeter
from draftgen.output.quality import is_degenerate


class Recorder:
    """The write path of one run's answers, and the figures it keeps."""

    def __init__(self, metrics: GeneratorMetrics, reader: ReplyReader | None) -> None:
        self.metrics = metrics
        self.reader = reader
        """What `meta.reply` is read by (None: no tokenizer)."""
        self.progress: Progress | None = None
        """The run's progress display, once the datasets are open."""
        self.rate = RateMeter()
        """Completion tokens written per second (progress, manifests)."""
        self.speeds: deque[float] = deque(maxlen=256)
        """Completion tokens per second of each request written (admission's progress speed)."""
        self.ended: dict[int, deque[tuple[float, float]]] = {}
        """Per pool (`id`): when each of our requests on it ended, and the KV tokens it held
        (what its next `/metrics` reading will show freed)."""

    def reject(self, ds: Dataset, r: Reject) -> None:
        """Record a reject once: a resumed run does not write again what an earlier run did."""
        key = reject_key(r)
        if key in ds.state.rejected:
            return  # recorded by an earlier run
        ds.state.rejected.add(key)
        if key not in ds.state.failed_before:  # failed again: its line is already there
            ds.writer.write_reject(reject_record(r))
        ds.ledger.add_reject(r.reason, r.finish_reason)
        self.metrics.reject(ds.name, r.reason, r.finish_reason)

    def record(
        self,
        ds: Dataset,
        flight: Flight,
        answer: Answer,
        params: dict[str, Any],
        chain_end: str | None = None,
    ) -> bool:
        """Write the record of `flight`'s answer and count it (False: not written, a reply
        caught in a loop that the dataset drops, recorded as a reject instead)."""
        sample, result, latency = flight.sample, answer.result, answer.latency
        record = generation_record(
            ds.name,
            sample,
            result,
            params,
            flight.server.client.url,
            answer.attempts,
            latency,
            self.reader,
        )
        if is_degenerate(record) and ds.spec.on_degenerate == "drop":
            ds.state.done_ids.add(sample.id)  # answered: a rerun would loop the same way
            self.reject(ds, degenerate_reject(sample, record))
            return False  # not written: a chain ends here (a loop is no history to go on from)
        if flight.pool is not None and flight.pool.routed_rank is not None and record.meta:
            record.meta.dp_rank = flight.pool.routed_rank  # the rank it was pinned to
        if sample.chain is not None and record.meta:
            record.meta.chain, record.meta.chain_end = sample.chain.meta(), chain_end
        ds.writer.write_record(record)  # raises DiskFull before anything is counted
        ds.state.done_ids.add(sample.id)
        completion = len(result.output_ids)
        self.ended.setdefault(id(flight.pool), deque(maxlen=1024)).append(
            (time.monotonic(), len(sample.input_ids) + completion)
        )
        ds.ledger.add_record(record)
        ds.model.observe(completion)
        if latency > 0 and completion > 0:
            self.speeds.append(completion / latency)
        self.rate.add(completion)
        if self.progress is not None:
            self.progress.add_tokens(ds.name, completion)
        self.metrics.record(
            ds.ledger,
            result.finish_reason,
            record.prompt_tokens,
            completion,
            latency,
            record.tool_fallback,
        )
        self.metrics.observe_reply(ds.name, record)
        return True
