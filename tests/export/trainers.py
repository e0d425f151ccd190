"""The drafter trainers' own loaders, run in their environment (.cache/venv-trainers, built by
`make trainers`) as subprocesses over draftgen exports; tests compare what they loaded with
draftgen's records."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from draftgen.output.record import Record

REPO = Path(__file__).resolve().parents[2]
TRAINERS_VENV = REPO / ".cache" / "venv-trainers"
CHECKS = Path(__file__).resolve().parent / "trainer_checks"


def require_trainers() -> Path:
    """The trainers' python, or a skip that says how to get it."""
    python = TRAINERS_VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(f"{TRAINERS_VENV} is missing: run `make trainers`")
    return python


def _run(argv: list[str], cwd: Path) -> None:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        # Never let the repo root (its operator/ package) shadow a module of the trainers.
        "PYTHONSAFEPATH": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    env.pop("PYTHONPATH", None)
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (
        f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    )


def speculators_load(train_file: Path, tokenizer: Path, work: Path) -> dict[str, Any]:
    """`speculators prepare-data` over `train_file`, then its `ArrowDataset` and `CollateFn`
    (trainer_checks/speculators_loader.py). Returns the rows and the packed batch."""
    python = require_trainers()
    prepared = work / "prepared"
    _run(
        [
            str(python.parent / "speculators"),
            "prepare-data",
            "--model",
            str(tokenizer),
            "--data",
            str(train_file),
            "--output",
            str(prepared),
            "--seq-length",
            "1000000",
            "--num-preprocessing-workers",
            "1",
        ],
        cwd=work,
    )
    out = work / "speculators-loaded.json"
    _run([str(python), str(CHECKS / "speculators_loader.py"), str(prepared), str(out)], cwd=work)
    return json.loads(out.read_text())


def specforge_config(
    work: Path, model: Path, data: dict[str, Any], name: str = "specforge"
) -> Path:
    """A SpecForge 0.2 run config for online training from `data` (the keys draftgen prints),
    with the deployment SpecForge requires for it: disaggregated, a Mooncake store and an
    SGLang capture server (none of which the loader contacts)."""
    config = {
        "model": {"target_model_path": str(model)},
        "data": {"cache_dir": str(work / "specforge-cache"), **data},
        "deployment": {
            "mode": "disaggregated",
            "disaggregated": {
                "control_dir": str(work / "control"),
                "backend": "mooncake",
                "mooncake_metadata_server": "http://127.0.0.1:8080/metadata",
                "mooncake_master_server_addr": "127.0.0.1:50051",
                "server_urls": ["http://127.0.0.1:30000"],
            },
        },
    }
    path = work / f"{name}.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML; SpecForge loads it with yaml.safe_load
    return path


def specforge_load(
    configs: list[Path], work: Path, tokenizer: Path | None = None
) -> list[dict[str, Any]]:
    """SpecForge's config validation and prompt preparation for each of `configs`, in one
    process (trainer_checks/specforge_loader.py)."""
    python = require_trainers()
    out = work / "specforge-loaded.json"
    argv = [str(python), str(CHECKS / "specforge_loader.py"), str(out)]
    argv += ["--tokenizer", str(tokenizer)] if tokenizer else []
    _run(argv + [str(c) for c in configs], cwd=work)
    return json.loads(out.read_text())


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def sequence(record: Record | dict[str, Any]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """draftgen's training sequence of a record (read back, or as a test wrote it): ids and loss
    mask, as tuples."""
    if isinstance(record, Record):
        prompt, completion = list(record.input_ids), list(record.output_ids)
    else:
        prompt, completion = record["input_ids"], record["output_ids"]
    return tuple(prompt + completion), (0,) * len(prompt) + (1,) * len(completion)
