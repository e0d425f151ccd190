"""The export command line the generator Job runs after generation is one the export command's
own parser reads as meant, and the results it reports survive the trip through a termination
message."""

from __future__ import annotations

import argparse

import pytest

from draftgen.contract.export_cli import (
    ExportArgs,
    ExportResult,
    ResultError,
    parse_results,
    results_json,
)
from draftgen.export import cli as export_cli


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    export_cli.add_arguments(parser)
    assert argv[0] == "export"
    return parser.parse_args(argv[1:])


def test_every_option_reaches_the_export_parser() -> None:
    argv = ExportArgs(
        "/output/records",
        "/output/exports/specforge",
        "specforge",
        include_truncated=True,
        skip_degenerate=True,
        mix=("chat=0.5", "code=tokens:1000"),
        validation_fraction=0.02,
        split_seed=7,
        specforge_text=True,
        trust_remote_code=True,
    ).argv()
    args = _parse(argv)
    assert str(args.dir) == "/output/records" and str(args.out) == "/output/exports/specforge"
    assert args.format == "specforge" and args.overwrite and args.trust_remote_code
    assert args.include_truncated and args.specforge_text
    assert args.mix == ["chat=0.5", "code=tokens:1000"]
    assert args.validation_fraction == 0.02 and args.split_seed == 7
    options = export_cli.options_from(args)
    assert options.validation_fraction == 0.02 and options.include_truncated
    assert options.skip_degenerate


def test_defaults_pass_no_flags_beyond_the_required_ones() -> None:
    argv = ExportArgs("/r", "/o", "parquet").argv()
    assert argv == ["export", "/r", "--format", "parquet", "--out", "/o", "--overwrite"]
    args = _parse(argv)
    assert not args.include_truncated and args.mix is None and args.validation_fraction == 0.0
    assert not export_cli.options_from(args).skip_degenerate


def test_results_round_trip_and_anything_else_is_refused() -> None:
    results = [ExportResult("parquet", "/output/exports/p", 1200, "/output/exports/p/README.md")]
    text = results_json(results)
    assert parse_results(text) == results and len(text) < 4096
    for junk in ("", "Traceback (most recent call last):", '{"exports": [{"path": 1}]}'):
        with pytest.raises(ResultError):
            parse_results(junk)
