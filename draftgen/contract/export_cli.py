"""`draftgen export` as the generator Job runs it after generation (`spec.exports`), and what it
reports back to the operator.

`ExportArgs.argv()` writes the export's command line from a spec entry; the generator parses it
with the export command's own parser and runs it in-process (no shell in the container: the
generator stays PID 1 and keeps its signal handling). `ExportResult` is what each export
reports: the generator writes the list as JSON to `--result-file` (the operator passes the
container's termination-message file) and the operator copies it into `status.exports`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from draftgen.spec import ExportSpec

COMMAND = "export"
"""The `draftgen` subcommand that writes an export."""

TERMINATION_MESSAGE_PATH = "/dev/termination-log"
"""Kubernetes' default terminationMessagePath: what a finished container leaves in its status
(at most 4096 bytes, which is why results are terse)."""


@dataclass(frozen=True)
class ExportArgs:
    """One `draftgen export` command line."""

    records: str
    out: str
    spec: ExportSpec
    trust_remote_code: bool = False

    def argv(self) -> list[str]:
        """`draftgen` arguments, the subcommand first."""
        o = self.spec.options
        args = [COMMAND, self.records, "--format", self.spec.format, "--out", self.out]
        args.append("--overwrite")  # each run replaces its export whole (built aside, then moved)
        if o.include_truncated:
            args.append("--include-truncated")
        if o.mix:
            args += ["--mix", *o.mix]
        if o.validation_fraction:
            args += ["--validation-fraction", repr(o.validation_fraction)]
        if o.split_seed:
            args += ["--split-seed", str(o.split_seed)]
        if o.specforge_text:
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


class ResultError(ValueError):
    """A result file or termination message that is not a list of export results."""


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
