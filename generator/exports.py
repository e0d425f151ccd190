"""`spec.exports`, run by `draftgen generate` once every dataset is done: each export is the
`draftgen export` command line the contract writes (draftgen/contract/export_cli.py), parsed by
the export command's own parser and run in this process, so that in a cluster the records never
leave the output volume and the generator stays the container's only process."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from draftgen.contract.export_cli import ExportArgs, ExportResult, results_json
from draftgen.spec import GenerationJob

log = logging.getLogger("draftgen.generate")


class ExportFailed(Exception):
    """An export of `spec.exports` did not complete; the message names it and the cause."""


def run_exports(job: GenerationJob, records: Path, root: Path) -> list[ExportResult]:
    """Write every export of the job below `root` from the records in `records`."""
    from draftgen.export import cli as export_cli
    from draftgen.export.card import CARD_FILE

    results = []
    for i, spec in enumerate(job.spec.exports):
        out = root / spec.path
        argv = ExportArgs(str(records), str(out), spec, job.spec.model.trust_remote_code).argv()
        where = f"spec.exports[{i}] ({spec.format} to {out})"
        log.info("export %s: draftgen %s", where, " ".join(argv))
        parser = argparse.ArgumentParser(prog=f"draftgen {argv[0]}")
        export_cli.add_arguments(parser)
        try:
            code = export_cli.run(parser.parse_args(argv[1:]))
        except SystemExit as err:  # argparse refused the arguments
            raise ExportFailed(f"{where}: the export refused its arguments ({err})") from None
        if code != 0:
            raise ExportFailed(
                f"{where}: draftgen export exited {code} (its message is above); the records "
                "are complete: fix spec.exports and apply it again to rerun only the exports"
            )
        summary = json.loads((out / export_cli.SUMMARY_FILE).read_text(encoding="utf-8"))
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
