"""`draftgen crd`: print or write the CRD generated from the spec (and, with `--values-schema`,
the chart's values schema for `generationJobs[].spec` from the same schema)."""

from __future__ import annotations

import argparse
from pathlib import Path

from draftgen.crd import crd_yaml


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--write",
        nargs="*",
        metavar="PATH",
        type=Path,
        help="write the CRD to these files instead of printing it",
    )
    parser.add_argument(
        "--values-schema",
        metavar="PATH",
        type=Path,
        help="update the chart's values.schema.json: generationJobs[].spec from the CRD's schema",
    )


def run(args: argparse.Namespace) -> int:
    if args.values_schema:
        from .values_schema import write

        write(args.values_schema)
        print(f"wrote {args.values_schema}")
        return 0
    text = crd_yaml()
    if args.write:
        for path in args.write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    else:
        print(text, end="")
    return 0
