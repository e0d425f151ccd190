"""The orchestrator: resume from the records, check the servers, then keep every server full with
requests from all datasets at once until each dataset meets its budget or runs out of rows.

One asyncio loop does all the deciding (admission, here); each request is a task that retries on
its own (`attempts.py`) and writes its record the moment it succeeds. The servers are managed by
`fleet.py`, each dataset's state is resumed by `datasets.py`, samples arrive through `feed.py`
(`next_sample.py`: a chain's next turn first; `chains.py`: its step), and an answer lands through
`recording.py` (what the lines hold: `records.py`). Here: what shares the Runner's state."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from draftgen.generator.prompts.chains import ChainSteps
from draftgen.generator.prompts.replies.facts import reply_reader
from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.generator.recording import Recorder
from draftgen.generator.records import write_manifests
from draftgen.generator.run_settings import SampleSource, Settings
from draftgen.generator.scheduling.admission import progress_speed
from draftgen.generator.scheduling.chains import (
    chain_ended,
    chain_goes_on,
    chain_launched,
    chain_step,
    with_chains_rule,
)
from draftgen.generator.scheduling.datasets import (
    Dataset,
    Flight,
    abort_flights,
    cancel_flights,
    open_datasets,
)
from draftgen.generator.scheduling.demand import budget_admits_sample, pool_view, server_views
from draftgen.generator.scheduling.feed import in_daemon_thread
from draftgen.generator.scheduling.next_sample import next_sample, start_feeds
from draftgen.generator.scheduling.room import HORIZON, Ready, next_launch
from draftgen.generator.sglang.attempts import attempt
from draftgen.generator.sglang.client import sampling_params
from draftgen.generator.sglang.fleet import Fleet, Pool, RunError, ServersDown
from draftgen.generator.telemetry.metrics import GeneratorMetrics, job_labels
from draftgen.generator.telemetry.progress import Progress, eta_seconds, server_figures
from draftgen.output.ledger import Ledger
from draftgen.output.lock import OutputLock
from draftgen.output.writer import DiskFull
from draftgen.spec import DatasetSpec, GenerationJob

__all__ = ["RunError", "Runner", "SampleSource", "ServersDown", "Settings"]

log = logging.getLogger("draftgen.generate")


class Runner:
    """One `draftgen generate` run."""

    def __init__(
        self,
        job: GenerationJob,
        settings: Settings,
        source: SampleSource,
        tokenizer: Any = None,
        preflight: Callable[[list[DatasetSpec]], None] | None = None,
    ) -> None:
        self.job = job
        self.preflight = preflight
        """Checks the datasets still to do once resumed, before any server is waited for."""
        self._aborts: set[asyncio.Task] = set()
        self.settings = settings
        self.source = source
        self.tokenizer = tokenizer
        self.gen = job.spec.generator
        self.metrics = GeneratorMetrics(
            job_labels(
                settings.generationjob or job.metadata.name,
                settings.namespace or job.metadata.namespace,
            )
        )
        self.recorder = Recorder(self.metrics, reply_reader(tokenizer))
        """Writes each answer and counts it: the rate, speeds and freed KV admission reads."""
        self.run_nonce = uuid.uuid4().hex[:8]
        self._wake = asyncio.Event()
        self.fleet = Fleet(
            settings.servers,
            request_timeout=self.gen.request_timeout_seconds,
            transport=settings.transport,
            health_timeout=settings.health_timeout,
            metrics_interval=settings.metrics_interval,
            tokenizer=tokenizer,
            special_tokens=list(job.spec.model.special_tokens),
            metrics=self.metrics,
            wake=self._wake.set,
            on_fatal=self._stop_fatal,
            completions=job.spec.completion_limits(),
        )
        self.servers = self.fleet.servers
        self.pools = self.fleet.pools
        """What admission weighs: every server's KV pools (one per data-parallel rank)."""
        self.datasets: list[Dataset] = []
        self._passed: dict[str, int] = {}
        """Per dataset: samples of others sent while its ready one waited (see `send_order`)."""
        self._fatal: BaseException | None = None
        self._stopping = False
        self._startup: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.chains: ChainSteps | None = None
        """When a dataset regenerates its history (from the source)."""

    # ---- the loop -------------------------------------------------------------------------

    def wake(self) -> None:
        """Thread-safe: something changed, decide again."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._wake.set)
            except RuntimeError:  # the loop closed meanwhile: nobody is waiting
                pass

    def _admit(self) -> None:
        """Start every request the budgets and the servers have room for. The datasets' ready
        samples are offered in `send_order`: on a KV-bound server one that fits what its
        admission has free goes before one that would wait at the head of its FCFS queue and
        hold back everything behind it (at most PASS_LIMIT times); otherwise the dataset with
        the fewest requests in flight first, so none starves and none drains."""
        conc = self.gen.concurrency
        now = time.monotonic()
        speed = progress_speed(self.recorder.speeds)
        ready = [
            (ds, sample)
            for ds in self.datasets
            if not ds.ledger.done and (sample := self._ready(ds, speed, now)) is not None
        ]
        while ready and not self._stopping:
            views = (
                server_views(self.pools, self.datasets, speed, now, self.recorder.ended)
                if conc.mode == "auto"
                else [pool_view(p, now) for p in self.pools]
            )
            weighed = [
                Ready(
                    prompt=len(s.input_ids),
                    max_new=ds.sampling.max_new_tokens,
                    tokens=len(s.input_ids) + ds.model.predict(),
                    in_flight=len(ds.flights),
                    passed=self._passed.get(ds.name, 0),
                    alive=ds.model.survival_new(HORIZON) if conc.mode == "auto" else None,
                )
                for ds, s in ready
            ]
            launch = next_launch(
                weighed,
                views,
                mode=conc.mode,
                max_requests=conc.max_requests,
                tokens_factor=conc.max_tokens_factor,
            )
            if launch is None:
                return  # every server is full, or a sample's turn came: wait for an answer
            ds, sample = ready[launch.position]
            if ds.continuations and ds.continuations[0] is sample:
                ds.continuations.popleft()
            else:
                ds.pending = None
            self._launch(ds, sample, self.pools[launch.server], weighed[launch.position].tokens)
            self._passed[ds.name] = 0
            for j in launch.waited:  # they wait while this one goes
                self._passed[ready[j][0].name] = weighed[j].passed + 1
            nxt = None if ds.ledger.done else self._ready(ds, speed, time.monotonic())
            if nxt is None:
                del ready[launch.position]
            else:
                ready[launch.position] = (ds, nxt)

    def _ready(self, ds: Dataset, speed: float, now: float) -> Sample | None:
        """The dataset's next sample if its budgets can take it now (None: not now)."""
        sample = next_sample(ds, self.recorder.reject)
        if sample is None:
            return None
        admits = with_chains_rule(ds, sample, budget_admits_sample(ds, sample, speed, now))
        if admits is None:
            return None  # the chains going may still end early and free their turns
        if not admits:
            if not ds.flights:
                ds.ledger.closed = True  # less than one likely sample left
                self._dataset_finished(ds)
            return None
        return sample

    def _launch(self, ds: Dataset, sample: Sample, pool: Pool, tokens: float) -> None:
        flight = Flight(sample=sample, server=pool.server, tokens=tokens, pool=pool)
        ds.flights[sample.id] = flight
        chain_launched(ds, sample)
        ds.in_flight_prompt += len(sample.input_ids)
        pool.in_flight += 1
        pool.in_flight_tokens += tokens
        self.fleet.update_gauges(pool.server)
        flight.task = asyncio.create_task(self._request(ds, flight))

    def _land(self, ds: Dataset, flight: Flight) -> None:
        ds.flights.pop(flight.sample.id, None)
        ds.in_flight_prompt -= len(flight.sample.input_ids)
        assert flight.pool is not None
        flight.pool.in_flight -= 1
        flight.pool.in_flight_tokens -= flight.tokens
        self.fleet.update_gauges(flight.server)
        self._wake.set()

    # ---- one request ----------------------------------------------------------------------

    async def _request(self, ds: Dataset, flight: Flight) -> None:
        try:
            await self._attempts(ds, flight)
        except DiskFull as err:
            self._fatal = err
        except Exception as err:
            log.exception("request %s failed unexpectedly", flight.sample.id)
            self._fatal = err
        finally:
            self._land(ds, flight)

    async def _attempts(self, ds: Dataset, flight: Flight) -> None:
        params = sampling_params(ds.sampling, flight.sample.id)
        outcome = await attempt(
            flight,
            ds.name,
            params,
            run_nonce=self.run_nonce,
            retries=self.gen.retries,
            backoff_base=self.settings.backoff_base,
            fleet=self.fleet,
            metrics=self.metrics,
        )
        if outcome is None or isinstance(outcome, Reject):
            chain_ended(ds, flight.sample)  # failed or aborted: its chain owes no more turns
            if outcome is not None:
                self.recorder.reject(ds, outcome)
            return
        sample, end, nxt = flight.sample, None, None
        if sample.chain is not None and self.chains is not None:
            end, nxt = await in_daemon_thread(
                chain_step, self.chains, sample, outcome.result, self.fleet.max_prompt_tokens
            )
        written = (  # nothing lands in abort mode once the budget is met, nor after a fatal error
            not (ds.ledger.budget_met and self.gen.on_budget_met == "abort")
            and self._fatal is None
            and self.recorder.record(ds, flight, outcome, params, end)
        )
        if written and ds.ledger.budget_met:
            self._dataset_finished(ds)
        if sample.chain is None:
            return
        if chain_goes_on(ds, sample, nxt, written=written, stopping=self._stopping):
            self._wake.set()
        elif written and isinstance(nxt, Reject):
            self.recorder.reject(ds, nxt)

    def _dataset_finished(self, ds: Dataset) -> None:
        ds.stop_sending()
        self.metrics.update_dataset(ds.ledger)
        if ds.ledger.budget_met and self.gen.on_budget_met == "abort":
            abort_flights(ds, self._aborts)

    def _write_manifests(self) -> None:
        write_manifests(
            self.settings.output,
            self.job,
            self.datasets,
            self.recorder.rate.rate(),
            self.metrics,
            self.settings.template_date,
        )

    def _check_exhausted(self) -> None:
        for ds in self.datasets:
            if ds.ran_out():
                if ds.feed is not None and ds.feed.error is not None:
                    raise ds.feed.error
                ds.ledger.exhausted = True
                self._dataset_finished(ds)

    def stop(self) -> None:
        """Stop admitting; abort what is in flight (a signal arrived)."""
        self._stopping = True
        if self._startup is not None:
            self._startup.cancel()
        self._wake.set()

    def _stop_fatal(self, err: BaseException) -> None:
        """The run cannot go on (a server that joined late serves another model)."""
        self._fatal = err
        self._wake.set()

    async def run(self) -> dict[str, Ledger]:
        self._loop = asyncio.get_running_loop()
        loop = self._loop

        def lost(err: BaseException) -> None:  # called from the lease's heartbeat thread
            loop.call_soon_threadsafe(self._stop_fatal, err)

        # One writer per output: a second run would resume from the same records and append
        # every one of them again.
        with OutputLock(self.settings.output, on_lost=lost):
            return await self._run_locked()

    async def _run_locked(self) -> dict[str, Ledger]:
        for server in self.servers:
            self.fleet.update_gauges(server)
        self.datasets = open_datasets(
            self.job,
            self.settings.output,
            self.metrics,
            allow_spec_change=self.settings.allow_spec_change,
        )
        self.progress = Progress(
            [d.ledger for d in self.datasets],
            live=self.settings.live_progress,
            log_format=self.settings.log_format,
            servers=lambda: server_figures(self.pools),
        )
        self.recorder.progress = self.progress
        if self.settings.metrics_port:
            self.metrics.serve(self.settings.metrics_port)
        poller: asyncio.Task | None = None
        try:
            if not all(d.ledger.done for d in self.datasets):
                self._startup = asyncio.create_task(self._start_up())  # stop() cancels it
                await asyncio.wait([self._startup])
                if self._stopping:
                    return {d.name: d.ledger for d in self.datasets}
                self._startup.result()  # its failure, raised here
                poller = asyncio.create_task(self.fleet.poll_load())
            with self.progress:
                await self._main_loop()
        finally:
            if poller is not None:
                poller.cancel()
            await self._shutdown()
        if self._fatal is not None:
            raise self._fatal
        return {d.name: d.ledger for d in self.datasets}

    async def _start_up(self) -> None:
        """The preflight of the datasets still to do (before any server is connected to: bad
        inputs refuse without one), then the servers joining, then the feeds."""
        if self.preflight is not None:
            todo = [d.spec for d in self.datasets if not d.ledger.done]
            await in_daemon_thread(self.preflight, todo)
        await self.fleet.check()
        self.chains = start_feeds(
            self.datasets, self.source, lambda: self.fleet.max_prompt_tokens, self.wake
        )

    async def _main_loop(self) -> None:
        last_manifest = 0.0
        while True:
            if self._fatal is not None or self._stopping:
                return
            self._check_exhausted()
            if all(d.ledger.done and not d.flights for d in self.datasets):
                self._write_manifests()
                self.progress.update(self.recorder.rate.rate(), 0.0, 0, force=True)
                return
            self._admit()
            in_flight = sum(s.in_flight for s in self.servers)
            rate = self.recorder.rate.rate()
            self.progress.update(
                rate, eta_seconds([d.ledger for d in self.datasets], rate), in_flight
            )
            if time.monotonic() - last_manifest >= self.settings.manifest_interval:
                self._write_manifests()
                last_manifest = time.monotonic()
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=0.5)
            except TimeoutError:
                pass

    async def _shutdown(self) -> None:
        self.fleet.stop_waiting()
        await cancel_flights(self.datasets)
        for ds in self.datasets:
            if ds.feed is not None:
                ds.feed.stop()
        try:
            if self._fatal is None:
                self._write_manifests()
        finally:
            for ds in self.datasets:
                try:
                    ds.writer.close()
                except OSError as err:
                    log.error("%s: %s", ds.name, err)
            await self.fleet.aclose()
