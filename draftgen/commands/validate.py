"""`draftgen validate`: the same checks the operator and the generator make, before you apply."""

from __future__ import annotations

import argparse
import sys

from draftgen.spec import SpecError, load_job


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", nargs="+", help="GenerationJob YAML files")


def run(args: argparse.Namespace) -> int:
    status = 0
    for path in args.job:
        try:
            job = load_job(path)
        except SpecError as err:
            print(err, file=sys.stderr)
            status = 1
            continue
        print(
            f"{path}: GenerationJob {job.metadata.name} is valid "
            f"({len(job.spec.datasets)} datasets)"
        )
        for warning in job.spec.warnings():
            print(f"  warning: {warning}")
    return status
