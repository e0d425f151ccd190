"""The preflight: a job's inputs and tokenizer checked before any server is asked for, in seconds.

    report = preflight(job, base_dir)        # loads the tokenizer itself (no worker pool)
    report = check_inputs(job, base_dir, ctx)  # with a tokenizer `draftgen generate` opened

One function of (spec, paths) → `PreflightStatus`, used by `draftgen validate --inputs`,
`draftgen generate` (before it waits for a server) and the operator's preflight Job (`draftgen
preflight`, whose report becomes `status.preflight`). It opens every dataset's source, reads its
first rows through the real parsers and the model's chat template, and checks the tokenizer's
special tokens and the generation prefix (`pretokenize.open_tokenizer`'s start-up checks, then
`inputs.iter_samples`' strict checks of the first rows). A dataset fails when its source cannot be
opened, its first row is rejected (a wrong `format` shows there; `draftgen generate`, which
records bad rows as rejects and goes on, only warns), or no row it read became a sample; each
failure is one line naming the dataset and the fix.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np

from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.preflight_cli import DEFAULT_ROWS, TERMINATION_MESSAGE_LIMIT
from draftgen.errors import DraftgenError
from draftgen.generator.prompts.inputs import dataset_files, iter_samples
from draftgen.generator.prompts.integrity import IntegrityError
from draftgen.generator.prompts.pretokenize import TokenizerContext, TokenizerError, open_tokenizer
from draftgen.generator.prompts.replies import UnknownReplyFamily
from draftgen.generator.prompts.samples import Reject
from draftgen.generator.rows.sources import SourceError
from draftgen.spec import DatasetSpec, GenerationJob
from draftgen.spec.status import DatasetPreflight, PreflightStatus, PromptLengths

UNREADABLE_GROUP = "unreadable_row_group"
FORMAT_FIX = (
    "check that format: {fmt} matches the file (docs/input-formats.md: messages, sharegpt, "
    "glaive, prompt, pretokenized), or fix the row"
)


def _lengths(lengths: list[int]) -> PromptLengths | None:
    if not lengths:
        return None
    p50, p90, p99 = (int(v) for v in np.percentile(lengths, [50, 90, 99], method="higher"))
    return PromptLengths(p50=p50, p90=p90, p99=p99, max=max(lengths))


def _open_source(dataset: DatasetSpec, base_dir: Path, confine: Path | None) -> str:
    """'' when the source opens, else the problem with its fix."""
    where = f"spec.datasets[{dataset.name}].source"
    try:
        files = dataset_files(dataset, base_dir)
    except SourceError as err:
        return f"spec.datasets[{dataset.name}].{err.field}: {err}"
    if confine is not None:
        outside = [f for f in files if not f.resolve().is_relative_to(confine.resolve())]
        if outside:
            return (
                f"{where}: {outside[0]} is outside the inputs volume {confine}; name a file on "
                "that volume (no absolute paths or symlinks leading elsewhere)"
            )
    return ""


def check_dataset(
    job: GenerationJob,
    dataset: DatasetSpec,
    base_dir: Path,
    ctx: TokenizerContext,
    rows: int = DEFAULT_ROWS,
    confine: Path | None = None,
    strict: bool = True,
) -> tuple[DatasetPreflight, bool]:
    """One dataset's report, and whether its failure is the tokenizer's (exit code INTEGRITY).
    Not `strict` (`draftgen generate`, which records bad rows as rejects and goes on), a
    rejected first row is a warning."""
    report = DatasetPreflight(name=dataset.name)
    report.problem = _open_source(dataset, base_dir, confine)
    if report.problem:
        report.passed = False
        return report, False
    seen_rows: set[int] = set()
    first: Reject | None = None
    damaged = ""  # the first damaged Parquet row group's reject detail
    rejects: Counter[str] = Counter()
    lengths: list[int] = []
    integrity = False
    items = iter_samples(job, dataset, base_dir=base_dir, tokenizer_ctx=ctx)
    try:
        for item in itertools.takewhile(lambda _: len(seen_rows) < rows, items):
            if isinstance(item, Reject) and item.reason == UNREADABLE_GROUP:
                # Damage, not a wrong format: its rows neither count as the rows read nor
                # stand for the file (the job reads the other groups).
                damaged = damaged or item.detail
                rejects[item.reason] += 1
                continue
            if not seen_rows and isinstance(item, Reject):
                first = item
            seen_rows.add(item.source_index)
            if isinstance(item, Reject):
                rejects[item.reason] += 1
            else:
                lengths.append(len(item.input_ids))
    except IntegrityError as err:
        report.problem, integrity = f"spec.datasets[{dataset.name}]: {err}", True
    except SourceError as err:
        report.problem = f"spec.datasets[{dataset.name}].{err.field}: {err}"
    except UnknownReplyFamily as err:  # history: regenerated needs the replies parsed back
        report.problem = f"spec.datasets[{dataset.name}].history: {err}; fix: {err.fix}"
    finally:
        getattr(items, "close", lambda: None)()  # stop the render stream's read-ahead
    report.rows_read, report.samples = len(seen_rows), len(lengths)
    report.rejects = dict(sorted(rejects.items()))
    report.prompt_tokens = _lengths(lengths)
    if not report.problem and first is not None and (strict or not lengths):
        report.problem = (
            f"spec.datasets[{dataset.name}]: its first row (index {first.source_index}) is "
            f"rejected as {first.reason}: {first.detail}; {FORMAT_FIX.format(fmt=dataset.format)}"
        )
    elif not report.problem and not lengths:
        report.problem = (
            f"spec.datasets[{dataset.name}]: none of the first {report.rows_read} rows became a "
            f"sample; {FORMAT_FIX.format(fmt=dataset.format)}"
        )
    elif not report.problem and first is not None:
        report.warning = (
            f"spec.datasets[{dataset.name}]: its first row (index {first.source_index}) is "
            f"rejected as {first.reason}; {FORMAT_FIX.format(fmt=dataset.format)}"
        )
    if damaged and not report.problem:
        report.warning = "; ".join(
            w
            for w in (
                report.warning,
                f"spec.datasets[{dataset.name}]: {damaged}; its rows are recorded as "
                f"{UNREADABLE_GROUP} rejects and the other row groups are read",
            )
            if w
        )
    report.passed = not report.problem
    return report, integrity


def check_inputs(
    job: GenerationJob,
    base_dir: Path,
    ctx: TokenizerContext,
    *,
    rows: int = DEFAULT_ROWS,
    confine: Path | None = None,
    strict: bool = True,
    datasets: list[DatasetSpec] | None = None,
) -> tuple[PreflightStatus, ExitCode]:
    """Every dataset (or those given) read with a tokenizer that passed its start-up checks
    (`ctx`)."""
    tok = ctx.tokenizer
    report = PreflightStatus(
        passed=True,
        tokenizer=(
            f"{type(tok).__name__}: {len(tok)} ids; special tokens "
            f"{sorted(ctx.special_token_ids.values()) or 'none listed'}"
            + (
                f"; prompts end with {job.spec.model.generation_prefix!r}"
                if job.spec.model.generation_prefix
                else ""
            )
        ),
    )
    code = ExitCode.OK
    for dataset in job.spec.datasets if datasets is None else datasets:
        checked, integrity = check_dataset(job, dataset, base_dir, ctx, rows, confine, strict)
        report.datasets.append(checked)
        if not checked.passed:
            report.passed = False
            if code == ExitCode.OK or integrity:
                code = ExitCode.INTEGRITY if integrity else ExitCode.INVALID
    return report, code


def preflight(
    job: GenerationJob,
    base_dir: Path,
    *,
    rows: int = DEFAULT_ROWS,
    confine: Path | None = None,
) -> tuple[PreflightStatus, ExitCode]:
    """The whole preflight: the tokenizer (in this process), then every dataset. When the
    tokenizer fails, each source is still opened, so one run names every problem it can."""
    base_dir = Path(base_dir)
    try:
        with open_tokenizer(job, base_dir, workers=0) as ctx:
            return check_inputs(job, base_dir, ctx, rows=rows, confine=confine)
    except (TokenizerError, IntegrityError) as err:
        report = PreflightStatus(passed=False, tokenizer_passed=False, tokenizer=str(err))
    for dataset in job.spec.datasets:
        problem = _open_source(dataset, base_dir, confine)
        report.datasets.append(
            DatasetPreflight(name=dataset.name, passed=not problem, problem=problem)
        )
    return report, ExitCode.INTEGRITY


class InputsRefused(DraftgenError, RuntimeError):
    """`draftgen generate`'s preflight failed: `lines` are the problems, `exit_code` the code."""

    fix = "fix each dataset named, then run again"

    def report(self) -> list[str]:
        return [f"refusing to start: {line}" for line in self.lines]

    def __init__(self, lines: list[str], exit_code: ExitCode) -> None:
        super().__init__("; ".join(lines))
        self.lines, self.exit_code = lines, exit_code


def problems(report: PreflightStatus) -> list[str]:
    """Each failure as the one line to print."""
    out = [] if report.tokenizer_passed else [report.tokenizer]
    return out + [d.problem for d in report.datasets if d.problem]


def summary_lines(report: PreflightStatus) -> list[str]:
    """The report for a person: the tokenizer, then a line per dataset."""
    lines = [f"tokenizer: {report.tokenizer}" if report.tokenizer_passed else "tokenizer: FAILED"]
    for d in report.datasets:
        if not d.passed:
            lines.append(f"{d.name}: FAILED")
            continue
        rejected = ", ".join(f"{k} {v}" for k, v in d.rejects.items()) or "none"
        p = d.prompt_tokens
        lengths = f"prompt tokens p50 {p.p50} p90 {p.p90} p99 {p.p99} max {p.max}" if p else ""
        lines.append(
            f"{d.name}: {d.rows_read} rows read, {d.samples} samples, rejects: {rejected}; "
            + lengths
        )
    return lines


def termination_message(report: PreflightStatus, limit: int = TERMINATION_MESSAGE_LIMIT) -> str:
    """The report as compact JSON within `limit` bytes (the kubelet keeps 4096): long problem
    texts are cut first, then passing datasets' details dropped, so the failures always fit."""

    def dump(r: PreflightStatus) -> str:
        return json.dumps(
            r.model_dump(by_alias=True, mode="json", exclude_defaults=True), separators=(",", ":")
        )

    text = dump(report)
    if len(text.encode()) <= limit:
        return text
    short = report.model_copy(deep=True)
    short.tokenizer = short.tokenizer[:600]
    for d in short.datasets:
        d.problem = d.problem[:400]
    text = dump(short)
    if len(text.encode()) <= limit:
        return text
    short.datasets = [d for d in short.datasets if not d.passed]
    for d in short.datasets:
        d.rejects, d.prompt_tokens = {}, None
    text = dump(short)
    while len(text.encode()) > limit and short.datasets:
        short.datasets.pop()
        text = dump(short)
    return text[:limit]
