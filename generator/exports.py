"""`spec.exports`, run by `draftgen generate` once every dataset is done: each export is the
`draftgen export` command line the contract writes (draftgen/contract/export_cli.py), run as a
child process of the generator, so that in a cluster the records never leave the output volume.
(A child, not an import: the export package reads the generator's, not the other way round.)"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

from draftgen.contract.export_cli import (
    CARD_FILE,
    SUMMARY_FILE,
    ExportArgs,
    ExportResult,
    results_json,
)
from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError
from draftgen.spec import GenerationJob

log = logging.getLogger("draftgen.generate")


class ExportFailed(DraftgenError):
    """An export of `spec.exports` did not complete; the message names it and the cause."""

    exit_code = ExitCode.EXPORT_FAILED
    fix = "fix the export named and run again: the records are complete, only exports run"


def run_exports(job: GenerationJob, records: Path, root: Path) -> list[ExportResult]:
    """Write every export of the job below `root` from the records in `records`."""
    results = []
    for i, spec in enumerate(job.spec.exports):
        out = root / spec.path
        o = spec.options
        argv = ExportArgs(
            str(records),
            str(out),
            spec.format,
            include_truncated=o.include_truncated,
            skip_degenerate=o.skip_degenerate,
            mix=tuple(o.mix),
            validation_fraction=o.validation_fraction,
            split_seed=o.split_seed,
            specforge_text=o.specforge_text,
            trust_remote_code=job.spec.model.trust_remote_code,
        ).argv()
        where = f"spec.exports[{i}] ({spec.format} to {out})"
        log.info("export %s: draftgen %s", where, " ".join(argv))
        code = subprocess.run([sys.executable, "-m", "draftgen.cli", *argv]).returncode
        if code != 0:
            raise ExportFailed(
                f"{where}: draftgen export exited {code} (its message is above); the records "
                "are complete: fix spec.exports and apply it again to rerun only the exports"
            )
        summary = json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))
        rows = sum(
            split["rows"] for ds in summary["datasets"].values() for split in ds["splits"].values()
        )
        card = out / CARD_FILE
        results.append(
            ExportResult(spec.format, str(out), rows, str(card) if card.is_file() else None)
        )
        log.info("export %s: %d rows", where, rows)
    return results


def write_results(path: Path, results: list[ExportResult]) -> None:
    """The results as JSON at `path` (in a pod: its termination message, read by the operator)."""
    path.write_text(results_json(results), encoding="utf-8")
