"""Pre-tokenization with the target model's own tokenizer and chat template, in a process pool.

`open_tokenizer(job, base_dir)` loads the tokenizer (`spec.model.tokenizer`, else the weights: a
path, relative to the job file's directory, or `hf://org/name`), runs the start-up integrity
checks (`integrity.py`) and starts `spec.generator.tokenizer_workers` processes that each load
their own copy. `TokenizerContext.render_stream` feeds them batches with a bounded prefetch, so
rendering runs ahead of the consumer on every worker while memory stays flat.

How a prompt becomes ids: the template is rendered to text
(`apply_chat_template(messages, tools=tools or None, add_generation_prompt=True, tokenize=False,
**chatTemplateKwargs)`) and the text encoded without adding special tokens again — the same
render-then-encode path SGLang's own chat endpoint takes (with `add_special_tokens=False` only
when the tokenizer would add any, which keeps Kimi's tokenizer on its fast path). At start a
probe compares that with `apply_chat_template(..., tokenize=True, return_dict=False)`; if the two
differ (tokenizers whose control tokens have no faithful text form), every prompt takes the direct
ids route instead.

Speed: a batch's texts are encoded in one call to the Rust tokenizer's `encode_batch_fast` (the
same ids as `encode`, without the character offsets nobody reads here: 10-20 % less time than
encoding one text at a time), taken only where the start-up probe shows it gives the ids of the
tokenizer's own `encode`. Rendering is cheap beside encoding (transformers caches the compiled
template; about 40 µs of a 1,300-token prompt's 500 µs).
"""

from __future__ import annotations

import multiprocessing
from array import array
import os
import threading
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from draftgen.spec import GenerationJob

from .integrity import (PROBE_MESSAGES, PROBE_TOOL_NAME, PROBE_TOOLS, IntegrityError,
                        check_generation_prefix, check_special_tokens, missing_tool_names,
                        tokenizer_fingerprint)
from .tokenizer_imports import missing_package_message

BATCH_PROMPTS = 32  # prompts per task: amortizes the pickling round trip and the batch encode
BATCH_UNITS = 256   # items (incl. rejects) per batch at most, so memory stays bounded


class TokenizerError(RuntimeError):
    """The tokenizer cannot be loaded or a tokenizer worker died."""


def resolve_tokenizer_location(location: str, base_dir: Path) -> str:
    """`hf://org/name` → the hub id `org/name`; a relative path → below `base_dir`."""
    if location.startswith("hf://"):
        return location[len("hf://"):].strip("/")
    path = Path(location.removeprefix("file://"))
    return str(path if path.is_absolute() else Path(base_dir) / path)


def load_tokenizer(location: str, trust_remote_code: bool) -> Any:
    """`AutoTokenizer.from_pretrained`, with an error that says what was tried."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one process per core already
    from transformers import AutoTokenizer

    where = "model.tokenizer (or model.weights when no tokenizer is given)"
    if Path(location).is_absolute() and not Path(location).exists():
        raise TokenizerError(
            f"{where}: {location} does not exist; relative paths are resolved from the job file's "
            "directory; write an existing directory holding the tokenizer, or hf://ORG/NAME")
    try:
        tokenizer = AutoTokenizer.from_pretrained(location, trust_remote_code=trust_remote_code)
    except Exception as err:  # transformers raises OSError, ValueError, ImportError, ...
        if (missing := missing_package_message(err, location, where)) is not None:
            raise TokenizerError(missing) from None
        hint = ("the directory holds no loadable tokenizer" if Path(location).is_absolute() else
                "as a hub id it needs network access (is HF_HUB_OFFLINE set?) or a cached copy")
        raise TokenizerError(
            f"{where}: cannot load a tokenizer from {location!r} ({hint}): "
            f"{type(err).__name__}: {err}. Point it at the model's tokenizer directory or "
            "hf://ORG/NAME; set model.trustRemoteCode: true if the tokenizer ships its own code"
        ) from None
    # The prompt limit is the server's max_req_input_len (prompt_too_long rejects), not the
    # tokenizer config's model_max_length, whose "sequence too long" warning would only mislead.
    tokenizer.model_max_length = int(1e30)
    return tokenizer


@dataclass(frozen=True)
class RenderSettings:
    """Everything a worker needs to render exactly like the main process."""

    location: str
    trust_remote_code: bool
    chat_template_kwargs: dict[str, Any]
    generation_prefix: str | None
    prefix_ids: tuple[int, ...]
    route: str  # "text": render then encode; "ids": apply_chat_template(tokenize=True)
    encode_kwargs: dict[str, Any]
    backend_encode: bool = False  # encode with the Rust tokenizer directly (checked identical)
    batch_encode: bool = False  # ... a batch at a time with `encode_batch_fast` (checked identical)


@dataclass(frozen=True, slots=True)
class Rendered:
    """One rendered prompt, or why it failed."""

    ids: list[int] | None
    error: str | None = None
    prefix_ok: bool = True
    missing_tools: list[str] = field(default_factory=list)


def encode_kwargs_for(tokenizer: Any) -> dict[str, Any]:
    """`add_special_tokens=False` only where encoding would add specials (as SGLang does)."""
    try:
        adds = len(tokenizer.encode("")) > 0
    except Exception:
        adds = True
    return {"add_special_tokens": False} if adds else {}


def _backend(tokenizer: Any) -> Any:
    """The `tokenizers.Tokenizer` under a fast tokenizer, if any (the Python wrapper around its
    `encode` costs about a fifth of the encoding time)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return backend if backend is not None and hasattr(backend, "encode") else None


class Renderer:
    """Messages (+ tools) → prompt ids with one tokenizer, plus the per-sample checks."""

    def __init__(self, tokenizer: Any, settings: RenderSettings) -> None:
        self.tokenizer = tokenizer
        self.settings = settings
        self._backend = _backend(tokenizer) if settings.backend_encode else None
        self._add_special = settings.encode_kwargs.get("add_special_tokens", True)
        self._encode_batch = getattr(self._backend, "encode_batch_fast", None) \
            if settings.batch_encode else None

    def text(self, messages: list[dict], tools: list[dict] | None) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tools=tools or None, add_generation_prompt=True, tokenize=False,
            **self.settings.chat_template_kwargs)

    def ids_direct(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        out = self.tokenizer.apply_chat_template(
            messages, tools=tools or None, add_generation_prompt=True, tokenize=True,
            return_dict=False, **self.settings.chat_template_kwargs)
        return list(out)

    def encode(self, text: str) -> list[int]:
        if self._backend is not None:
            return self._backend.encode(text, add_special_tokens=self._add_special).ids
        return list(self.tokenizer.encode(text, **self.settings.encode_kwargs))

    def encode_many(self, texts: list[str]) -> list[list[int]]:
        """The ids of each text, as `encode` gives them, in one call where that is allowed."""
        if self._encode_batch is not None and texts:
            return [e.ids for e in self._encode_batch(texts, add_special_tokens=self._add_special)]
        return [self.encode(t) for t in texts]

    def decode(self, ids: list[int]) -> str:
        if self._backend is not None:
            return self._backend.decode(ids, skip_special_tokens=False)
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def render(self, messages: list[dict], tools: list[dict] | None) -> Rendered:
        return self.render_many([(messages, tools)])[0]

    def render_many(self, jobs: list[tuple[list[dict], list[dict] | None]]) -> list[Rendered]:
        """Render each `(messages, tools)`; the texts are encoded together (see the module
        docstring). A prompt the template refuses fails alone."""
        if self.settings.route != "text":
            return [self._direct(messages, tools) for messages, tools in jobs]
        texts: list[str | BaseException] = []
        for messages, tools in jobs:
            try:
                texts.append(self.text(messages, tools))
            except Exception as err:  # jinja's raise_exception, TypeError on odd content, ...
                texts.append(err)
        ok = [t for t in texts if isinstance(t, str)]
        try:
            encoded = iter(self.encode_many(ok))
        except Exception:  # one text the tokenizer refuses: find it, the others go on
            encoded = iter([self._encode_or_error(t) for t in ok])
        out = []
        for (messages, tools), text in zip(jobs, texts):
            ids = text if isinstance(text, BaseException) else next(encoded)
            if isinstance(ids, BaseException):
                out.append(Rendered(None, f"{type(ids).__name__}: {ids}"))
            else:
                out.append(self._checked(text, ids, tools))  # type: ignore[arg-type]
        return out

    def _encode_or_error(self, text: str) -> list[int] | BaseException:
        try:
            return self.encode(text)
        except Exception as err:
            return err

    def _direct(self, messages: list[dict], tools: list[dict] | None) -> Rendered:
        try:
            ids = self.ids_direct(messages, tools)
        except Exception as err:
            return Rendered(None, f"{type(err).__name__}: {err}")
        return self._checked(None, ids, tools)

    def _checked(self, text: str | None, ids: list[int], tools: list[dict] | None) -> Rendered:
        """The per-sample checks: generation prefix (text and ids), tools in the prompt."""
        s = self.settings
        prefix_ok = True
        if s.generation_prefix:
            prefix_ok = (text is None or text.endswith(s.generation_prefix)) and \
                tuple(ids[-len(s.prefix_ids):]) == s.prefix_ids
        missing = []
        if tools:
            missing = missing_tool_names(self.decode(ids), tools)
        return Rendered(ids, None, prefix_ok, missing)


# ------------------------------------------------------------------------------ worker process

_WORKER: Renderer | None = None


def _worker_init(settings: RenderSettings) -> None:
    global _WORKER
    _watch_parent(os.getppid())
    _WORKER = Renderer(load_tokenizer(settings.location, settings.trust_remote_code), settings)


def _watch_parent(parent: int, interval: float = 0.5) -> None:
    """Exit when the generator is gone: a SIGKILLed (or OOM-killed) parent cannot shut the pool
    down, and an idle worker would wait on its queue forever, holding a tokenizer in memory."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _render_batch(jobs: list[tuple[list[dict], list[dict] | None]]) -> list[tuple]:
    """Renders in a worker; ids travel back packed as 4-byte integers, which the main process
    (whose CPU the request side's event loop shares) unpickles in a third of the time a list of
    Python ints takes."""
    assert _WORKER is not None, "tokenizer worker not initialised"
    return [(None if r.ids is None else array("I", r.ids).tobytes(), r.error, r.prefix_ok,
             r.missing_tools) for r in _WORKER.render_many(jobs)]


def _unpack(packed: tuple) -> Rendered:
    ids, error, prefix_ok, missing = packed
    return Rendered(None if ids is None else array("I", ids).tolist(), error, prefix_ok, missing)


# ---------------------------------------------------------------------------------- context

@dataclass(slots=True)
class RenderJob:
    """A prompt to render, with whatever the caller needs to finish it afterwards."""

    messages: list[dict]
    tools: list[dict] | None
    meta: Any = None


class TokenizerContext:
    """The tokenizer, its worker pool and the facts the integrity checks established."""

    def __init__(self, tokenizer: Any, settings: RenderSettings, workers: int,
                 special_token_ids: dict[str, int]) -> None:
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
        self._inline_lock = threading.Lock()
        if workers > 0:
            self._pool = ProcessPoolExecutor(
                max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                initializer=_worker_init, initargs=(settings,))

    def __enter__(self) -> TokenizerContext:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def worker_pids(self) -> list[int]:
        """Process ids of the tokenizer workers started so far (to account for their CPU)."""
        procs = getattr(self._pool, "_processes", None) or {}
        return sorted(procs)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

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

    def _stream(self, source: Iterator[Any], inflight: deque) -> Iterator[tuple[Any, Rendered | None]]:
        exhausted = False
        while True:
            while not exhausted and len(inflight) < (self.prefetch if self._pool else 1):
                batch, jobs = [], []
                for unit in source:
                    batch.append(unit)
                    if isinstance(unit, RenderJob):
                        jobs.append((unit.messages, unit.tools))
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
            if future is not None:
                try:
                    results = map(_unpack, future.result())
                except BrokenProcessPool as err:
                    raise TokenizerError(f"a tokenizer worker died ({err}); lower "
                                         "generator.tokenizerWorkers or give the generator more memory") from None
            else:
                with self._inline_lock:  # a fast tokenizer is not safe to share between threads
                    results = iter(self.renderer.render_many(
                        [(u.messages, u.tools) for u in batch if isinstance(u, RenderJob)]))
            for unit in batch:
                yield unit, (next(results) if isinstance(unit, RenderJob) else None)


def _needs_template(job: GenerationJob) -> bool:
    return any(ds.format != "pretokenized" for ds in job.spec.datasets)


def open_tokenizer(job: GenerationJob, base_dir: Path, *, workers: int | None = None) -> TokenizerContext:
    """Load the tokenizer, refuse to start on an integrity failure, start the worker pool.

    `workers` overrides `spec.generator.tokenizer_workers`; 0 renders in this process.
    """
    model = job.spec.model
    location = resolve_tokenizer_location(model.tokenizer_location, base_dir)
    tokenizer = load_tokenizer(location, model.trust_remote_code)
    encode_kwargs = encode_kwargs_for(tokenizer)
    special = check_special_tokens(tokenizer, list(model.special_tokens), encode_kwargs)
    prefix = model.generation_prefix or None
    prefix_ids = tuple(tokenizer.encode(prefix, **encode_kwargs)) if prefix else ()
    settings = RenderSettings(location, model.trust_remote_code, dict(model.chat_template_kwargs),
                              prefix, prefix_ids, "text", encode_kwargs)
    if _needs_template(job):
        settings = _probe(tokenizer, settings, any(ds.format == "glaive" for ds in job.spec.datasets))
    n = job.spec.generator.tokenizer_workers if workers is None else workers
    return TokenizerContext(tokenizer, settings, n, special)


def _probe(tokenizer: Any, settings: RenderSettings, with_tools: bool) -> RenderSettings:
    """Render a probe conversation: the template exists and works, the prefix is there, the
    text route gives the same ids as the direct route (else take the direct route), and tools
    reach the prompt when a dataset will carry them."""
    if not getattr(tokenizer, "chat_template", None):
        raise IntegrityError(
            "model.tokenizer: the tokenizer has no chat template, so prompts cannot be rendered "
            "in the model's format; use the model's own tokenizer directory (with "
            "chat_template.jinja or a chat_template in tokenizer_config.json)")
    renderer = Renderer(tokenizer, settings)
    tools = PROBE_TOOLS if with_tools else None
    try:
        text = renderer.text(PROBE_MESSAGES, tools)
    except Exception as err:
        raise IntegrityError(
            f"model.tokenizer: the chat template fails on a one-message probe conversation "
            f"({type(err).__name__}: {err}); check model.chatTemplateKwargs "
            f"{settings.chat_template_kwargs} and that the template belongs to this model") from None
    via_text = renderer.encode(text)
    try:
        via_ids = renderer.ids_direct(PROBE_MESSAGES, tools)
    except Exception:
        via_ids = via_text  # a template that only renders text: nothing to compare
    if via_ids != via_text:
        settings = RenderSettings(**{**settings.__dict__, "route": "ids"})
        text, ids = None, via_ids
    else:
        ids = via_text
        # Encoding with the Rust tokenizer directly, and a batch at a time, is taken only where
        # it gives the same ids as the tokenizer's own encode.
        samples = [text, text + " x\n" + text[:40], "", " \n\t  é 東京 🙂 <think>"]
        reference = [renderer.encode(t) for t in samples]
        fast = Renderer(tokenizer, RenderSettings(**{**settings.__dict__, "backend_encode": True}))
        if fast._backend is not None and [fast.encode(t) for t in samples] == reference:
            settings = fast.settings
            batched = Renderer(tokenizer, RenderSettings(**{**settings.__dict__, "batch_encode": True}))
            if batched._encode_batch is not None and batched.encode_many(samples) == reference:
                settings = batched.settings
    if settings.generation_prefix:
        check_generation_prefix(text, ids, settings.generation_prefix, list(settings.prefix_ids),
                                "probe prompt")
    if with_tools:
        decoded = tokenizer.decode(ids, skip_special_tokens=False)
        if missing_tool_names(decoded, PROBE_TOOLS):
            raise IntegrityError(
                f"model.tokenizer: a dataset has format glaive (tools), but the chat template drops "
                f"tools: a probe prompt rendered with a tool named {PROBE_TOOL_NAME!r} does not "
                "contain it. Use the target model's own tokenizer and chat template "
                "(model.tokenizer), one whose template declares `tools`")
    return settings
