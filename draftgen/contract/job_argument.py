"""How every draftgen command that reads a GenerationJob names it on the command line:
`-f/--job FILE` or a positional FILE, `-` for standard input. One definition, so `validate`,
`plan`, `generate` and `operator --render` cannot drift apart (the operator renders
`generate --job FILE`, which stays valid). `--inputs DIR`, where the job's relative dataset
sources resolve from, is spelled here too (`generate` and `preflight` take it alike)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

JOB_FLAG = "--job"
"""What the operator renders into the generator Job (`generate --job FILE`)."""
JOB_FLAGS = ("-f", JOB_FLAG)
INPUTS_FLAG = "--inputs"
"""The directory the job's relative dataset sources resolve from (the operator's inputs volume)."""
STDIN = "-"
USAGE_EXIT_CODE = 2
"""argparse's own code for a usage error; ExitCode.INVALID is the same number."""


def add_job_argument(parser: argparse.ArgumentParser, many: bool = False) -> None:
    """`-f/--job FILE` (repeatable when `many`) and a positional FILE (several when `many`)."""
    what = "GenerationJob YAML file(s)" if many else "GenerationJob YAML file"
    parser.add_argument(
        "job_files",
        nargs="*" if many else "?",
        metavar="FILE",
        help=f"{what}; `-` reads standard input; documents of other kinds are skipped",
    )
    parser.add_argument(
        *JOB_FLAGS,
        dest="job_flags",
        action="append",
        default=[],
        metavar="FILE",
        help="the same as the positional FILE" + (" (repeatable)" if many else ""),
    )


def add_inputs_argument(parser: argparse.ArgumentParser) -> None:
    """`--inputs DIR` (dest `inputs`, a Path; None: the job file's directory)."""
    parser.add_argument(
        INPUTS_FLAG,
        type=Path,
        default=None,
        help="directory relative dataset sources resolve from (default: the job file's directory)",
    )


def job_files(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> list[str]:
    """The job files named either way, in order; a usage error (exit 2) when there is none,
    or more than one for a command that reads one."""
    positional = args.job_files
    named = list(args.job_flags) + (
        positional if isinstance(positional, list) else [positional] if positional else []
    )
    many = isinstance(positional, list)
    problem = None
    if not named:
        problem = "name the job: FILE or -f FILE (`-` reads standard input)"
    elif not many and len(named) > 1:
        problem = f"one job file, got {len(named)}: {' '.join(named)}"
    elif named.count(STDIN) > 1:
        problem = "standard input (`-`) can be read once"
    if problem is not None:
        if parser is not None:
            parser.error(problem)  # usage, the message, exit 2
        print(f"draftgen: error: {problem}", file=sys.stderr)
        raise SystemExit(USAGE_EXIT_CODE)
    return named
