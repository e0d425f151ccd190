"""Pre-tokenization in a process pool.

`open_tokenizer(job, base_dir)` loads the tokenizer (`tokenizer.py`: `spec.model.tokenizer`, else
the weights: a path, relative to the job file's directory, or `hf://org/name`), runs the start-up
integrity checks (`integrity.py`, and the render probe of `chat_template_probe.py`) and starts
`spec.generator.tokenizer_workers` processes that each load their own copy and render with the
same `RenderSettings`. `TokenizerContext.render_stream` feeds them batches with a bounded
prefetch, so rendering runs ahead of the consumer on every worker while memory stays flat.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from array import array
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from draftgen.generator.prompts.chat_template import Rendered, Renderer, RenderSettings
from draftgen.generator.prompts.chat_template_probe import probe_settings
from draftgen.generator.prompts.content_parts import content_format
from draftgen.generator.prompts.integrity import check_special_tokens, tokenizer_fingerprint
from draftgen.generator.prompts.thinking import variants
from draftgen.generator.prompts.tokenizer import (
    TokenizerError,
    encode_kwargs_for,
    load_tokenizer,
    resolve_tokenizer_location,
    tokenizer_lock,
)
from draftgen.spec import GenerationJob

# The input side and the tests import these from here.
__all__ = [
    "BATCH_PROMPTS",
    "BATCH_UNITS",
    "RenderJob",
    "RenderSettings",
    "Rendered",
    "TokenizerContext",
    "TokenizerError",
    "load_tokenizer",
    "open_tokenizer",
    "resolve_tokenizer_location",
]

BATCH_PROMPTS = 32  # prompts per task: amortizes the pickling round trip and the batch encode
BATCH_UNITS = 256  # items (incl. rejects) per batch at most, so memory stays bounded


# ------------------------------------------------------------------------------ worker process

_WORKER: Renderer | None = None


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _worker_init(settings: RenderSettings, parent: int) -> None:
    global _WORKER
    # Ctrl-C reaches the whole process group: the generator stops its workers itself, and a
    # worker's KeyboardInterrupt would only print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(parent)
    from draftgen.generator.telemetry.progress import worker_logging

    worker_logging()  # a spawned process: the generator's log format, before transformers loads
    _watch_parent(parent)
    _WORKER = Renderer(load_tokenizer(settings.location, settings.trust_remote_code), settings)


def _die_with_parent(parent: int) -> None:
    """The kernel kills this worker when the generator dies (PR_SET_PDEATHSIG); a worker whose
    parent is already gone (killed while this worker was still importing) exits at once.

    `parent` is the generator's pid, handed in: `os.getppid()` read here could already be pid 1
    or a subreaper. The death signal follows the thread that spawned the worker, so the pool's
    workers are all spawned when it is created, from the thread that lives as long as it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent-pid watch below still holds
        pass
    if os.getppid() != parent:
        os._exit(0)


def _watch_parent(parent: int, interval: float = 0.5) -> None:
    """Exit when the generator is gone: a SIGKILLed (or OOM-killed) parent cannot shut the pool
    down, and an idle worker would wait on its queue forever, holding a tokenizer in memory.
    (Backs up PR_SET_PDEATHSIG where prctl is unavailable.)"""
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored in this process meanwhile (only the main thread may change it)."""
    try:
        before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: the workers' own initializer still ignores it
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def _render_batch(jobs: list[tuple[list[dict], list[dict] | None]]) -> list[tuple]:
    """Renders in a worker; ids travel back packed as 4-byte integers, which the main process
    (whose CPU the request side's event loop shares) unpickles in a third of the time a list of
    Python ints takes."""
    assert _WORKER is not None, "tokenizer worker not initialised"
    return [
        (
            None if r.ids is None else array("I", r.ids).tobytes(),
            r.error,
            r.prefix_ok,
            r.missing_tools,
            r.tool_fallback,
        )
        for r in _WORKER.render_many(jobs)
    ]


def _unpack(packed: tuple) -> Rendered:
    ids, error, prefix_ok, missing, fallback = packed
    return Rendered(
        None if ids is None else array("I", ids).tolist(), error, prefix_ok, missing, fallback
    )


# ---------------------------------------------------------------------------------- context


@dataclass(slots=True)
class RenderJob:
    """A prompt to render, with whatever the caller needs to finish it afterwards."""

    messages: list[dict]
    tools: list[dict] | None
    meta: Any = None
    mode: str | None = None
    """The thinking mode it is rendered in (`thinking.py`); None: the job's settings."""


class TokenizerContext:
    """The tokenizer, its worker pool and the facts the integrity checks established."""

    def __init__(
        self,
        tokenizer: Any,
        settings: RenderSettings,
        workers: int,
        special_token_ids: dict[str, int],
    ) -> None:
        self.tokenizer = tokenizer
        self.settings = settings
        self.renderer = Renderer(tokenizer, settings)
        self.special_token_ids = special_token_ids
        self.fingerprint = tokenizer_fingerprint(tokenizer)
        self.vocab_size: int = self.fingerprint["vocab_size"]
        self.workers = workers
        self.prefetch = max(2, 2 * workers)  # batches in flight per stream
        self.waits = 0  # times a stream waited on a worker: high means add tokenizer workers
        self._pool: ProcessPoolExecutor | None = None
        self._inline_lock = tokenizer_lock(tokenizer)
        if workers > 0:
            self._pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_worker_init,
                initargs=(settings, os.getpid()),
            )
            # Spawn every worker now, from this thread (see `_die_with_parent`): the pool
            # spawns one per submit while none is idle. They start with SIGINT ignored (kept
            # across exec), so a Ctrl-C while one still imports prints no traceback.
            with _sigint_ignored():
                for _ in range(workers):
                    self._pool.submit(int)

    def __enter__(self) -> TokenizerContext:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def worker_pids(self) -> list[int]:
        """Process ids of the tokenizer workers started so far (to account for their CPU)."""
        procs = getattr(self._pool, "_processes", None) or {}
        return sorted(procs)

    def close(self) -> None:
        """Stop the workers at once: whatever they still render is no longer wanted (a stopped
        run, a met budget), and waiting for a batch would hold up a Ctrl-C."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
        for proc in procs:
            proc.join(timeout=5)

    def render_one(self, messages: list[dict], tools: list[dict] | None) -> Rendered:
        """One prompt (a chain's next turn), on a worker when there are any, so the generator's
        own process keeps its CPU for the requests; blocking: call it from a thread."""
        if self._pool is not None:
            try:
                return _unpack(self._pool.submit(_render_batch, [(messages, tools)]).result()[0])
            except (BrokenProcessPool, RuntimeError):  # shut down meanwhile: render here
                pass
        with self._inline_lock:
            return self.renderer.render(messages, tools)

    def render_stream(self, units: Iterable[Any]) -> Iterator[tuple[Any, Rendered | None]]:
        """`(unit, rendered)` in input order: each `RenderJob` with its result, anything else
        passed through with None. At most `prefetch` batches are being rendered ahead."""
        inflight: deque[tuple[list[Any], Future | None]] = deque()
        try:
            yield from self._stream(iter(units), inflight)
        finally:  # the consumer stopped early (budget met): drop the work rendered ahead
            for _, future in inflight:
                if future is not None:
                    future.cancel()

    def _stream(
        self, source: Iterator[Any], inflight: deque
    ) -> Iterator[tuple[Any, Rendered | None]]:
        exhausted = False
        while True:
            while not exhausted and len(inflight) < (self.prefetch if self._pool else 1):
                batch, jobs = [], []
                for unit in source:
                    batch.append(unit)
                    if isinstance(unit, RenderJob):
                        jobs.append(_job(unit))
                    if len(jobs) >= BATCH_PROMPTS or len(batch) >= BATCH_UNITS:
                        break
                if not batch:
                    exhausted = True
                    break
                future = self._pool.submit(_render_batch, jobs) if (self._pool and jobs) else None
                inflight.append((batch, future))
            if not inflight:
                return
            batch, future = inflight.popleft()
            if future is not None and not future.done():
                self.waits += 1  # the consumer outran the workers
            results: Iterator[Rendered]
            if future is not None:
                try:
                    results = map(_unpack, future.result())
                except BrokenProcessPool as err:
                    raise TokenizerError(
                        f"a tokenizer worker died ({err}); lower "
                        "generator.tokenizerWorkers or give the generator more memory"
                    ) from None
            else:
                with self._inline_lock:  # a fast tokenizer is not safe to share between threads
                    results = iter(
                        self.renderer.render_many(
                            [_job(u) for u in batch if isinstance(u, RenderJob)]
                        )
                    )
            for unit in batch:
                yield unit, (next(results) if isinstance(unit, RenderJob) else None)


def _job(unit: RenderJob) -> tuple:
    """What a renderer takes: `(messages, tools)`, and the mode when one is chosen."""
    if unit.mode is None:
        return (unit.messages, unit.tools)
    return (unit.messages, unit.tools, unit.mode)


def _needs_template(job: GenerationJob) -> bool:
    return any(ds.format != "pretokenized" for ds in job.spec.datasets)


def _template_text(tokenizer: Any) -> str | None:
    """The chat template's source (every named template, joined), to recognise its family."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):
        return "\n".join(str(t) for t in template.values())
    return template if isinstance(template, str) else None


def open_tokenizer(
    job: GenerationJob,
    base_dir: Path,
    *,
    workers: int | None = None,
    template_date: str | None = None,
) -> TokenizerContext:
    """Load the tokenizer, refuse to start on an integrity failure, start the worker pool.

    `workers` overrides `spec.generator.tokenizer_workers`; 0 renders in this process.
    `template_date` is the date the template sees (`template_clock.job_date`); default
    `spec.model.templateDate`, else the clock's.
    """
    model = job.spec.model
    location = resolve_tokenizer_location(model.tokenizer_location, base_dir)
    tokenizer = load_tokenizer(location, model.trust_remote_code)
    encode_kwargs = encode_kwargs_for(tokenizer)
    special = check_special_tokens(tokenizer, list(model.special_tokens), encode_kwargs)
    prefix = model.generation_prefix or None
    prefix_ids = tuple(tokenizer.encode(prefix, **encode_kwargs)) if prefix else ()
    settings = RenderSettings(
        location,
        model.trust_remote_code,
        dict(model.chat_template_kwargs),
        prefix,
        prefix_ids,
        "text",
        encode_kwargs,
        variants={
            name: replace(v, prefix_ids=tuple(tokenizer.encode(v.prefix, **encode_kwargs)))
            for name, v in variants(job, _template_text(tokenizer)).items()
        },
        template_date=template_date or model.template_date,
        content_format=content_format(_template_text(tokenizer)),
    )
    if _needs_template(job):
        settings = probe_settings(
            tokenizer, settings, any(ds.format == "glaive" for ds in job.spec.datasets)
        )
    n = job.spec.generator.tokenizer_workers if workers is None else workers
    return TokenizerContext(tokenizer, settings, n, special)
