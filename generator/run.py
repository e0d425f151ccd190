"""The orchestrator: resume from the records, check the servers, then keep every server full with
requests from all datasets at once until each dataset meets its budget or runs out of rows.

One asyncio loop does all the deciding; each request is a task that retries on its own and
writes its record the moment it succeeds. Samples come from the input side through a thread per
dataset (tokenizing is CPU work), so the loop never waits for the tokenizer."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import queue
import random
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx

from draftgen.spec import DatasetSpec, GenerationJob, SamplingSpec

from .admission import (LengthModel, ServerView, budget_admits, pick_server, progress_speed,
                        samples_admit)
from .budget import Ledger
from .client import (Aborted, BadResponse, Generation, RequestTimeout, SGLangClient, SGLangError,
                     ServerLoad, ServerUnavailable, sampling_params)
from .metrics import GeneratorMetrics
from .progress import Progress, RateMeter, eta_seconds
from .resume import DatasetState, scan_dataset
from .samples import Reject, Sample
from .writer import MANIFEST_FILE, DatasetWriter, DiskFull, atomic_write_json

log = logging.getLogger("draftgen.generate")

SampleSource = Callable[[DatasetSpec, frozenset, "int | None"], Iterator["Sample | Reject"]]
"""(dataset, ids already done, longest prompt the servers accept) → samples and rejects."""


class RunError(Exception):
    """The run cannot go on; `exit_code` tells the caller why (see `draftgen generate -h`)."""

    exit_code = 1


class IntegrityError(RunError):
    """The data would be wrong: the server does not serve the tokenizer's model."""

    exit_code = 3


class ServersDown(RunError):
    """No server became healthy."""

    exit_code = 4


@dataclass
class Settings:
    """How one `draftgen generate` run talks to its servers and shows progress."""

    servers: list[str]
    """Base URLs of the SGLang servers (replicas of the same model)."""
    output: Path
    """Output directory (`DIR/<dataset>/shard-*.jsonl`)."""
    metrics_port: int | None = None
    """Serve Prometheus metrics here (None: do not serve)."""
    live_progress: bool | None = None
    """Live terminal display (None: when stderr is a terminal)."""
    health_timeout: float = 1800.0
    """Longest wait for a server's `/health_generate` (at start and after each failure)."""
    metrics_interval: float = 1.0
    """Seconds between reads of each server's `/metrics`."""
    manifest_interval: float = 5.0
    """Seconds between manifest rewrites."""
    backoff_base: float = 0.5
    """First retry delay in seconds (doubles each attempt, at most 30 s)."""
    transport: httpx.AsyncBaseTransport | None = None
    """Replaces the network in tests of the client's error handling."""


@dataclass
class _Server:
    client: SGLangClient
    kv_tokens: int = 1
    max_running: int | None = None
    load: ServerLoad | None = None
    in_flight: int = 0
    in_flight_tokens: float = 0.0
    healthy: bool = True
    metrics_ok: bool = True
    max_prompt: int | None = None
    _recovery: asyncio.Task | None = None

    def view(self, now: float) -> ServerView:
        fresh = self.load is not None and now - self.load.at < 5.0
        return ServerView(
            kv_tokens=self.kv_tokens, max_running=self.max_running, in_flight=self.in_flight,
            in_flight_tokens=self.in_flight_tokens, healthy=self.healthy,
            queue=self.load.num_queue_reqs if fresh else None,
            running=self.load.num_running_reqs if fresh else None,
            token_usage=self.load.token_usage if fresh else None,
        )


class _Feed:
    """Samples of one dataset, produced by a thread running the input side's iterator."""

    _END = object()

    def __init__(self, make: Callable[[], Iterator], wake: Callable[[], None]) -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=256)
        self._stop = threading.Event()
        self._wake = wake
        self.error: BaseException | None = None
        self.finished = False
        self._thread = threading.Thread(target=self._run, args=(make,), daemon=True)
        self._thread.start()

    def _run(self, make: Callable[[], Iterator]) -> None:
        it = None
        try:
            it = make()
            for item in it:
                while not self._stop.is_set():
                    try:
                        self._queue.put(item, timeout=0.2)
                        break
                    except queue.Full:
                        continue
                if self._stop.is_set():
                    break
                self._wake()
        except BaseException as err:  # noqa: BLE001 - handed to the loop, which stops the run
            self.error = err
        finally:
            if it is not None and hasattr(it, "close"):
                try:
                    it.close()
                except Exception:  # noqa: BLE001
                    pass
            while True:  # the end marker must arrive, unless nobody reads any more
                try:
                    self._queue.put(self._END, timeout=0.2)
                    break
                except queue.Full:
                    if self._stop.is_set():
                        break
            self._wake()

    def take(self) -> Sample | Reject | None:
        """The next item, or None when none is ready (or the feed ended: see `finished`)."""
        if self.finished:
            return None
        try:
            item = self._queue.get_nowait()
        except queue.Empty:
            return None
        if item is self._END:
            self.finished = True
            return None
        return item

    def stop(self) -> None:
        self._stop.set()


@dataclass
class _Dataset:
    spec: DatasetSpec
    sampling: SamplingSpec
    state: DatasetState
    writer: DatasetWriter
    model: LengthModel
    feed: _Feed | None = None
    pending: Sample | None = None
    flights: dict[str, _Flight] = field(default_factory=dict)
    in_flight_prompt: int = 0

    @property
    def ledger(self) -> Ledger:
        return self.state.ledger

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass
class _Flight:
    sample: Sample
    server: _Server
    tokens: float
    rid: str = ""
    sent_at: float = 0.0
    """`time.monotonic()` when the current attempt was sent."""
    cancelled: bool = False
    task: asyncio.Task | None = None


def _rid_base(sample_id: str, run_nonce: str) -> str:
    digest = hashlib.sha256(sample_id.encode()).hexdigest()[:16]
    return f"dg-{digest}-{run_nonce}"


def _reject_key(r: Reject) -> tuple:
    return (r.id, r.source_index, r.reason)


class Runner:
    """One `draftgen generate` run."""

    def __init__(self, job: GenerationJob, settings: Settings, source: SampleSource,
                 tokenizer: Any = None) -> None:
        self.job = job
        self.settings = settings
        self.source = source
        self.tokenizer = tokenizer
        self.gen = job.spec.generator
        self.metrics = GeneratorMetrics()
        self.rate = RateMeter()
        self.run_nonce = uuid.uuid4().hex[:8]
        self.servers = [_Server(SGLangClient(u, timeout=self.gen.request_timeout_seconds,
                                             transport=settings.transport))
                        for u in settings.servers]
        self.datasets: list[_Dataset] = []
        self.max_prompt_tokens: int | None = None
        self._rates: deque[float] = deque(maxlen=256)
        self._late_joiners: set[asyncio.Task] = set()
        self._wake = asyncio.Event()
        self._fatal: BaseException | None = None
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None

    # ---- start-up -------------------------------------------------------------------------

    def _resume(self) -> None:
        out = self.settings.output
        out.mkdir(parents=True, exist_ok=True)
        shard_max = self.job.spec.output.shard_max_records
        for spec in self.job.spec.datasets:
            directory = out / spec.name
            state = scan_dataset(directory, spec.name, spec.budget, shard_max_records=shard_max)
            sampling = self.job.spec.sampling_for(spec)
            ds = _Dataset(
                spec=spec, sampling=sampling, state=state,
                writer=DatasetWriter(directory, shard_max_records=shard_max,
                                     next_shard=state.next_shard,
                                     records_in_shard=state.records_in_shard),
                model=LengthModel(sampling.max_new_tokens, state.lengths[-4096:]),
            )
            if state.ledger.samples or state.torn_bytes:
                log.info("%s: resuming with %d samples, %d completion tokens already written%s",
                         spec.name, state.ledger.samples, state.ledger.completion_tokens,
                         f" (dropped a torn line of {state.torn_bytes} bytes)" if state.torn_bytes else "")
            b = spec.budget
            if state.ledger.samples and not state.ledger.budget_met and not (
                    budget_admits(budget=b.completion_tokens, done=state.ledger.completion_tokens,
                                  in_flight=[], in_flight_known=0, new_known=0, model=ds.model)
                    and budget_admits(budget=b.total_tokens, done=state.ledger.total_tokens,
                                      in_flight=[], in_flight_known=0, new_known=0,
                                      model=ds.model)):
                state.ledger.closed = True  # the same rule that closed it before: no server needed
            self.metrics.start_from(state.ledger)
            self.datasets.append(ds)

    async def _check_servers(self) -> None:
        """Start as soon as one server is healthy and checked; the others join when they are
        (replicas come up at different times). No healthy server within the timeout: stop."""
        pending = {asyncio.create_task(self._join(s)): s for s in self.servers}
        for server in self.servers:
            server.healthy = False
        error: BaseException | None = None
        while pending:
            done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                pending.pop(task)
                if task.exception() is not None:
                    error = task.exception()
                    if isinstance(error, IntegrityError):
                        for other in pending:
                            other.cancel()
                        raise error
            if any(s.healthy for s in self.servers):
                break
        if not any(s.healthy for s in self.servers):
            if isinstance(error, ServerUnavailable):
                raise ServersDown(str(error)) from error
            raise error or ServersDown("no server given")
        self._late_joiners = set(pending)
        for task in pending:
            task.add_done_callback(self._late_join_done)
        limits = [s.max_prompt for s in self.servers if s.healthy and s.max_prompt]
        self.max_prompt_tokens = min(limits) if limits else None

    def _late_join_done(self, task: asyncio.Task) -> None:
        if task.cancelled():
            return
        err = task.exception()
        if isinstance(err, IntegrityError):
            self._fatal = err
            self._wake.set()
        elif err is not None:
            log.warning("going on without a server: %s", err)

    async def _join(self, server: _Server) -> None:
        """Wait for one server's health, read its capacity, compare its tokenizer with ours."""
        await server.client.wait_healthy(self.settings.health_timeout)
        info = await server.client.server_info()
        kv = info.get("max_total_num_tokens")
        states = info.get("internal_states") or [{}]
        if not kv:
            kv = states[0].get("max_total_num_tokens")
        server.kv_tokens = int(kv or 1)
        mr = states[0].get("effective_max_running_requests_per_dp") or info.get("max_running_requests")
        server.max_running = int(mr) if mr else None
        server.max_prompt = int(info["max_req_input_len"]) if info.get("max_req_input_len") else None
        if info.get("skip_tokenizer_init"):
            log.warning("%s runs with --skip-tokenizer-init: its tokenizer cannot be compared",
                        server.client.url)
        elif self.tokenizer is not None:
            await check_server_tokenizer(server.client, self.tokenizer,
                                         self.job.spec.model.special_tokens)
        log.info("%s: KV pool %d tokens, max running requests %s, longest prompt %s",
                 server.client.url, server.kv_tokens, server.max_running, server.max_prompt)
        server.healthy = True
        self._wake.set()

    # ---- the loop -------------------------------------------------------------------------

    def wake(self) -> None:
        """Thread-safe: something changed, decide again."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._wake.set)
            except RuntimeError:  # the loop closed meanwhile: nobody is waiting
                pass

    def _start_feeds(self) -> None:
        for ds in self.datasets:
            if ds.ledger.done:
                continue
            skip = frozenset(ds.state.done_ids)
            ds.feed = _Feed(lambda d=ds, s=skip: self.source(d.spec, s, self.max_prompt_tokens),
                            self.wake)

    def _next_sample(self, ds: _Dataset) -> Sample | None:
        """The dataset's next sample to send; rejects and repeats are handled on the way."""
        while ds.pending is None and ds.feed is not None:
            item = ds.feed.take()
            if item is None:
                if ds.feed.error is not None:
                    raise ds.feed.error
                return None
            if isinstance(item, Reject):
                self._reject(ds, item)
                continue
            if item.id in ds.state.done_ids or item.id in ds.flights:
                continue  # written by an earlier run, or a repeated row id
            ds.pending = item
        return ds.pending

    def _reject(self, ds: _Dataset, r: Reject) -> None:
        key = _reject_key(r)
        if key in ds.state.rejected:
            return  # recorded by an earlier run
        ds.state.rejected.add(key)
        ds.writer.write_reject({"dataset": r.dataset, "source_index": r.source_index, "id": r.id,
                                "reason": r.reason, "detail": r.detail, "created_at": time.time()})
        ds.ledger.add_reject(r.reason)
        self.metrics.rejects.labels(ds.name, r.reason).inc()

    def _progress(self, ds: _Dataset, now: float) -> list[float]:
        """Tokens each in-flight request of `ds` has surely generated by now."""
        rate = progress_speed(self._rates)
        limit = ds.sampling.max_new_tokens
        return [min(limit, max(0.0, now - f.sent_at) * rate) for f in ds.flights.values()]

    def _budget_admits(self, ds: _Dataset, sample: Sample, now: float) -> bool:
        b, led = ds.spec.budget, ds.ledger
        if not samples_admit(max_samples=b.max_samples, done=led.samples,
                             in_flight=len(ds.flights)):
            return False
        if b.completion_tokens is None and b.total_tokens is None:
            return True
        progress = self._progress(ds, now)
        return (budget_admits(budget=b.completion_tokens, done=led.completion_tokens,
                              in_flight=progress, in_flight_known=0, new_known=0, model=ds.model)
                and budget_admits(budget=b.total_tokens, done=led.total_tokens,
                                  in_flight=progress, in_flight_known=ds.in_flight_prompt,
                                  new_known=len(sample.input_ids), model=ds.model))

    def _admit(self) -> None:
        """Start every request the budgets and the servers have room for, datasets taking turns
        (the one with the fewest requests in flight first) so none starves and none drains."""
        conc = self.gen.concurrency
        while not self._stopping:
            started = False
            now = time.monotonic()
            active = [d for d in self.datasets if not d.ledger.done]
            active.sort(key=lambda d: len(d.flights))
            for ds in active:
                sample = self._next_sample(ds)
                if sample is None:
                    continue
                if not self._budget_admits(ds, sample, now):
                    if not ds.flights:
                        ds.ledger.closed = True  # less than one likely sample left
                        self._dataset_finished(ds)
                    continue
                tokens = len(sample.input_ids) + ds.model.predict()
                index = pick_server([s.view(now) for s in self.servers], tokens, mode=conc.mode,
                                    max_requests=conc.max_requests,
                                    tokens_factor=conc.max_tokens_factor)
                if index is None:
                    return  # every server is full: wait for an answer
                ds.pending = None
                self._launch(ds, sample, self.servers[index], tokens)
                started = True
            if not started:
                return

    def _launch(self, ds: _Dataset, sample: Sample, server: _Server, tokens: float) -> None:
        flight = _Flight(sample=sample, server=server, tokens=tokens)
        ds.flights[sample.id] = flight
        ds.in_flight_prompt += len(sample.input_ids)
        server.in_flight += 1
        server.in_flight_tokens += tokens
        self._update_server_gauges(server)
        flight.task = asyncio.create_task(self._request(ds, flight))

    def _land(self, ds: _Dataset, flight: _Flight) -> None:
        ds.flights.pop(flight.sample.id, None)
        ds.in_flight_prompt -= len(flight.sample.input_ids)
        flight.server.in_flight -= 1
        flight.server.in_flight_tokens -= flight.tokens
        self._update_server_gauges(flight.server)
        self._wake.set()

    def _update_server_gauges(self, server: _Server) -> None:
        self.metrics.requests_in_flight.labels(server.client.url).set(server.in_flight)
        self.metrics.tokens_in_flight.labels(server.client.url).set(server.in_flight_tokens)

    # ---- one request ----------------------------------------------------------------------

    async def _request(self, ds: _Dataset, flight: _Flight) -> None:
        try:
            await self._attempts(ds, flight)
        except DiskFull as err:
            self._fatal = err
        except Exception as err:  # noqa: BLE001 - a bug must stop the run, not vanish in a task
            log.exception("request %s failed unexpectedly", flight.sample.id)
            self._fatal = err
        finally:
            self._land(ds, flight)

    async def _attempts(self, ds: _Dataset, flight: _Flight) -> None:
        sample, server = flight.sample, flight.server
        params = sampling_params(ds.sampling, sample.id)
        base = _rid_base(sample.id, self.run_nonce)
        last: SGLangError | None = None
        for attempt in range(self.gen.retries + 1):
            if flight.cancelled:
                return
            if attempt:
                delay = min(30.0, self.settings.backoff_base * 2 ** (attempt - 1))
                await asyncio.sleep(delay * (0.5 + random.random()))
                if flight.cancelled:
                    return
                if not server.healthy:
                    await self._recovered(server)
                    if flight.cancelled:
                        return
            flight.rid = f"{base}-{attempt}"
            started = flight.sent_at = time.monotonic()
            try:
                result = await server.client.generate(sample.input_ids, params, flight.rid)
            except Aborted as err:
                if flight.cancelled:
                    return  # we asked for it: nothing partial is written
                last = err
            except (ServerUnavailable, RequestTimeout) as err:
                if flight.cancelled:
                    return
                last = err
                if isinstance(err, RequestTimeout):
                    await self._quiet_abort(server, flight.rid)
                else:
                    self._server_failed(server)
            except BadResponse as err:
                self.metrics.errors.labels(err.kind).inc()
                reason = "prompt_too_long" if err.prompt_too_long else "request_failed"
                self._reject(ds, Reject(ds.name, sample.source_index, sample.id, reason, str(err)))
                return
            else:
                self._write(ds, flight, result, params, attempt + 1, time.monotonic() - started)
                return
            self.metrics.errors.labels(last.kind).inc()
            log.warning("%s attempt %d/%d on %s: %s", sample.id, attempt + 1,
                        self.gen.retries + 1, server.client.url, last)
        assert last is not None
        self._reject(ds, Reject(ds.name, sample.source_index, sample.id, "request_failed",
                                f"{self.gen.retries + 1} attempts; last: {last}"))

    def _server_failed(self, server: _Server) -> None:
        server.healthy = False
        if server._recovery is None or server._recovery.done():
            server._recovery = asyncio.create_task(self._watch_recovery(server))

    async def _watch_recovery(self, server: _Server) -> None:
        try:
            await server.client.wait_healthy(self.settings.health_timeout)
            log.info("%s is healthy again", server.client.url)
        except ServerUnavailable as err:
            log.error("%s", err)
        finally:
            server.healthy = True  # retries decide from here; a dead server fails them
            self._wake.set()

    async def _recovered(self, server: _Server) -> None:
        if server._recovery is not None:
            try:
                await asyncio.shield(server._recovery)
            except asyncio.CancelledError:
                if server._recovery.cancelled() and not asyncio.current_task().cancelling():
                    return  # the run is stopping: the attempt loop sees `cancelled`
                raise

    async def _quiet_abort(self, server: _Server, rid: str) -> None:
        try:
            await server.client.abort(rid)
        except SGLangError:
            pass

    def _write(self, ds: _Dataset, flight: _Flight, result: Generation, params: dict,
               attempts: int, latency: float) -> None:
        if ds.ledger.budget_met and self.gen.on_budget_met == "abort":
            return  # abort mode: nothing lands after the budget is met
        sample = flight.sample
        meta: dict[str, Any] = {"sampling": params, "cached_tokens": result.cached_tokens,
                                "e2e_latency": result.e2e_latency or latency,
                                "server": flight.server.client.url, "attempts": attempts,
                                "created_at": time.time()}
        if sample.info:
            meta["sample"] = sample.info
        record = {
            "id": sample.id, "dataset": ds.name, "source_index": sample.source_index,
            "turn": sample.turn, "input_ids": sample.input_ids, "output_ids": result.output_ids,
            "prompt_tokens": len(sample.input_ids), "completion_tokens": len(result.output_ids),
            "finish_reason": result.finish_reason, "matched_stop": result.matched_stop,
            "meta": meta,
        }
        ds.writer.write_record(record)  # raises DiskFull before anything is counted
        ds.state.done_ids.add(sample.id)
        completion = len(result.output_ids)
        ds.ledger.add(len(sample.input_ids), completion, result.finish_reason)
        ds.model.observe(completion)
        if latency > 0 and completion > 0:
            self._rates.append(completion / latency)
        self.rate.add(completion)
        self.progress.add_tokens(ds.name, completion)
        self.metrics.record(ds.ledger, result.finish_reason, len(sample.input_ids), completion,
                            latency)
        if ds.ledger.budget_met:
            self._dataset_finished(ds)

    def _dataset_finished(self, ds: _Dataset) -> None:
        if ds.feed is not None:
            ds.feed.stop()
        self.metrics.update_dataset(ds.ledger)
        if ds.ledger.budget_met and self.gen.on_budget_met == "abort":
            for flight in list(ds.flights.values()):
                if not flight.cancelled:
                    flight.cancelled = True
                    asyncio.create_task(self._quiet_abort(flight.server, flight.rid))

    # ---- background -----------------------------------------------------------------------

    async def _poll_metrics(self) -> None:
        while True:
            for server in self.servers:
                if not server.metrics_ok:
                    continue
                try:
                    server.load = await server.client.metrics()
                except BadResponse:
                    server.metrics_ok = False
                    log.warning("%s has no /metrics (start it with --enable-metrics); "
                                "admission uses its KV pool size only", server.client.url)
                except SGLangError:
                    server.load = None
            self._wake.set()
            await asyncio.sleep(self.settings.metrics_interval)

    def _write_manifests(self) -> None:
        rate = self.rate.rate()
        ledgers = [d.ledger for d in self.datasets]
        eta = eta_seconds(ledgers, rate)
        self.metrics.throughput.set(rate)
        if eta is not None:
            self.metrics.eta.set(eta)
        done = all(l.done for l in ledgers)
        self.metrics.job_done.set(1 if done else 0)
        manifests = {}
        for ds in self.datasets:
            manifests[ds.name] = ds.ledger.manifest()
            ds.writer.write_manifest(manifests[ds.name])
        atomic_write_json(self.settings.output / MANIFEST_FILE, {
            "job": self.job.metadata.name, "model": self.job.spec.model.weights,
            "datasets": manifests,
            "completion_tokens": sum(l.completion_tokens for l in ledgers),
            "samples": sum(l.samples for l in ledgers),
            "throughput_tokens_per_second": round(rate, 3),
            "eta_seconds": None if eta is None else round(eta, 1),
            "updated_at": time.time(), "done": done,
        })

    def _check_exhausted(self) -> None:
        for ds in self.datasets:
            if (not ds.ledger.done and ds.feed is not None and ds.feed.finished
                    and ds.pending is None and not ds.flights):
                if ds.feed.error is not None:
                    raise ds.feed.error
                ds.ledger.exhausted = True
                self._dataset_finished(ds)

    def stop(self) -> None:
        """Stop admitting; abort what is in flight (a signal arrived)."""
        self._stopping = True
        self._wake.set()

    async def run(self) -> dict[str, Ledger]:
        self._loop = asyncio.get_running_loop()
        for server in self.servers:
            self._update_server_gauges(server)
        self._resume()
        self.progress = Progress([d.ledger for d in self.datasets],
                                 live=self.settings.live_progress)
        if self.settings.metrics_port:
            self.metrics.serve(self.settings.metrics_port)
        poller: asyncio.Task | None = None
        try:
            if not all(d.ledger.done for d in self.datasets):
                await self._check_servers()
                self._start_feeds()
                poller = asyncio.create_task(self._poll_metrics())
            with self.progress:
                await self._main_loop()
        finally:
            if poller is not None:
                poller.cancel()
            await self._shutdown()
        if self._fatal is not None:
            raise self._fatal
        return {d.name: d.ledger for d in self.datasets}

    async def _main_loop(self) -> None:
        last_manifest = 0.0
        while True:
            if self._fatal is not None or self._stopping:
                return
            self._check_exhausted()
            if all(d.ledger.done and not d.flights for d in self.datasets):
                self._write_manifests()
                self.progress.update(self.rate.rate(), 0.0, 0, force=True)
                return
            self._admit()
            in_flight = sum(s.in_flight for s in self.servers)
            rate = self.rate.rate()
            self.progress.update(rate, eta_seconds([d.ledger for d in self.datasets], rate),
                                 in_flight)
            if time.monotonic() - last_manifest >= self.settings.manifest_interval:
                self._write_manifests()
                last_manifest = time.monotonic()
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=0.5)
            except asyncio.TimeoutError:
                pass

    async def _shutdown(self) -> None:
        for task in self._late_joiners:
            task.cancel()
        for server in self.servers:  # requests waiting for a dead server give up at once
            if server._recovery is not None:
                server._recovery.cancel()
        flights = [(d, f) for d in self.datasets for f in d.flights.values()]
        if flights:
            for _, flight in flights:
                flight.cancelled = True
            await asyncio.gather(*(self._quiet_abort(f.server, f.rid) for _, f in flights))
            tasks = [f.task for _, f in flights if f.task is not None]
            _, pending = await asyncio.wait(tasks, timeout=30.0)
            for task in pending:
                task.cancel()
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
            await asyncio.gather(*(s.client.aclose() for s in self.servers))


async def check_server_tokenizer(client: SGLangClient, tokenizer: Any,
                                 special_tokens: list[str]) -> None:
    """Refuse a server whose tokenizer splits text or special tokens differently from ours: its
    model would read different tokens from the ids we send."""
    probes = ["The quick brown fox jumps over the lazy dog. 12345 naïve café 東京",
              "def f(x):\n    return {\"a\": [1, 2]}\n"]
    probes += list(special_tokens)
    try:
        theirs = await client.tokenize(probes)
    except BadResponse as err:
        log.warning("%s cannot tokenize (%s); skipping the tokenizer comparison", client.url, err)
        return
    ours = [list(tokenizer.encode(p, add_special_tokens=False)) for p in probes]
    for text, a, b in zip(probes, ours, theirs):
        if list(a) != list(b):
            raise IntegrityError(
                f"{client.url} tokenizes {text[:40]!r} as {b[:12]} but the job's tokenizer gives "
                f"{a[:12]}: the server serves a different model or tokenizer than "
                "spec.model.tokenizer; point --server at the right server or fix spec.model"
            )
