"""`draftgen explain FIELD`: one spec field's type, default, units, rules and doc, offline
(`draftgen explain spec` lists the top-level fields; `--reference` prints docs/reference.md)."""

from __future__ import annotations

import argparse
import sys

from draftgen.contract.generator_cli import ExitCode
from draftgen.spec.reference import explain, markdown


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "field",
        nargs="?",
        default="spec",
        help="a field path, e.g. spec.server.hierarchicalCache or datasets.budget (default: spec)",
    )
    parser.add_argument(
        "--reference", action="store_true", help="print the whole reference as Markdown"
    )


def run(args: argparse.Namespace) -> int:
    if args.reference:
        sys.stdout.write(markdown())
        return ExitCode.OK
    sys.stdout.write(explain(args.field))  # UnknownField: reported and mapped by draftgen.cli
    return ExitCode.OK
