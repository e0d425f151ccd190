"""`draftgen export` as the generator Job runs it after generation (`spec.exports`), and what it
reports back to the operator.

`ExportArgs.argv()` writes the export's command line from a `spec.exports` entry's fields; the
generator runs it as a `draftgen export` child process (no shell in the container, and no import
of the export package into the generator's). `ExportResult` is what each export
reports: the generator writes the list as JSON to `--result-file` (the operator passes the
container's termination-message file) and the operator copies it into `status.exports`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError

COMMAND = "export"
"""The `draftgen` subcommand that writes an export."""

CARD_FILE = "README.md"
"""The dataset card at the top of every export (written by draftgen/export/cli.py)."""

SUMMARY_FILE = "export-summary.json"
"""Rows per dataset and split, beside the card (written by draftgen/export/cli.py)."""

TERMINATION_MESSAGE_PATH = "/dev/termination-log"
"""Kubernetes' default terminationMessagePath: what a finished container leaves in its status
(at most 4096 bytes, which is why results are terse)."""


@dataclass(frozen=True)
class ExportArgs:
    """One `draftgen export` command line (the fields of a `spec.exports` entry; no import of
    the spec here: draftgen.spec itself reads the contract)."""

    records: str
    out: str
    format: str
    include_truncated: bool = False
    skip_degenerate: bool = False
    mix: tuple[str, ...] = ()
    validation_fraction: float = 0.0
    split_seed: int = 0
    specforge_text: bool = False
    trust_remote_code: bool = False

    def argv(self) -> list[str]:
        """`draftgen` arguments, the subcommand first."""
        args = [COMMAND, self.records, "--format", self.format, "--out", self.out]
        args.append("--overwrite")  # each run replaces its export whole (built aside, then moved)
        if self.include_truncated:
            args.append("--include-truncated")
        if self.skip_degenerate:
            args.append("--skip-degenerate")
        if self.mix:
            args += ["--mix", *self.mix]
        if self.validation_fraction:
            args += ["--validation-fraction", repr(self.validation_fraction)]
        if self.split_seed:
            args += ["--split-seed", str(self.split_seed)]
        if self.specforge_text:
            args.append("--specforge-text")
        if self.trust_remote_code:
            args.append("--trust-remote-code")
        return args


@dataclass(frozen=True)
class ExportResult:
    """What one finished export reports (the fields of `status.exports[]`)."""

    format: str
    path: str
    rows: int
    card: str | None


class ResultError(DraftgenError, ValueError):
    """A result file or termination message that is not a list of export results."""

    exit_code = ExitCode.INVALID
    fix = "read the export container's log: it ended without writing its result"


def results_json(results: list[ExportResult]) -> str:
    return json.dumps({"exports": [asdict(r) for r in results]}, separators=(",", ":"))


def parse_results(text: str) -> list[ExportResult]:
    """The results in a termination message; ResultError when it holds something else (an
    error message, or the log tail Kubernetes falls back to)."""
    try:
        doc = json.loads(text)
        return [
            ExportResult(str(e["format"]), str(e["path"]), int(e["rows"]), e.get("card"))
            for e in doc["exports"]
        ]
    except (ValueError, TypeError, KeyError) as err:
        raise ResultError(f"not an export result: {text[:200]!r}") from err
