"""`draftgen generate`'s command line and exit codes (`ExitCode`, defined with the errors in
draftgen/errors.py): what the operator renders into the generator
Job and what `generator/cli.py` parses, from one definition.

`GeneratorArgs.argv()` is what the operator puts in the container's args; `add_arguments()`
defines the parser from the same `Flag` constants, so a renamed flag changes both sides at once.
"""

from __future__ import annotations

import argparse
import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from draftgen.errors import ExitCode

from .argv import options
from .job_argument import INPUTS_FLAG, JOB_FLAG, add_inputs_argument, add_job_argument

COMMAND = "generate"
"""The `draftgen` subcommand that runs the generator."""


class Flag(enum.StrEnum):
    """Flags of `draftgen generate`."""

    JOB = JOB_FLAG
    SERVER = "--server"
    OUTPUT = "--output"
    INPUTS = INPUTS_FLAG
    METRICS_PORT = "--metrics-port"
    METRICS_LINGER = "--metrics-linger"
    PROGRESS = "--progress"
    HEALTH_TIMEOUT = "--health-timeout"
    ALLOW_SPEC_CHANGE = "--allow-spec-change"
    GENERATIONJOB = "--generationjob"
    NAMESPACE = "--namespace"
    EXPORTS_ROOT = "--exports-root"
    RESULT_FILE = "--result-file"
    LOG_FORMAT = "--log-format"


FATAL_EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode.INVALID,
    ExitCode.INTEGRITY,
    ExitCode.DISK_FULL,
    ExitCode.EXPORT_FAILED,
)
"""Exit codes a retry cannot fix: the operator fails the Job at once on these."""


def exit_codes_epilog() -> str:
    return "exit codes:\n" + "\n".join(f"  {c.value:>3}  {c.__doc__}" for c in ExitCode)


PROGRESS_MODES = ("auto", "live", "log")
LOG_FORMATS = ("text", "json")
"""`--log-format`: a readable multi-line block, or one JSON object a line (log stacks)."""
DEFAULT_HEALTH_TIMEOUT_SECONDS = 1800.0


@dataclass(frozen=True)
class GeneratorArgs:
    """The options the operator passes to `draftgen generate`."""

    job: str
    servers: list[str]
    output: str | None = None
    inputs: str | None = None
    metrics_port: int | None = None
    metrics_linger_seconds: int | None = None
    generationjob: str | None = None
    namespace: str | None = None
    exports_root: str | None = None
    result_file: str | None = None
    log_format: str | None = None

    def argv(self) -> list[str]:
        """`draftgen` arguments, the subcommand first."""
        args = [COMMAND, Flag.JOB.value, self.job]
        for url in self.servers:
            args += [Flag.SERVER.value, url]
        return args + options(
            (Flag.OUTPUT, self.output),
            (Flag.INPUTS, self.inputs),
            (Flag.METRICS_PORT, self.metrics_port),
            (Flag.METRICS_LINGER, self.metrics_linger_seconds),
            (Flag.GENERATIONJOB, self.generationjob),
            (Flag.NAMESPACE, self.namespace),
            (Flag.EXPORTS_ROOT, self.exports_root),
            (Flag.RESULT_FILE, self.result_file),
            (Flag.LOG_FORMAT, self.log_format),
        )


# How `draftgen generate` parses each flag after `--job`, in --help order (argparse's keywords; a
# flag without a `default` defaults to None, as when `GeneratorArgs` leaves it out). `--inputs`
# is job_argument's (preflight takes it alike): it only keeps its place here.
_PARSED: dict[Flag, dict[str, Any]] = {
    Flag.SERVER: {
        "action": "append",
        "default": [],
        "dest": "servers",
        "metavar": "URL",
        "help": "SGLang server base URL; repeat for replicas (or --serve)",
    },
    Flag.OUTPUT: {"type": Path, "help": "output directory (default: spec.output.path)"},
    Flag.INPUTS: {},
    Flag.METRICS_PORT: {
        "type": int,
        "help": "serve Prometheus metrics on this port (default: none)",
    },
    Flag.METRICS_LINGER: {
        "type": float,
        "default": 0.0,
        "metavar": "SECONDS",
        "help": "after a finished job, keep serving metrics this long so Prometheus scrapes the "
        "final counts (a signal ends the wait; default 0)",
    },
    Flag.GENERATIONJOB: {
        "metavar": "NAME",
        "help": "the `generationjob` label of every metric series (default: the job file's "
        "metadata.name)",
    },
    Flag.NAMESPACE: {
        "help": "the `namespace` label of every metric series (default: the job file's "
        "metadata.namespace; none when it has none)",
    },
    Flag.EXPORTS_ROOT: {
        "type": Path,
        "metavar": "DIR",
        "help": "directory spec.exports[].path is relative to (default: the output directory's "
        "parent; in a cluster the output volume)",
    },
    Flag.RESULT_FILE: {
        "type": Path,
        "metavar": "FILE",
        "help": "after the exports, write what each produced (path, rows, card) as JSON here "
        "(the operator passes the container's termination-message file)",
    },
    Flag.PROGRESS: {
        "choices": PROGRESS_MODES,
        "default": "auto",
        "help": "live table on a terminal, log lines otherwise (auto)",
    },
    Flag.LOG_FORMAT: {
        "choices": LOG_FORMATS,
        "default": "text",
        "help": "the log when there is no live table: text (a readable block every interval) or "
        "json (one object a line: every record, progress with per-dataset counts, rejects by "
        "reason, tok/s, ETA and the servers' KV usage); the operator sets json",
    },
    Flag.HEALTH_TIMEOUT: {
        "type": float,
        "default": DEFAULT_HEALTH_TIMEOUT_SECONDS,
        "help": "seconds to wait for a server's /health_generate (default 1800)",
    },
    Flag.ALLOW_SPEC_CHANGE: {
        "action": "store_true",
        "help": "resume although the job changed what shapes a sample (model, template kwargs, "
        "sampling, a dataset's source or selection): start a new shard series, recorded in "
        "the dataset's fingerprint.json and manifest, instead of refusing",
    },
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The parser of `draftgen generate`, from the same flags `GeneratorArgs.argv()` writes (its
    exit-code epilog comes from draftgen/cli.py, as every command's)."""
    add_job_argument(parser)
    for flag, keywords in _PARSED.items():
        if flag is Flag.INPUTS:
            add_inputs_argument(parser)
        else:
            parser.add_argument(flag.value, **keywords)
