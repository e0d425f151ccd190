"""`draftgen stats DIR`: samples, tokens, mean lengths and truncation per dataset, read from the
records themselves. Besides draftgen's own records it reads SGLang `/generate` answers and
OpenAI chat-completions responses (`usage.completion_tokens` nested, also inside a batch
`response.body`), so older data is counted; a file whose records yield no tokens is a loud
warning and a non-zero exit, never a silent zero."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from draftgen.contract.layout import REJECTS_FILE, SHARD_PREFIX, job_manifest, rejects_file

from . import safe_json


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

    @property
    def mean_prompt(self) -> float:
        return self.prompt_tokens / self.samples if self.samples else 0.0

    @property
    def mean_completion(self) -> float:
        return self.completion_tokens / self.samples if self.samples else 0.0

    @property
    def truncation_rate(self) -> float:
        return self.truncated / self.samples if self.samples else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.name,
            "samples": self.samples,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "mean_prompt_tokens": round(self.mean_prompt, 2),
            "mean_completion_tokens": round(self.mean_completion, 2),
            "truncation_rate": round(self.truncation_rate, 6),
            "rejects": self.rejects,
            "unreadable_lines": self.unreadable,
            "shapes": sorted(self.shapes),
        }


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


def _count_rejects(path: Path, done_ids: set[str]) -> int:
    """Distinct rejects, leaving out failed requests that a later run completed."""
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
    return len(seen)


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


def collect(root: Path) -> tuple[list[DatasetStats], list[str]]:
    """Statistics per dataset, and loud warnings. In a job's output directory only the job's
    current datasets count (the job manifest's `datasets`; see `left_out`)."""
    warnings: list[str] = []
    out = []
    current = _current(root)
    for name, files in _dataset_files(root).items():
        if current is not None and name not in current and name != root.name:
            continue
        st = DatasetStats(name)
        done_ids: set[str] = set()
        for path in files:
            records = tokens = unknown = 0
            with open(path, "rb") as f:
                for raw in f:
                    if not raw.strip():
                        continue
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
                    f"{path}: {unknown} of {records} records have an unknown shape "
                    "and were not counted"
                )
        rejects = rejects_file(files[0].parent if files else root / name)
        if rejects.exists():
            st.rejects = _count_rejects(rejects, done_ids)
        out.append(st)
    return out, warnings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", type=Path, help="output directory (or a dataset directory or file)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _table(stats: list[DatasetStats]) -> str:
    header = [
        "dataset",
        "samples",
        "prompt tok",
        "completion tok",
        "mean prompt",
        "mean completion",
        "truncated",
        "rejects",
    ]
    rows = [
        [
            s.name,
            f"{s.samples:,}",
            f"{s.prompt_tokens:,}",
            f"{s.completion_tokens:,}",
            f"{s.mean_prompt:,.1f}",
            f"{s.mean_completion:,.1f}",
            f"{100 * s.truncation_rate:.1f}%",
            f"{s.rejects:,}",
        ]
        for s in stats
    ]
    if len(stats) > 1:
        total = DatasetStats(
            "TOTAL",
            samples=sum(s.samples for s in stats),
            prompt_tokens=sum(s.prompt_tokens for s in stats),
            completion_tokens=sum(s.completion_tokens for s in stats),
            truncated=sum(s.truncated for s in stats),
            rejects=sum(s.rejects for s in stats),
        )
        rows.append(
            [
                total.name,
                f"{total.samples:,}",
                f"{total.prompt_tokens:,}",
                f"{total.completion_tokens:,}",
                f"{total.mean_prompt:,.1f}",
                f"{total.mean_completion:,.1f}",
                f"{100 * total.truncation_rate:.1f}%",
                f"{total.rejects:,}",
            ]
        )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        for r in [header, *rows]
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if not args.dir.exists():
        print(f"{args.dir}: no such file or directory", file=sys.stderr)
        return 2
    stats, warnings = collect(args.dir)
    for name in left_out(args.dir):
        print(
            f"note: {args.dir / name} is not counted: the job no longer has a dataset {name!r} "
            f"({args.dir}/manifest.json)",
            file=sys.stderr,
        )
    if args.json:
        print(
            json.dumps({"datasets": [s.as_dict() for s in stats], "warnings": warnings}, indent=2)
        )
    else:
        print(_table(stats) if stats else f"{args.dir}: no records found")
    for w in warnings:
        print(f"WARNING: {w}", file=sys.stderr)
    return 1 if warnings else 0
