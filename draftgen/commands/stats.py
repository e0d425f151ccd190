"""`draftgen stats DIR`: per dataset, in spec order, the counts read from the records themselves
(samples, prompt and completion tokens, truncation, rejects by reason), against the budget and the
state the manifests record (budget and % of it, done or rows used up, overshoot) and the
throughput of the run (completion tokens over the span of the records' write times); `--json`
gives the same fields. Besides draftgen's own records it reads SGLang `/generate` answers and
OpenAI chat-completions responses (`usage.completion_tokens` nested, also inside a batch
`response.body`), so older data is counted. A half-written directory is read as resume reads it:
a shard's torn last line (a write cut short) is named and not counted. A file whose records yield
no tokens is a loud warning and a non-zero exit, never a silent zero.

This module is the command (the table and the JSON); stats_read.py reads the directory and
stats_figures.py holds the figures."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from draftgen.contract.generator_cli import ExitCode
from draftgen.output.directory import left_out
from draftgen.output.figures import budget_text
from draftgen.output.manifest import NewerSchema
from draftgen.output.quality import FINISH_REASONS
from draftgen.output.stats_figures import DatasetStats, total
from draftgen.output.stats_read import collect
from draftgen.spec import Budget


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", type=Path, help="output directory (or a dataset directory or file)")
    parser.add_argument(
        "--json", action="store_true", help="print JSON (the same fields) instead of a table"
    )


def _pct(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def _budget_text(b: Budget | None) -> str:
    return "-" if b is None else budget_text(b) or "none"


def _overshoot(s: DatasetStats) -> str:
    led = s.ledger()
    if led is None:
        return "-"
    if led.overshoot_samples:
        return f"{led.overshoot_samples:,} samples"
    if led.budget.completion_tokens is None:
        return "-"
    return f"{led.overshoot_completion_tokens:,} ({led.overshoot_percent:.2f}%)"


def _table(stats: list[DatasetStats]) -> str:
    header = [
        "dataset",
        "state",
        "budget",
        "% budget",
        "samples",
        "prompt tok",
        "completion tok",
        "mean completion",
        "overshoot",
        "tok/s",
        "truncated",
        "rejects",
    ]
    shown = [*stats, total(stats)] if len(stats) > 1 else list(stats)
    rows = [
        [
            s.name,
            s.state() if s.name != "TOTAL" or s.done is not None else "-",
            _budget_text(s.budget),
            _pct(s.budget_fraction),
            f"{s.samples:,}",
            f"{s.prompt_tokens:,}",
            f"{s.completion_tokens:,}",
            f"{s.mean_completion:,.1f}",
            _overshoot(s),
            "-" if s.throughput is None else f"{s.throughput:,.1f}",
            _pct(s.truncation_rate),
            f"{s.rejects:,}",
        ]
        for s in shown
    ]
    if len(shown) > 1:
        rows[-1][1] = "done" if shown[-1].done else ("-" if shown[-1].done is None else "not done")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    left = {0, 1, 2}
    lines = [
        "  ".join(
            c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))
        )
        for r in [header, *rows]
    ]
    reasons = [
        f"  {s.name}: " + ", ".join(f"{k} {v:,}" for k, v in sorted(s.rejects_by_reason.items()))
        for s in stats
        if s.rejects_by_reason
    ]
    if reasons:
        lines += ["", "rejects by reason:", *reasons]
    ranks = [
        f"  {s.name}: "
        + ", ".join(
            f"rank {r} {c.samples:,} samples {c.completion_tokens:,} completion tok"
            for r, c in sorted(s.by_rank.items())
        )
        for s in stats
        if s.by_rank
    ]
    if ranks:
        lines += ["", "by data-parallel rank (the server's KV pools):", *ranks]
    chains = [f"  {s.name}: {s.chains.text()}" for s in stats if s.chains.started]
    if chains:
        lines += ["", "chains (history: regenerated):", *chains]
    lines += ["", "quality (docs/quality.md):", *(quality_line(s) for s in stats)]
    return "\n".join(lines)


def quality_line(s: DatasetStats) -> str:
    """One dataset's quality report, on one line of the table's footer."""
    q = s.quality
    checked = q.checked or None  # no reply facts recorded: the shares are unknown, not 0
    finish = ", ".join(f"{k} {q.finish_reasons[k]:,}" for k in FINISH_REASONS)
    p95 = q.p95_completion
    parts = [
        f"finish {finish}",
        f"truncated {_pct(q.truncation_rate)}",
        f"thinking {_pct(checked and q.thinking / checked)}",
        f"tool calls {_pct(checked and q.tool_calls / checked)}",
        f"completion mean {q.mean_completion:,.1f} p95 {'-' if p95 is None else f'{p95:,}'}",
        f"degenerate {q.degenerate:,}"
        + (f" ({q.degenerate_dropped:,} dropped)" if q.degenerate_dropped else ""),
    ]
    if q.chains_ended:
        ended = ", ".join(f"{k} {v:,}" for k, v in sorted(q.chains_ended.items()))
        parts.append(f"chains ended early: {ended}")
    return f"  {s.name}: " + "; ".join(parts)


def run(args: argparse.Namespace) -> int:
    if not args.dir.exists():
        print(f"{args.dir}: no such file or directory", file=sys.stderr)
        return 2
    try:
        stats, warnings = collect(args.dir)
        gone_dirs = left_out(args.dir)
    except NewerSchema as err:
        print(f"draftgen stats: {err}", file=sys.stderr)
        return ExitCode.INVALID
    notes = [
        f"{gone} is not counted: the job no longer has a dataset {gone.name!r} "
        f"({args.dir}/manifest.json)"
        for gone in gone_dirs
    ]
    notes += [
        f"{s.name}/{shard}: torn last line (a write cut short, e.g. a crash); not counted, "
        "and the next run drops it"
        for s in stats
        for shard in s.torn_shards
    ]
    if args.json:
        print(
            json.dumps(
                {
                    "datasets": [s.as_dict() for s in stats],
                    "total": total(stats).as_dict(),
                    "warnings": warnings,
                    "notes": notes,
                },
                indent=2,
            )
        )
    else:
        print(_table(stats) if stats else f"{args.dir}: no records found")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    for w in warnings:
        print(f"WARNING: {w}", file=sys.stderr)
    return 1 if warnings else 0
