"""What shapes a dataset's samples, recorded next to its records and checked on resume.

A resumed run that silently used another model, other chat-template kwargs or other sampling
would mix two kinds of samples in one dataset (prompts ending in different tokens, completions
cut at different lengths), and nothing downstream could tell them apart. Each dataset directory
therefore keeps `fingerprint.json`: the fields below as they were when its records were written,
split into *series* — runs of shards written under one fingerprint.

On resume a changed field is refused (`SpecChanged`, naming the field, the old and new values
and the two ways forward). With `--allow-spec-change` the run starts a new series instead: the
next records go to a new shard, and the series (its first shard, the fingerprint and the fields
that changed) is recorded in `fingerprint.json` and in the dataset's manifest. Records of earlier
series stay and are still counted and never generated again.

Budgets are not part of the fingerprint: raising or lowering one never mixes data.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from draftgen.contract.generator_cli import ExitCode, Flag
from draftgen.errors import RunError
from draftgen.output.writer import atomic_write_json
from draftgen.spec import DatasetSpec, GenerationJob

__all__ = ["FINGERPRINT_FILE", "SpecChanged", "check_fingerprint", "dataset_fingerprint"]

log = logging.getLogger("draftgen.generate")

FINGERPRINT_FILE = "fingerprint.json"
# How draftgen itself turns a row into the template's conversation. Raised whenever that changes
# what reaches the template, so an output written by an earlier draftgen is not silently resumed
# with prompts of another shape. 2: tool-call arguments as the row wrote them, tool results
# without a name (unless toolResultName), every reasoning key carried through.
PROMPT_RENDERING = 2
ALLOW_SPEC_CHANGE = Flag.ALLOW_SPEC_CHANGE.value


class SpecChanged(RunError):
    """A resumed run would mix samples of a changed job into a dataset."""

    exit_code = ExitCode.INTEGRITY
    fix = "write to a new --output, or pass --allow-spec-change to mix the two on purpose"


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def dataset_fingerprint(job: GenerationJob, dataset: DatasetSpec) -> dict[str, Any]:
    """Every field that shapes one of this dataset's samples, by its spec path."""
    model = job.spec.model
    sampling = job.spec.sampling_for(dataset).to_wire()
    prefix = f"spec.datasets[{dataset.name}]"
    fields: dict[str, Any] = {
        "spec.model.weights": model.weights,
        "spec.model.tokenizer": model.tokenizer,
        "spec.model.chatTemplateKwargs": model.chat_template_kwargs,
        "spec.model.specialTokens": list(model.special_tokens),
        "spec.model.generationPrefix": model.generation_prefix,
        f"{prefix}.source": dataset.source,
        f"{prefix}.format": dataset.format,
        f"{prefix}.selection": dataset.selection.to_wire(),
        f"{prefix}.turns": dataset.turns,
        "draftgen.promptRendering": PROMPT_RENDERING,
    }
    # Added after outputs existed: recorded only when set, so their fingerprints stay as they were.
    if dataset.tool_result_name != "none":
        fields[f"{prefix}.toolResultName"] = dataset.tool_result_name
    if dataset.history != "dataset":
        fields[f"{prefix}.history"] = dataset.history
    if dataset.split is not None:
        fields[f"{prefix}.split"] = dataset.split
    # The sampling the dataset really uses (the job's, with the dataset's overrides applied).
    for key in sorted(sampling):
        fields[f"{prefix}.sampling.{key}"] = sampling[key]
    return _plain(fields)


def _changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        log.warning("%s is unreadable; recording the current job's fingerprint", path)
        return None
    if not isinstance(data, dict) or not isinstance(data.get("series"), list) or not data["series"]:
        return None
    return data


def check_fingerprint(
    directory: Path,
    fingerprint: dict[str, Any],
    *,
    has_data: bool,
    next_shard: int,
    allow_change: bool,
) -> tuple[list[dict[str, Any]], bool]:
    """Compare the dataset's recorded fingerprint with the job's and record it.

    Returns the series (for the manifest) and whether a new series starts, i.e. the next record
    must open a new shard. Raises `SpecChanged` for a change that would mix data."""
    path = directory / FINGERPRINT_FILE
    stored = _read(path)
    entry = {"first_shard": next_shard, "fingerprint": fingerprint, "started_at": time.time()}
    if stored is None or not has_data:
        if has_data:
            log.info("%s: no fingerprint recorded yet; recording the current job's", directory)
        first: list[dict[str, Any]] = [{**entry, "first_shard": 0}]
        directory.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, {"series": first})
        return first, False
    series = [s for s in stored["series"] if isinstance(s, dict)]
    last = series[-1].get("fingerprint") if series else None
    current: dict[str, Any] = last if isinstance(last, dict) else {}
    changed = _changes(current, fingerprint)
    if not changed:
        return series, False
    field = changed[0]
    if not allow_change:
        more = f" (and {len(changed) - 1} more: {', '.join(changed[1:])})" if changed[1:] else ""
        raise SpecChanged(
            f"{field} changed from {json.dumps(current.get(field))} to "
            f"{json.dumps(fingerprint.get(field))}{more} since {directory} was written; "
            "resuming would mix samples of both in one dataset. Write to a new "
            f"{Flag.OUTPUT.value} (or a new dataset name), or pass {ALLOW_SPEC_CHANGE} to "
            "start a new shard series recorded in the manifest"
        )
    entry["changed"] = changed
    series.append(entry)
    atomic_write_json(path, {"series": series})
    log.warning(
        "%s: %s changed (%s); starting shard series %d at shard %d",
        directory,
        ", ".join(changed),
        ALLOW_SPEC_CHANGE,
        len(series),
        next_shard,
    )
    return series, True
