"""Each dataset's part of a run: its state resumed from the output directory, its writer, its
completion-length model, and the requests it has in flight."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from draftgen.contract import layout
from draftgen.generator.prompts.samples import Sample
from draftgen.generator.scheduling.admission import LengthModel, budget_admits
from draftgen.generator.scheduling.feed import Feed
from draftgen.generator.sglang.fleet import Pool, Server
from draftgen.generator.telemetry.metrics import GeneratorMetrics
from draftgen.output.fingerprint import check_fingerprint, dataset_fingerprint
from draftgen.output.ledger import Ledger
from draftgen.output.resume import DatasetState, scan_dataset
from draftgen.output.writer import DatasetWriter
from draftgen.spec import DatasetSpec, GenerationJob, SamplingSpec

log = logging.getLogger("draftgen.generate")


@dataclass
class Flight:
    """One request on its way: the sample, the server it went to (and its KV pool there: one
    data-parallel rank's), the tokens it was counted as."""

    sample: Sample
    server: Server
    tokens: float
    pool: Pool | None = None
    """The server's first pool unless given."""
    rid: str = ""
    sent_at: float = 0.0
    """`time.monotonic()` when the current attempt was sent."""
    cancelled: bool = False
    task: asyncio.Task | None = None

    def __post_init__(self) -> None:
        if self.pool is None:
            self.pool = self.server.pools[0]


@dataclass
class Dataset:
    spec: DatasetSpec
    sampling: SamplingSpec
    state: DatasetState
    writer: DatasetWriter
    model: LengthModel
    feed: Feed | None = None
    pending: Sample | None = None
    flights: dict[str, Flight] = field(default_factory=dict)
    in_flight_prompt: int = 0
    series: list[dict] = field(default_factory=list)
    """Shard series of this dataset (see `fingerprint.py`)."""
    continuations: deque[Sample] = field(default_factory=deque)
    """Chains' next turns, rendered after their previous reply: sent before new chains."""
    chain_left: dict[str, int] = field(default_factory=dict)
    """Per chain going in this run: its turns not yet sent (`scheduling/chains.py`)."""

    @property
    def ledger(self) -> Ledger:
        return self.state.ledger

    @property
    def name(self) -> str:
        return self.spec.name

    def stop_sending(self) -> None:
        """Send none of its samples any more: its feed stops, and its chains going end at the
        turn they reached (`scheduling/chains.py`)."""
        if self.feed is not None:
            self.feed.stop()
        self.continuations.clear()
        self.chain_left.clear()

    def ran_out(self) -> bool:
        """Its rows are all read and answered, short of its budget."""
        return (
            not self.ledger.done
            and self.feed is not None
            and self.feed.finished
            and self.pending is None
            and not self.flights
            and not self.continuations
        )


async def cancel_flights(datasets: list[Dataset], timeout: float = 30.0) -> None:
    """Abort every request in flight on its server and wait (at most `timeout`) for their tasks;
    a request that still has not ended is cancelled."""
    flights = [f for d in datasets for f in d.flights.values()]
    if not flights:
        return
    for flight in flights:
        flight.cancelled = True
    await asyncio.gather(*(f.server.abort_quietly(f.rid) for f in flights))
    tasks = [f.task for f in flights if f.task is not None]
    _, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in pending:
        task.cancel()


def abort_flights(ds: Dataset, tasks: set[asyncio.Task]) -> None:
    """Abort the dataset's requests in flight on their servers without waiting for them (its
    budget met, under `onBudgetMet: abort`); each abort's task is held in `tasks` until it ends
    (the loop keeps only a weak reference)."""
    for flight in list(ds.flights.values()):
        if not flight.cancelled:
            flight.cancelled = True
            abort = asyncio.create_task(flight.server.abort_quietly(flight.rid))
            tasks.add(abort)
            abort.add_done_callback(tasks.discard)


def open_datasets(
    job: GenerationJob,
    output: Path,
    metrics: GeneratorMetrics,
    *,
    allow_spec_change: bool = False,
) -> list[Dataset]:
    """Every dataset of the job, resumed from what `output` already holds. A dataset whose
    records were written under another fingerprint is refused (`SpecChanged`) unless
    `allow_spec_change`, which starts a new shard series."""
    output.mkdir(parents=True, exist_ok=True)
    shard_max = job.spec.output.shard_max_records
    datasets = []
    for spec in job.spec.datasets:
        directory = layout.dataset_dir(output, spec.name)
        state = scan_dataset(directory, spec.name, spec.budget, shard_max_records=shard_max)
        sampling = job.spec.sampling_for(spec)
        has_data = bool(layout.shard_files(directory) or layout.rejects_file(directory).exists())
        new_series = state.records_in_shard > 0
        series, restart = check_fingerprint(
            directory,
            dataset_fingerprint(job, spec),
            has_data=has_data,
            next_shard=state.next_shard + 1 if new_series else state.next_shard,
            allow_change=allow_spec_change,
        )
        if restart and new_series:
            state.next_shard, state.records_in_shard = state.next_shard + 1, 0
        ds = Dataset(
            spec=spec,
            sampling=sampling,
            state=state,
            writer=DatasetWriter(
                directory,
                shard_max_records=shard_max,
                next_shard=state.next_shard,
                records_in_shard=state.records_in_shard,
            ),
            model=LengthModel(sampling.max_new_tokens, state.lengths[-4096:]),
            series=series,
        )
        if state.ledger.samples or state.torn_bytes:
            log.info(
                "%s: resuming with %d samples, %d completion tokens already written%s",
                spec.name,
                state.ledger.samples,
                state.ledger.completion_tokens,
                f" (dropped a torn line of {state.torn_bytes} bytes)" if state.torn_bytes else "",
            )
        b = spec.budget
        _say_budget_lowered(spec.name, state.ledger)
        if (
            state.ledger.samples
            and not state.ledger.budget_met
            and not all(
                budget_admits(
                    budget=budget,
                    done=done,
                    in_flight=[],
                    in_flight_known=0,
                    new_known=0,
                    model=ds.model,
                )
                for budget, done in (
                    (b.completion_tokens, state.ledger.completion_tokens),
                    (b.total_tokens, state.ledger.total_tokens),
                )
            )
        ):
            ds.ledger.closed = True  # the same rule that closed it before: no server needed
        metrics.start_from(state.ledger)
        datasets.append(ds)
    return datasets


def _say_budget_lowered(name: str, ledger: Ledger) -> None:
    """A budget lowered below what is already written: nothing more is generated, and the
    records stay (and are counted); say so instead of looking like a finished run."""
    b = ledger.budget
    over = []
    if b.max_samples is not None and ledger.samples > b.max_samples:
        over.append(
            f"{ledger.samples} samples already written, more than budget.maxSamples {b.max_samples}"
        )
    if b.completion_tokens is not None and ledger.completion_tokens > b.completion_tokens:
        over.append(
            f"{ledger.completion_tokens} completion tokens already written, more than "
            f"budget.completionTokens {b.completion_tokens}"
        )
    if b.total_tokens is not None and ledger.total_tokens > b.total_tokens:
        over.append(
            f"{ledger.total_tokens} tokens already written, more than "
            f"budget.totalTokens {b.total_tokens}"
        )
    if over:
        log.warning(
            "%s: %s (the budget was lowered): nothing more is generated; the records stay and "
            "the manifest counts them all (overshoot_samples, overshoot_completion_tokens)",
            name,
            "; ".join(over),
        )
