"""The input side's entry point: a dataset spec → ready-to-send samples and rejects, streaming.

    with open_tokenizer(job, base_dir) as ctx:              # integrity checks, worker pool
        for item in iter_samples(job, ds, base_dir=base_dir, tokenizer_ctx=ctx,
                                 skip_ids=done, max_prompt_tokens=server_max_input):
            ...  # Sample → request it; Reject → rejects.jsonl

Items come lazily in selection order. Samples whose id is in `skip_ids` (done in an earlier run)
are dropped before they are rendered. Rejects are deterministic, so a resumed run emits the same
ones again (same `source_index`, `id` and `reason`); the writer de-duplicates them.
`iter_samples` may raise `IntegrityError` on a dataset's first rows (a template that drops this
dataset's tools): treat it as a refusal to start. It is a plain (blocking) iterator: from asyncio,
pull it in a thread (`await asyncio.to_thread(next, it, None)`); the worker pool renders ahead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Container, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from draftgen.generator.prompts.chains import (
    ChainResume,
    ChainState,
    ChainSteps,
    chain_row,
    prompt_for,
    replay,
)
from draftgen.generator.prompts.integrity import (
    STRICT_TOOL_SAMPLES,
    IntegrityError,
    tools_dropped_error,
)
from draftgen.generator.prompts.pretokenize import (
    Rendered,
    RenderJob,
    TokenizerContext,
    open_tokenizer,
)
from draftgen.generator.prompts.samples import TOOL_FALLBACK, Reject, Sample
from draftgen.generator.rows.formats import RowError, parse_conversation, parse_pretokenized
from draftgen.generator.rows.hf import source_files
from draftgen.generator.rows.identity import (
    explicit_id,
    has_question,
    repeat_key,
    row_key,
    sample_id,
    select_turns,
)
from draftgen.generator.rows.selection import select_rows
from draftgen.generator.rows.sources import SourceError
from draftgen.spec import DatasetSpec, GenerationJob

__all__ = [
    "IntegrityError",
    "SourceError",
    "dataset_files",
    "iter_samples",
    "open_tokenizer",
    "sample_source",
]


@dataclass(frozen=True, slots=True)
class _Pending:
    id: str
    source_index: int
    turn: int
    prompt_messages: int
    num_tools: int
    normalized: tuple[str, ...] = ()
    chain: ChainState | None = None


def dataset_files(dataset: DatasetSpec, base_dir: Path) -> list[Path]:
    """The files a dataset reads (its `source`, and `split` among a Hugging Face dataset's);
    raises `SourceError` when there are none."""
    return source_files(dataset.source, dataset.split, base_dir)


def _key_hash(key: str) -> int:
    # 8 bytes per row for duplicate detection, instead of the key strings themselves.
    return int.from_bytes(
        hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big"
    )


def _unreadable_id(name: str, digest: str | None, seen: dict[str, int]) -> str | None:
    """An unreadable line's reject is keyed by its content (and which copy it is), not by its
    row number: a row inserted above it must not make it a new reject on resume."""
    if digest is None:
        return None  # a damaged Parquet row group: its rows have no content to key by
    seen[digest] = copy = seen.get(digest, 0) + 1
    return f"{name}/unreadable-{digest}" + (f"/{copy}" if copy > 1 else "")


def _plan(
    dataset: DatasetSpec,
    base_dir: Path,
    ctx: TokenizerContext,
    skip_ids: Container[str],
    max_prompt_tokens: int | None,
    chains: ChainResume | None = None,
) -> Iterator[Any]:
    """Rows → finished items (rejects, pretokenized samples) and `RenderJob`s, in order."""
    name = dataset.name
    steps: ChainSteps | None = None
    seen: set[int] = set()  # 8-byte hashes of the keys taken so far
    repeats: dict[int, int] = {}  # copies seen of rows repeated verbatim
    bad: dict[str, int] = {}  # copies seen of each unreadable line
    for row in select_rows(dataset_files(dataset, base_dir), dataset.selection):
        if row.error is not None:
            yield Reject(name, row.index, _unreadable_id(name, row.digest, bad), *row.error)
            continue
        data = row.data
        assert data is not None
        if dataset.columns:  # the source's own column names → the fields the format reads
            data = {k: v for k, v in data.items() if k not in dataset.columns.values()} | {
                field: data[col] for field, col in dataset.columns.items() if col in data
            }
        key = row_key(data)
        h = _key_hash(key)
        if h in seen:
            if explicit_id(data) is not None:
                yield Reject(
                    name,
                    row.index,
                    None,
                    "duplicate_id",
                    f"id {key!r} was already taken by an earlier row of this dataset",
                )
                continue
            repeats[h] = repeats.get(h, 1) + 1
            key = repeat_key(key, repeats[h])
        seen.add(h)
        if dataset.format == "pretokenized":
            sid = sample_id(name, key, 0)
            if sid in skip_ids:
                continue
            try:
                ids = parse_pretokenized(data, ctx.vocab_size)
            except RowError as err:
                yield Reject(name, row.index, sid, err.reason, err.detail)
                continue
            if max_prompt_tokens is not None and len(ids) > max_prompt_tokens:
                yield _too_long(name, row.index, sid, len(ids), max_prompt_tokens)
            else:
                yield Sample(sid, name, row.index, 0, ids, {"pretokenized": True})
            continue
        try:
            conv = parse_conversation(
                dataset.format, data, tool_result_name=dataset.tool_result_name
            )
        except RowError as err:
            yield Reject(name, row.index, None, err.reason, err.detail)
            continue
        if dataset.history == "regenerated":
            if steps is None:
                steps = ChainSteps(ctx)
            job = _chain_start(name, key, row.index, conv, steps, chains or ChainResume())
            if job is not None:
                yield job
            continue
        for turn, prompt in select_turns(conv.messages, dataset.turns):
            sid = sample_id(name, key, turn)
            if sid in skip_ids:
                continue
            if not has_question(prompt):
                yield Reject(
                    name,
                    row.index,
                    sid,
                    "empty_conversation",
                    f"assistant turn {turn} has only system messages before it",
                )
                continue
            yield RenderJob(
                prompt,
                conv.tools,
                _Pending(sid, row.index, turn, len(prompt), len(conv.tools or ()), conv.normalized),
            )


def _chain_start(
    name: str, key: str, index: int, conv: Any, steps: ChainSteps, chains: ChainResume
) -> Any:
    """The render job of a chain's next turn: its first, or (resumed) the one after the turns
    already written, prompted by their replies as rebuilt from their output ids. None: nothing
    left to do (ended, complete, or written turns that no longer replay as a chain)."""
    row = chain_row(f"{name}/{key}", conv.messages, conv.tools, conv.normalized)
    if row.id in chains.ended or not row.turns:
        return None
    written = chains.open.get(row.id, {})
    state = replay(row, written, steps.reply) if written else ChainState(row)
    if state is None or state.turn >= row.turns:
        return None
    messages = prompt_for(state)
    if not has_question(messages):
        return Reject(
            name,
            index,
            sample_id(name, key, state.turn),
            "empty_conversation",
            f"assistant turn {state.turn} has only system messages before it",
        )
    return RenderJob(
        messages,
        conv.tools,
        _Pending(
            sample_id(name, key, state.turn),
            index,
            state.turn,
            len(messages),
            len(conv.tools or ()),
            conv.normalized,
            state,
        ),
    )


def _too_long(name: str, index: int, sid: str, n: int, limit: int) -> Reject:
    return Reject(
        name,
        index,
        sid,
        "prompt_too_long",
        f"{n} prompt tokens; the server accepts at most {limit}",
    )


def iter_samples(
    job: GenerationJob,
    dataset: DatasetSpec,
    *,
    base_dir: Path,
    tokenizer_ctx: TokenizerContext,
    skip_ids: Container[str] = (),
    max_prompt_tokens: int | None = None,
    chains: ChainResume | None = None,
) -> Iterator[Sample | Reject]:
    """The dataset's samples and rejects, lazily, in selection order (see the module docstring).

    `max_prompt_tokens` is the longest prompt the server accepts; longer prompts become
    `prompt_too_long` rejects. SGLang refuses a prompt of `max_req_input_len` tokens or more
    (`/get_server_info`), so pass `max_req_input_len - 1`. Raises `SourceError` when the source
    cannot be read at all.
    """
    name = dataset.name
    prefix = job.spec.model.generation_prefix
    rendered_count = 0
    tool_count = 0
    units = _plan(dataset, Path(base_dir), tokenizer_ctx, skip_ids, max_prompt_tokens, chains)
    for unit, rendered in tokenizer_ctx.render_stream(units):
        if not isinstance(unit, RenderJob):
            yield unit
            continue
        p: _Pending = unit.meta
        assert isinstance(rendered, Rendered)
        if rendered.error is not None or rendered.ids is None:
            yield Reject(name, p.source_index, p.id, "template_error", rendered.error or "no ids")
            continue
        if not rendered.ids:
            yield Reject(
                name, p.source_index, p.id, "empty_prompt", "the chat template rendered nothing"
            )
            continue
        strict_prefix = rendered_count < STRICT_TOOL_SAMPLES
        rendered_count += 1
        if not rendered.prefix_ok:
            if strict_prefix:
                raise IntegrityError(
                    f"model.generationPrefix: datasets[{name}] row {p.source_index}: the rendered "
                    f"prompt does not end with {prefix!r}; set model.chatTemplateKwargs so the "
                    "template adds it for these conversations, or correct model.generationPrefix"
                )
            yield Reject(
                name,
                p.source_index,
                p.id,
                "missing_generation_prefix",
                f"the rendered prompt does not end with {prefix!r}",
            )
            continue
        if p.num_tools:
            strict_tools = tool_count < STRICT_TOOL_SAMPLES
            tool_count += 1
            if rendered.missing_tools:
                if strict_tools:
                    raise tools_dropped_error(name, p.source_index, rendered.missing_tools)
                yield Reject(
                    name,
                    p.source_index,
                    p.id,
                    "tools_missing",
                    "the rendered prompt lacks the tools " + ", ".join(rendered.missing_tools),
                )
                continue
        if rendered.tool_fallback is not None and dataset.on_tool_fallback == "reject":
            yield Reject(name, p.source_index, p.id, TOOL_FALLBACK, rendered.tool_fallback)
            continue
        if max_prompt_tokens is not None and len(rendered.ids) > max_prompt_tokens:
            yield _too_long(name, p.source_index, p.id, len(rendered.ids), max_prompt_tokens)
            continue
        info: dict[str, Any] = {"num_tools": p.num_tools, "prompt_messages": p.prompt_messages}
        if p.normalized:
            info["normalized"] = list(p.normalized)
        if rendered.tool_fallback is not None:
            info[TOOL_FALLBACK] = rendered.tool_fallback
        yield Sample(p.id, name, p.source_index, p.turn, rendered.ids, info, chain=p.chain)


class _Source:
    """`iter_samples` bound to one job and tokenizer: what the Runner reads each dataset from
    (`source(dataset, skip_ids, max_prompt_tokens[, chains])`, `run.SampleSource`), and the
    `ChainSteps` its chains continue with (`chain_steps()`)."""

    def __init__(self, job: GenerationJob, base_dir: Path, ctx: TokenizerContext) -> None:
        self.job, self.base_dir, self.ctx = job, base_dir, ctx

    def __call__(
        self,
        dataset: DatasetSpec,
        skip_ids: Container[str],
        max_prompt_tokens: int | None,
        chains: ChainResume | None = None,
    ) -> Iterator[Sample | Reject]:
        return iter_samples(
            self.job,
            dataset,
            base_dir=self.base_dir,
            tokenizer_ctx=self.ctx,
            skip_ids=skip_ids,
            max_prompt_tokens=max_prompt_tokens,
            chains=chains,
        )

    def chain_steps(self) -> ChainSteps:
        fallback = {d.name: d.on_tool_fallback for d in self.job.spec.datasets}
        return ChainSteps(self.ctx, fallback)


def sample_source(job: GenerationJob, base_dir: Path, tokenizer_ctx: TokenizerContext) -> _Source:
    """`iter_samples` bound to one job and tokenizer (`_Source`)."""
    return _Source(job, base_dir, tokenizer_ctx)
