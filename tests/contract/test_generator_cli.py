"""The generator's command line: what the operator renders is what `draftgen generate` parses."""

from __future__ import annotations

import argparse

from draftgen.contract.generator_cli import (
    COMMAND,
    FATAL_EXIT_CODES,
    ExitCode,
    GeneratorArgs,
    add_arguments,
    exit_codes_epilog,
)
from draftgen.contract.job_argument import job_files


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert argv[0] == COMMAND
    return parser.parse_args(argv[1:])


def test_every_rendered_option_comes_back_from_the_parser() -> None:
    args = GeneratorArgs(
        job="/etc/draftgen/job.yaml",
        servers=["http://a:1", "http://b:2"],
        output="/out/x",
        inputs="/data",
        metrics_port=9400,
        metrics_linger_seconds=60,
    )
    got = _parse(args.argv())
    assert job_files(got) == [args.job]
    assert got.servers == args.servers
    assert str(got.output) == args.output and str(got.inputs) == args.inputs
    assert got.metrics_port == 9400 and got.metrics_linger == 60.0


def test_options_left_unset_take_the_parsers_defaults() -> None:
    got = _parse(GeneratorArgs(job="j.yaml", servers=["http://a:1"]).argv())
    assert got.output is None and got.inputs is None and got.metrics_port is None
    assert got.metrics_linger == 0.0 and got.progress == "auto"


def test_each_exit_code_has_its_meaning_in_the_help() -> None:
    epilog = exit_codes_epilog()
    for code in ExitCode:
        assert code.__doc__ and f"{int(code):>3}  {code.__doc__}" in epilog
    assert ExitCode.SIGTERM == 128 + 15 and ExitCode.SIGINT == 128 + 2


def test_only_codes_a_retry_cannot_fix_are_fatal() -> None:
    # EXPORT_FAILED: the records are complete, a retry would only fail the same export again.
    assert set(FATAL_EXIT_CODES) == {
        ExitCode.INVALID,
        ExitCode.INTEGRITY,
        ExitCode.DISK_FULL,
        ExitCode.EXPORT_FAILED,
    }
