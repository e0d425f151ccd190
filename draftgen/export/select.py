"""Which records an export carries, how often, and in which split; with the counts the dataset
card and the command's summary report. Format writers only see the resulting stream."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from draftgen.output.counts import DatasetCounts
from draftgen.output.quality import QualityCounts, is_degenerate
from draftgen.output.record import Record

from .chains import merge_chains
from .mix import MixRule, copies_by_weight, select_by_tokens
from .records import ExportError, ReadStats, dataset_dirs, iter_records
from .split import TRAIN, VALIDATION, split_of

# Upper edges of the length histogram buckets (tokens); the last bucket is open.
HISTOGRAM_EDGES = tuple(2**k for k in range(4, 21))


@dataclass(frozen=True, slots=True)
class ExportOptions:
    """What goes into an export."""

    include_truncated: bool = False
    """Keep samples that stopped at maxNewTokens (`finish_reason: length`); dropped by default
    because a drafter should not learn that answers end mid-sentence."""

    skip_degenerate: bool = False
    """Leave out replies caught in a loop (`meta.degenerate`, docs/quality.md)."""

    mix: dict[str, MixRule] = field(default_factory=dict)
    """Per-dataset weights or token caps; datasets not named are carried once."""

    validation_fraction: float = 0.0
    """Share of sample ids that go to the validation split (0 writes only `train`)."""

    split_seed: int = 0
    """Seed of the id hash behind the split and the mix."""

    merge_chains: bool = False
    """Chains whose turns continue one another token for token go out as one sample
    (`chains.py`; the id formats)."""


@dataclass(slots=True)
class SplitCounts:
    samples: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, record: Record) -> None:
        self.samples += 1
        self.prompt_tokens += len(record.input_ids)
        self.completion_tokens += len(record.output_ids)


@dataclass
class DatasetSummary(DatasetCounts):
    """What one dataset contributed, and what was left out and why. Its counts are of the
    records read from the shards (after removing duplicate ids)."""

    name: str
    finish_reasons: Counter = field(default_factory=Counter)
    """Of the records read."""
    truncated_dropped: int = 0
    degenerate_dropped: int = 0
    """Left out by `--skip-degenerate` (and not already as truncated)."""
    quality: QualityCounts = field(default_factory=QualityCounts)
    """The quality report of the records read (draftgen/output/quality.py)."""
    mixed_out: int = 0
    """Samples the mix left out (each counted once)."""
    duplicates: int = 0
    """Records whose id was already read (kept once)."""
    splits: dict[str, SplitCounts] = field(
        default_factory=lambda: {TRAIN: SplitCounts(), VALIDATION: SplitCounts()}
    )
    """Exported rows per split (repeated copies count each time)."""
    completion_histogram: Counter = field(default_factory=Counter)
    """Exported rows by completion length bucket (index into HISTOGRAM_EDGES)."""
    sampling: dict[str, Any] | None = None
    """Sampling parameters (`meta.sampling`) that every record of the dataset shares."""
    sampling_varying: set[str] = field(default_factory=set)
    """Sampling parameters that differ between records (e.g. the per-request `sampling_seed`)."""

    def observe_sampling(self, sampling: dict[str, Any]) -> None:
        if self.sampling is None:
            self.sampling = {k: v for k, v in sampling.items() if k not in self.sampling_varying}
            return
        for key in set(self.sampling) | set(sampling):
            if key in self.sampling and sampling.get(key, object()) == self.sampling[key]:
                continue
            self.sampling.pop(key, None)
            self.sampling_varying.add(key)

    @property
    def truncation_rate(self) -> float:
        return self.finish_reasons.get("length", 0) / self.samples if self.samples else 0.0

    @property
    def exported(self) -> int:
        return sum(s.samples for s in self.splits.values())


@dataclass(frozen=True, slots=True)
class TrainerHint:
    """What a trainer needs to take the export as it is, printed by `export` and in its card."""

    title: str
    """`SpecForge run config (YAML)`, `speculators prepare-data command`."""
    lang: str
    """The card's code block language: `yaml`, `sh`."""
    text: str


@dataclass(slots=True)
class ExportSummary:
    datasets: dict[str, DatasetSummary] = field(default_factory=dict)
    read: ReadStats = field(default_factory=ReadStats)
    longest_row: int = 0
    """Tokens of the longest exported row (prompt + completion): a trainer's max length."""
    trainer_hint: TrainerHint | None = None
    """The trainer configuration that fits the export, for the formats that have one."""

    def total(self, split: str) -> SplitCounts:
        out = SplitCounts()
        for ds in self.datasets.values():
            counts = ds.splits[split]
            out.samples += counts.samples
            out.prompt_tokens += counts.prompt_tokens
            out.completion_tokens += counts.completion_tokens
        return out

    def histogram(self) -> Counter:
        out: Counter = Counter()
        for ds in self.datasets.values():
            out.update(ds.completion_histogram)
        return out


def histogram_bucket(length: int) -> int:
    for index, edge in enumerate(HISTOGRAM_EDGES):
        if length < edge:
            return index
    return len(HISTOGRAM_EDGES)


def export_rows(
    root: Path, options: ExportOptions, summary: ExportSummary
) -> Iterator[tuple[str, Record]]:
    """(split, record) for every row the export writes, dataset by dataset in name order,
    records in shard order; `summary` fills in as the stream is consumed."""
    dirs = dataset_dirs(root)
    names = [d.name for d in dirs]
    unknown = sorted(set(options.mix) - set(names))
    if unknown:
        raise ExportError(
            f"--mix names {', '.join(unknown)}, which {root} does not have; its datasets are "
            f"{', '.join(names)}"
        )
    for directory in dirs:
        ds = summary.datasets.setdefault(directory.name, DatasetSummary(directory.name))
        rule = options.mix.get(directory.name)
        kept_by_tokens = None
        if rule is not None and rule.token_cap is not None:
            kept_by_tokens = select_by_tokens(
                [(r.id, len(r.output_ids)) for r in _eligible(directory, options, None, None)],
                rule.token_cap,
                options.split_seed,
            )
        eligible = _eligible(directory, options, ds, summary.read)
        for record in merge_chains(eligible) if options.merge_chains else eligible:
            if kept_by_tokens is not None:
                copies = 1 if record.id in kept_by_tokens else 0
            elif rule is not None and rule.weight is not None:
                copies = copies_by_weight(record.id, rule.weight, options.split_seed)
            else:
                copies = 1
            if copies == 0:
                ds.mixed_out += 1
                continue
            split = split_of(record.id, options.validation_fraction, options.split_seed)
            length = len(record.input_ids) + len(record.output_ids)
            summary.longest_row = max(summary.longest_row, length)
            for _ in range(copies):
                ds.splits[split].add(record)
                ds.completion_histogram[histogram_bucket(len(record.output_ids))] += 1
                yield split, record


def _eligible(
    directory: Path, options: ExportOptions, ds: DatasetSummary | None, read: ReadStats | None
) -> Iterator[Record]:
    """Records that may be exported: each id once, truncated ones only when asked for.
    Counts go to `ds` when given (the pass that writes), not on the token-cap pre-pass."""
    seen: set[str] = set()
    for record in iter_records(directory, read):
        if record.id in seen:
            if ds is not None:
                ds.duplicates += 1
            continue
        seen.add(record.id)
        truncated = record.truncated
        loop = options.skip_degenerate and is_degenerate(record)
        if ds is not None:
            ds.count(len(record.input_ids), len(record.output_ids))
            ds.finish_reasons[record.finish_reason] += 1
            ds.quality.add_record(record)
            sampling = None if record.meta is None else record.meta.sampling
            if sampling is not None:
                ds.observe_sampling(sampling)
            if truncated and not options.include_truncated:
                ds.truncated_dropped += 1
            elif loop:
                ds.degenerate_dropped += 1
        if (truncated and not options.include_truncated) or loop:
            continue
        yield record
