"""`draftgen preflight`'s command line and report: what the operator renders into the preflight Job
and what `draftgen/commands/preflight.py` parses, from one definition (as `generator_cli` does for
`draftgen generate`).

The preflight Job reports through its exit code (`ExitCode.OK`, `INVALID` for inputs,
`INTEGRITY` for the tokenizer) and its container's termination message: the report as compact
JSON (`REPORT_VERSION`), written to `/dev/termination-log` and cut to fit the kubelet's 4096
bytes, which the operator copies into `status.preflight`.
"""

from __future__ import annotations

import argparse
import enum
from dataclasses import dataclass
from pathlib import Path

from .argv import add_report_argument, options
from .job_argument import INPUTS_FLAG, JOB_FLAG, add_inputs_argument

COMMAND = "preflight"
"""The `draftgen` subcommand that checks a job's inputs before any server is created."""

TERMINATION_LOG = "/dev/termination-log"
"""Where the preflight container writes its report (the kubelet's default terminationMessagePath)."""

TERMINATION_MESSAGE_LIMIT = 4096
"""The kubelet keeps at most this many bytes of a termination message."""

REPORT_VERSION = 1
DEFAULT_ROWS = 32
"""Rows read per dataset: enough for percentiles and the first rows' format, seconds on a CPU."""


class Flag(enum.StrEnum):
    """Flags of `draftgen preflight`."""

    JOB = JOB_FLAG
    INPUTS = INPUTS_FLAG
    ROWS = "--rows"
    REPORT = "--report"


@dataclass(frozen=True)
class PreflightArgs:
    """The options the operator passes to `draftgen preflight`."""

    job: str
    inputs: str | None = None
    rows: int | None = None
    report: str | None = None

    def argv(self) -> list[str]:
        """`draftgen` arguments, the subcommand first."""
        return [COMMAND, Flag.JOB.value, self.job] + options(
            (Flag.INPUTS, self.inputs), (Flag.ROWS, self.rows), (Flag.REPORT, self.report)
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The parser of `draftgen preflight`, from the same flags `PreflightArgs.argv()` writes."""
    parser.add_argument(Flag.JOB.value, required=True, type=Path, help="GenerationJob YAML file")
    add_inputs_argument(parser)
    parser.add_argument(
        Flag.ROWS.value,
        type=int,
        default=DEFAULT_ROWS,
        help=f"rows read per dataset (default {DEFAULT_ROWS})",
    )
    add_report_argument(parser, Flag.REPORT, "also write the report")
