"""`draftgen stats DIR`: per dataset, in spec order, the counts read from the records themselves
(samples, prompt and completion tokens, truncation, rejects by reason), against the budget and the
state the manifests record (budget and % of it, done or rows used up, overshoot) and the
throughput of the run (completion tokens over the span of the records' write times); `--json`
gives the same fields. Besides draftgen's own records it reads SGLang `/generate` answers and
OpenAI chat-completions responses (`usage.completion_tokens` nested, also inside a batch
`response.body`), so older data is counted. A half-written directory is read as resume reads it:
a shard's torn last line (a write cut short) is named and not counted. A file whose records yield
no tokens is a loud warning and a non-zero exit, never a silent zero."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from draftgen.contract.layout import (
    REJECTS_FILE,
    SHARD_PREFIX,
    dataset_manifest,
    job_manifest,
    rejects_file,
    shard_index,
)
from draftgen.spec import Budget

from . import safe_json
from .budget import Ledger


@dataclass
class DatasetStats:
    name: str
    samples: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    truncated: int = 0
    rejects: int = 0
    unreadable: int = 0
    shapes: set[str] = field(default_factory=set)
    rejects_by_reason: Counter = field(default_factory=Counter)
    budget: Budget | None = None
    """From the dataset's manifest (None: no manifest, e.g. older data)."""
    done: bool | None = None
    exhausted: bool | None = None
    torn_shards: list[str] = field(default_factory=list)
    """Shards whose last line is a write cut short (not counted, as resume drops it)."""
    first_at: float | None = None
    last_at: float | None = None
    """Write times of the first and last record (`meta.created_at`)."""

    @property
    def mean_prompt(self) -> float:
        return self.prompt_tokens / self.samples if self.samples else 0.0

    @property
    def mean_completion(self) -> float:
        return self.completion_tokens / self.samples if self.samples else 0.0

    @property
    def truncation_rate(self) -> float:
        return self.truncated / self.samples if self.samples else 0.0

    def ledger(self) -> Ledger | None:
        """The counts as the generator's ledger (its budget rules), when the budget is known."""
        if self.budget is None:
            return None
        led = Ledger(self.name, self.budget)
        led.samples, led.prompt_tokens = self.samples, self.prompt_tokens
        led.completion_tokens = self.completion_tokens
        led.finish_reasons["length"] = self.truncated
        led.finish_reasons["stop"] = self.samples - self.truncated
        led.exhausted = bool(self.exhausted)
        return led

    @property
    def budget_fraction(self) -> float | None:
        """The nearest limit's share used, uncapped (1.03: 3% beyond it); None without one."""
        b = self.budget
        if b is None:
            return None
        parts = []
        if b.completion_tokens:
            parts.append(self.completion_tokens / b.completion_tokens)
        if b.total_tokens:
            parts.append((self.prompt_tokens + self.completion_tokens) / b.total_tokens)
        if b.max_samples:
            parts.append(self.samples / b.max_samples)
        return max(parts) if parts else None

    @property
    def throughput(self) -> float | None:
        """Completion tokens/s from the first record to the last (stops in between count)."""
        if self.first_at is None or self.last_at is None or self.last_at <= self.first_at:
            return None
        return self.completion_tokens / (self.last_at - self.first_at)

    def state(self) -> str:
        led = self.ledger()
        if led is not None and led.budget_met:
            return f"done ({led.limit_met()})"
        if self.exhausted:
            return "done (rows used up)"
        if self.done:
            return "done (budget full)"
        return "-" if self.done is None else "not done"

    def as_dict(self) -> dict[str, Any]:
        led = self.ledger()
        frac = self.budget_fraction
        return {
            "dataset": self.name,
            "state": self.state(),
            "done": self.done,
            "exhausted": self.exhausted,
            "budget": None if self.budget is None else budget_dict(self.budget),
            "budget_percent": None if frac is None else round(100 * frac, 3),
            "limit_met": None if led is None else led.limit_met(),
            "samples": self.samples,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "mean_prompt_tokens": round(self.mean_prompt, 2),
            "mean_completion_tokens": round(self.mean_completion, 2),
            "overshoot_completion_tokens": None if led is None else led.overshoot_completion_tokens,
            "overshoot_percent": None if led is None else round(led.overshoot_percent, 4),
            "overshoot_samples": None if led is None else led.overshoot_samples,
            "throughput_tokens_per_second": _round(self.throughput, 3),
            "truncated": self.truncated,
            "truncation_rate": round(self.truncation_rate, 6),
            "rejects": self.rejects,
            "rejects_by_reason": dict(sorted(self.rejects_by_reason.items())),
            "unreadable_lines": self.unreadable,
            "torn_shards": list(self.torn_shards),
            "shapes": sorted(self.shapes),
        }


def budget_dict(budget: Budget) -> dict[str, int]:
    return budget.model_dump(by_alias=True, exclude_none=True)


def _round(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _find_usage(rec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(usage, the response holding it) of an OpenAI-shaped record, wherever it is nested."""
    candidates = [rec]
    for key in ("response", "output", "result"):
        inner = rec.get(key)
        if isinstance(inner, dict):
            candidates.append(inner)
            if isinstance(inner.get("body"), dict):
                candidates.append(inner["body"])
    for c in candidates:
        if isinstance(c.get("usage"), dict):
            return c["usage"], c
    return None


def read_record(rec: dict[str, Any]) -> tuple[str, int, int, bool] | None:
    """(shape, prompt tokens, completion tokens, truncated) of one record, or None if its shape
    is unknown."""
    own = isinstance(rec.get("output_ids"), list) or _int(rec.get("completion_tokens")) is not None
    if own and "meta_info" not in rec:  # draftgen's own record
        completion = _int(rec.get("completion_tokens"))
        if completion is None:
            completion = len(rec.get("output_ids") or [])
        prompt = _int(rec.get("prompt_tokens"))
        if prompt is None:
            prompt = len(rec.get("input_ids") or [])
        return "draftgen", prompt, completion, rec.get("finish_reason") == "length"
    meta = rec.get("meta_info")
    if isinstance(meta, dict):  # a raw SGLang /generate answer
        completion = _int(meta.get("completion_tokens"))
        if completion is None:
            completion = len(rec.get("output_ids") or [])
        finish = meta.get("finish_reason")
        kind = finish.get("type") if isinstance(finish, dict) else finish
        return "sglang", _int(meta.get("prompt_tokens")) or 0, completion, kind == "length"
    found = _find_usage(rec)
    if found is not None:  # OpenAI chat-completions response
        usage, response = found
        choices = response.get("choices") or []
        truncated = any(isinstance(c, dict) and c.get("finish_reason") == "length" for c in choices)
        return (
            "openai",
            _int(usage.get("prompt_tokens")) or 0,
            _int(usage.get("completion_tokens")) or 0,
            truncated,
        )
    return None


def _count_rejects(path: Path, done_ids: set[str]) -> Counter:
    """Distinct rejects by reason, leaving out failed requests that a later run completed."""
    seen: set[tuple] = set()
    with open(path, "rb") as f:
        for raw in f:
            try:
                rej = json.loads(raw)
            except (ValueError, RecursionError):  # incl. huge numbers, deep nesting
                continue
            if not isinstance(rej, dict):
                continue
            if rej.get("reason") == "request_failed" and rej.get("id") in done_ids:
                continue
            seen.add((rej.get("id"), rej.get("source_index"), rej.get("reason")))
    return Counter(str(reason) for _, _, reason in seen)


def _dataset_files(root: Path) -> dict[str, list[Path]]:
    """Dataset name → record files. `root` may be a job output, one dataset directory, or a file."""
    if root.is_file():
        return {root.stem: [root]}
    groups: dict[str, list[Path]] = {}
    own = sorted(p for p in root.glob("*.jsonl") if p.name != REJECTS_FILE)
    if own:
        if rejects_file(root).exists() or any(p.name.startswith(SHARD_PREFIX) for p in own):
            groups[root.name] = own
        else:
            for p in own:
                groups[p.stem] = [p]
    for sub in sorted(p for p in root.iterdir() if p.is_dir()):
        files = sorted(p for p in sub.glob("*.jsonl") if p.name != REJECTS_FILE)
        if files or rejects_file(sub).exists():
            groups[sub.name] = files
    return groups


def job_datasets(root: Path) -> set[str] | None:
    """The datasets of the job as it last ran (the job manifest's `datasets`), or None when the
    manifest is missing or unreadable. A directory of a dataset since removed from the job is
    not part of the job's data (neither counted here nor exported)."""
    try:
        data = safe_json.loads(job_manifest(Path(root)).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, safe_json.JsonLimitError):
        return None
    names = data.get("datasets") if isinstance(data, dict) else None
    return set(names) if isinstance(names, dict) else None


def _current(root: Path) -> set[str] | None:
    """The job's current datasets when `root` is a job output whose manifest names them."""
    return job_datasets(root) if root.is_dir() else None


def left_out(root: Path) -> list[str]:
    """Dataset directories under `root` that the job no longer has (not counted)."""
    current = _current(root)
    if current is None:
        return []
    return [name for name in _dataset_files(root) if name not in current and name != root.name]


def _lines(path: Path) -> tuple[list[bytes], bool]:
    """The file's non-empty lines and whether its last line is torn: in a shard, a last line
    without its newline is a write cut short (resume drops it). A whole line that does not
    parse stays an unreadable line."""
    with open(path, "rb") as f:
        lines = [raw for raw in f if raw.strip()]
    if not lines or shard_index(path.name) is None or lines[-1].endswith(b"\n"):
        return lines, False
    return lines[:-1], True


def _manifest(directory: Path, job: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    """The dataset's manifest, else its entry in the job manifest (None: neither)."""
    try:
        data = safe_json.loads(dataset_manifest(directory).read_text(encoding="utf-8"))
        if isinstance(data, dict):
            return data
    except (OSError, UnicodeDecodeError, safe_json.JsonLimitError):
        pass
    entry = (job or {}).get("datasets", {}).get(name) if isinstance(job, dict) else None
    return entry if isinstance(entry, dict) else None


def _job(root: Path) -> dict[str, Any] | None:
    try:
        data = safe_json.loads(job_manifest(root).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, safe_json.JsonLimitError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("datasets"), dict) else None


def _apply_manifest(st: DatasetStats, manifest: dict[str, Any] | None) -> None:
    if manifest is None:
        return
    raw = manifest.get("budget")
    if isinstance(raw, dict):
        try:
            st.budget = Budget.model_validate(raw)
        except ValidationError:
            st.budget = None
    if isinstance(manifest.get("done"), bool):
        st.done = manifest["done"]
    if isinstance(manifest.get("exhausted"), bool):
        st.exhausted = manifest["exhausted"]


def _created_at(rec: dict[str, Any]) -> float | None:
    meta = rec.get("meta")
    at = meta.get("created_at") if isinstance(meta, dict) else None
    return float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None


def _read_file(st: DatasetStats, path: Path, done_ids: set[str], warnings: list[str]) -> None:
    records = tokens = unknown = 0
    lines, torn = _lines(path)
    if torn:
        st.torn_shards.append(path.name)
    for raw in lines:
        try:
            rec = json.loads(raw)
        except (ValueError, RecursionError):  # incl. huge numbers, deep nesting
            st.unreadable += 1
            continue
        if not isinstance(rec, dict):
            st.unreadable += 1
            continue
        records += 1
        got = read_record(rec)
        if got is None:
            unknown += 1
            continue
        shape, prompt, completion, truncated = got
        if isinstance(rec.get("id"), str):
            done_ids.add(rec["id"])
        st.shapes.add(shape)
        st.samples += 1
        st.prompt_tokens += prompt
        st.completion_tokens += completion
        st.truncated += truncated
        tokens += completion
        at = _created_at(rec)
        if at is not None:
            st.first_at = at if st.first_at is None else min(st.first_at, at)
            st.last_at = at if st.last_at is None else max(st.last_at, at)
    if records and tokens == 0:
        warnings.append(
            f"{path}: {records} records but 0 completion tokens"
            + (
                f" ({unknown} of an unknown shape: no output_ids, completion_tokens, "
                "meta_info or usage)"
                if unknown
                else ""
            )
            + "; these counts are NOT real: check the record format"
        )
    elif unknown:
        warnings.append(
            f"{path}: {unknown} of {records} records have an unknown shape and were not counted"
        )


def collect(root: Path) -> tuple[list[DatasetStats], list[str]]:
    """Statistics per dataset in spec order (the job manifest's), and loud warnings. In a job's
    output directory only the job's current datasets count (see `left_out`)."""
    warnings: list[str] = []
    out = []
    current = _current(root)
    job = _job(root) if root.is_dir() else None
    groups = _dataset_files(root)
    order = list(job["datasets"]) if job else []
    names = [n for n in order if n in groups] + [n for n in groups if n not in order]
    for name in names:
        files = groups[name]
        if current is not None and name not in current and name != root.name:
            continue
        st = DatasetStats(name)
        directory = files[0].parent if files else root / name
        if root.is_dir():
            _apply_manifest(st, _manifest(directory, job, name))
        done_ids: set[str] = set()
        for path in files:
            _read_file(st, path, done_ids, warnings)
        rejects = rejects_file(directory)
        if rejects.exists():
            st.rejects_by_reason = _count_rejects(rejects, done_ids)
            st.rejects = sum(st.rejects_by_reason.values())
        out.append(st)
    return out, warnings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", type=Path, help="output directory (or a dataset directory or file)")
    parser.add_argument(
        "--json", action="store_true", help="print JSON (the same fields) instead of a table"
    )


def total(stats: list[DatasetStats]) -> DatasetStats:
    """The job's sum; its budget is the sum of the completion-token budgets when every dataset
    has one."""
    t = DatasetStats(
        "TOTAL",
        samples=sum(s.samples for s in stats),
        prompt_tokens=sum(s.prompt_tokens for s in stats),
        completion_tokens=sum(s.completion_tokens for s in stats),
        truncated=sum(s.truncated for s in stats),
        rejects=sum(s.rejects for s in stats),
        unreadable=sum(s.unreadable for s in stats),
    )
    for s in stats:
        t.rejects_by_reason.update(s.rejects_by_reason)
        t.torn_shards += [f"{s.name}/{n}" for n in s.torn_shards]
    budgets = [s.budget.completion_tokens if s.budget else None for s in stats]
    if stats and all(budgets):
        t.budget = Budget(completion_tokens=sum(b or 0 for b in budgets))
    if stats and all(s.done is not None for s in stats):
        t.done = all(s.done for s in stats)
    starts = [s.first_at for s in stats if s.first_at is not None]
    ends = [s.last_at for s in stats if s.last_at is not None]
    t.first_at = min(starts) if starts else None
    t.last_at = max(ends) if ends else None
    return t


def _pct(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def _budget_text(b: Budget | None) -> str:
    if b is None:
        return "-"
    parts = []
    if b.completion_tokens is not None:
        parts.append(f"{b.completion_tokens:,} tok")
    if b.total_tokens is not None:
        parts.append(f"{b.total_tokens:,} total")
    if b.max_samples is not None:
        parts.append(f"{b.max_samples:,} samples")
    return ", ".join(parts) or "none"


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
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if not args.dir.exists():
        print(f"{args.dir}: no such file or directory", file=sys.stderr)
        return 2
    stats, warnings = collect(args.dir)
    notes = [
        f"{args.dir / name} is not counted: the job no longer has a dataset {name!r} "
        f"({args.dir}/manifest.json)"
        for name in left_out(args.dir)
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
