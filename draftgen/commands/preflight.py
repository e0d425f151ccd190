"""`draftgen preflight`: the operator's preflight Job (and anyone's) — a job's inputs and tokenizer
checked before any server is created (`generator/prompts/input_preflight.py`). Prints the report, writes
it as JSON to `--report` (the termination log in a cluster) and exits with `ExitCode.OK`,
`INVALID` (a dataset) or `INTEGRITY` (the tokenizer or the chat template)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from draftgen.contract.preflight_cli import add_arguments

__all__ = ["add_arguments", "run"]


def run(args: argparse.Namespace) -> int:
    from draftgen.generator.prompts.input_preflight import (
        preflight,
        problems,
        summary_lines,
        termination_message,
    )
    from draftgen.spec import load_job

    job = load_job(args.job)  # a SpecError is reported and mapped by draftgen.cli
    inputs = args.inputs
    base_dir = (inputs or Path(args.job).parent).resolve()
    report, code = preflight(job, base_dir, rows=args.rows, confine=inputs)
    for line in summary_lines(report):
        print(line)
    for problem in problems(report):
        print(f"preflight: {problem}", file=sys.stderr)
    if args.report is not None:
        Path(args.report).write_text(termination_message(report))
    return int(code)
