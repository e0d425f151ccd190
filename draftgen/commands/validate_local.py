"""`draftgen validate --local`'s cheap checks: what `generate` would trip over in its first
seconds, found without loading a tokenizer or reading a row (those are `--tokenizer` and
`--inputs`):

- every dataset's source exists and is readable;
- the tokenizer directory (model.tokenizer, else the weights) exists and holds a tokenizer;
- no dataset's `maxNewTokens` reaches the model's context (config.json or
  server.contextLength): SGLang would refuse every request of it, one reject at a time.

Pure of output: each check returns problem lines naming the field and the fix.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from draftgen.contract.model_location import is_hub, loader_name
from draftgen.spec import GenerationJob

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "tiktoken.model")


def _local(location: str, base_dir: Path) -> Path | None:
    if is_hub(location):
        return None  # fetched at run time (or from the hub cache): not checked here
    path = Path(loader_name(location))
    return path if path.is_absolute() else base_dir / path


def source_problems(job: GenerationJob, base_dir: Path) -> list[str]:
    from draftgen.generator.prompts.inputs import dataset_files
    from draftgen.generator.rows.sources import SourceError

    out = []
    for i, ds in enumerate(job.spec.datasets):
        where = f"spec.datasets[{i}]({ds.name}).source"
        try:
            files = dataset_files(ds, base_dir)
        except SourceError as err:
            out.append(f"{where.removesuffix('.source')}.{err.field}: {err}")
            continue
        unreadable = [f for f in files if not os.access(f, os.R_OK)]
        if unreadable:
            out.append(f"{where}: {unreadable[0]} is not readable; fix its permissions")
    return out


def tokenizer_problems(job: GenerationJob, base_dir: Path) -> list[str]:
    field = "spec.model.tokenizer" if job.spec.model.tokenizer else "spec.model.weights"
    path = _local(job.spec.model.tokenizer_location, base_dir)
    if path is None:
        return []
    if not path.is_dir():
        return [
            f"{field}: {path} does not exist (relative paths resolve from the job file's "
            "directory); name the model directory, or hf://ORG/NAME"
        ]
    if not any((path / name).exists() for name in TOKENIZER_FILES):
        return [
            f"{field}: {path} holds no tokenizer (none of {', '.join(TOKENIZER_FILES)}); "
            "name the directory the tokenizer is in (model.tokenizer)"
        ]
    return []


def context_length(job: GenerationJob, base_dir: Path) -> tuple[int, str] | None:
    """The model's context in tokens and where it was read, when known here."""
    if job.spec.server.context_length is not None:
        return job.spec.server.context_length, "spec.server.contextLength"
    path = _local(job.spec.model.weights, base_dir)
    config = path / "config.json" if path is not None else None
    if config is None or not config.is_file():
        return None
    try:
        data = json.loads(config.read_text())
    except (OSError, ValueError):
        return None
    data = data.get("text_config", data) if isinstance(data, dict) else {}
    n = data.get("max_position_embeddings") if isinstance(data, dict) else None
    return (n, f"{config} max_position_embeddings") if isinstance(n, int) and n > 0 else None


def context_problems(job: GenerationJob, base_dir: Path) -> list[str]:
    known = context_length(job, base_dir)
    if known is None:
        return []
    limit, where = known
    return [
        f"{path}.maxNewTokens {n} reaches the model's context of {limit} tokens ({where}): "
        f"no prompt would fit and SGLang would refuse every request; lower maxNewTokens below "
        f"{limit}"
        for path, n in job.spec.completion_limits().items()
        if n >= limit
    ]
