"""`draftgen serve JOB`: start SGLang for a job exactly as the operator would (draftgen/serving.py),
print the command, run until Ctrl-C or SIGTERM, then stop the server and its children.
`draftgen generate JOB --serve` starts, waits for health, generates and stops in one command."""

from __future__ import annotations

import argparse
import signal
import sys
import time

from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.job_argument import add_job_argument, job_files
from draftgen.errors import DraftgenError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from draftgen.serving import add_server_options

    add_job_argument(parser)
    add_server_options(parser)
    parser.add_argument(
        "--print",
        dest="print_only",
        action="store_true",
        help="print the command (and the environment draftgen sets) and exit",
    )


class _Stop(DraftgenError):
    """A signal asked `draftgen serve` to stop: caught in `run`, which exits 128 + its number."""

    exit_code = ExitCode.SIGTERM
    fix = "nothing to fix: run the same command again to serve again"


def run(args: argparse.Namespace) -> int:
    from draftgen.serving import (
        ServerProcess,
        server_command_from,
        server_environment,
        server_url,
        shown,
    )
    from draftgen.spec import SpecError, load_job_document

    try:
        job, document = load_job_document(job_files(args)[0])
    except SpecError as err:
        print(err, file=sys.stderr)
        return ExitCode.INVALID
    command = server_command_from(job, document.base_dir, args)
    print(shown(command), flush=True)
    if args.print_only:
        return ExitCode.OK
    received: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        if received:  # a second signal: kill the server at once
            server.kill()
            raise SystemExit(128 + signum)
        received.append(signum)
        raise _Stop

    server = ServerProcess(command, server_environment(job, args.cpu))
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    print(
        f"serving {job.metadata.name} at {server_url(command)} (ready when GET /health_generate "
        "answers 200); Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )
    try:
        while (code := server.exited()) is None:
            time.sleep(0.2)
        print(f"SGLang exited with code {code}", file=sys.stderr)
        return ExitCode.SERVERS_DOWN
    except _Stop:
        name = signal.Signals(received[0]).name
        print(f"received {name}: stopping the SGLang server", file=sys.stderr, flush=True)
        server.stop()
        return 128 + received[0]
