"""Reading an output directory for `draftgen stats`: per dataset, in spec order, the counts of
its records (draftgen's own, SGLang `/generate` answers, OpenAI chat-completions responses with
`usage` nested, also inside a batch `response.body`), its rejects and what its manifests say. A
shard's torn last line (a write cut short) is named and not counted, by the rule resume reads it
with (draftgen/output/lines.py); a file whose records yield no tokens is a loud warning, never a
silent zero."""

from __future__ import annotations

from collections import Counter
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
from draftgen.output.counts import DatasetCounts
from draftgen.output.directory import job_datasets
from draftgen.output.lines import Torn, read_lines
from draftgen.output.manifest import ManifestDamaged, read_manifest
from draftgen.output.quality import QualityCounts
from draftgen.output.record import BadRecord, Record, Reject
from draftgen.output.stats_figures import DatasetStats
from draftgen.spec import Budget


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


def _dp_rank(rec: dict[str, Any]) -> int | None:
    meta = rec.get("meta")
    rank = meta.get("dp_rank") if isinstance(meta, dict) else None
    return rank if type(rank) is int else None


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


def _count_quality(
    quality: QualityCounts, rec: dict[str, Any], shape: str, completion: int, truncated: bool
) -> None:
    """The quality report's counts of one record: draftgen's own through its typed `Record`
    (the generator's ledger counts the same way), another tool's by its finish reason only."""
    if shape == "draftgen":
        try:
            quality.add_record(Record.from_json(rec, strict=False))
            return
        except BadRecord:
            pass
    quality.add_outcome("length" if truncated else "stop", completion)


def _count_rejects(path: Path, done_ids: set[str], quality: QualityCounts) -> Counter:
    """Distinct rejects by reason, leaving out failed requests that a later run completed;
    aborted generations and dropped loops go to `quality` too."""
    seen: dict[tuple, str | None] = {}
    for line in read_lines(path):
        if line.value is None:
            continue
        rej = Reject.from_json(line.value)
        if rej.reason == "request_failed" and rej.id in done_ids:
            continue
        seen[(rej.id, rej.source_index, rej.reason)] = rej.finish_reason
    for (_, _, reason), finish in seen.items():
        quality.add_reject(reason, finish)
    return Counter(reason for _, _, reason in seen)


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


def _current(root: Path) -> set[str] | None:
    """The job's current datasets when `root` is a job output whose manifest names them."""
    return job_datasets(root) if root.is_dir() else None


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return read_manifest(path)
    except ManifestDamaged:
        return None


def _manifest(directory: Path, job: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    """The dataset's manifest, else its entry in the job manifest (None: neither)."""
    data = _read(dataset_manifest(directory))
    if data is not None:
        return data
    entry = (job or {}).get("datasets", {}).get(name) if isinstance(job, dict) else None
    return entry if isinstance(entry, dict) else None


def _job(root: Path) -> dict[str, Any] | None:
    data = _read(job_manifest(root))
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
    records = tokens = unknown = repeated = 0
    torn: list[Torn] = []
    # Only draftgen's shards are written whole line by whole line; another tool's file may end
    # without a newline.
    for line in read_lines(path, torn=torn, whole_lines=shard_index(path.name) is not None):
        rec = line.value
        if rec is None:
            st.unreadable += 1
            continue
        records += 1
        got = read_record(rec)
        if got is None:
            unknown += 1
            continue
        shape, prompt, completion, truncated = got
        if isinstance(rec.get("id"), str):
            if rec["id"] in done_ids:  # a copied line: one sample, counted once
                repeated += 1
                continue
            done_ids.add(rec["id"])
        st.shapes.add(shape)
        st.count(prompt, completion)
        rank = _dp_rank(rec) if shape == "draftgen" else None
        if rank is not None:  # a server with several data-parallel ranks: which one made it
            st.by_rank.setdefault(rank, DatasetCounts()).count(prompt, completion)
        st.truncated += truncated
        if shape == "draftgen":
            st.chains.count(rec)
        _count_quality(st.quality, rec, shape, completion, truncated)
        tokens += completion
        at = _created_at(rec)
        if at is not None:
            st.first_at = at if st.first_at is None else min(st.first_at, at)
            st.last_at = at if st.last_at is None else max(st.last_at, at)
    if repeated:
        warnings.append(f"{path}: {repeated} records repeat an earlier one's id: counted once")
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
    if torn:
        st.torn_shards.append(path.name)


def collect(root: Path) -> tuple[list[DatasetStats], list[str]]:
    """Statistics per dataset in spec order (the job manifest's), and loud warnings. In a job's
    output directory only the job's current datasets count (see `draftgen.output.directory.left_out`)."""
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
            st.rejects_by_reason = _count_rejects(rejects, done_ids, st.quality)
            st.rejects = sum(st.rejects_by_reason.values())
        out.append(st)
    return out, warnings
