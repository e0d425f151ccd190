"""`draftgen generate`: run a GenerationJob against SGLang servers, locally or in the cluster."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

# The parser is defined next to the argv the operator renders, so the two cannot disagree.
from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.generator_cli import add_arguments as add_contract_arguments

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The operator's flags (draftgen/contract/generator_cli.py), and `--serve` for a machine
    without Kubernetes (draftgen/serving.py)."""
    from draftgen.serving import add_server_options

    add_contract_arguments(parser)
    group = parser.add_argument_group(
        "--serve", "start SGLang as the operator would (draftgen serve), generate, stop it"
    )
    group.add_argument(
        "--serve",
        action="store_true",
        help="start the job's SGLang server here, wait for it, generate, then stop it "
        "(its log: OUTPUT.sglang.log)",
    )
    add_server_options(group)  # type: ignore[arg-type]


FORCED_EXIT_HOOKS: list = []
"""Called before a second signal ends the process at once (`--serve`: kill the server)."""


def _setup_logging(live: bool, log_format: str = "text") -> None:
    if live:
        from rich.logging import RichHandler

        handler: logging.Handler = RichHandler(show_path=False)
    else:
        handler = logging.StreamHandler(sys.stderr)
        if log_format == "json":
            from draftgen.generator.telemetry.progress import json_logging

            json_logging(handler)
        else:
            from draftgen.timefmt import IsoFormatter

            handler.setFormatter(IsoFormatter("%(asctime)s %(levelname)s %(message)s"))
    from draftgen.redact import RedactingFilter

    handler.addFilter(RedactingFilter())  # a password in a --server URL never reaches the log
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def run(args: argparse.Namespace) -> int:
    """The run; a `DraftgenError` it raises is reported and mapped to its exit code by
    `draftgen.cli.main` (into this command's log once the log is set up)."""
    from draftgen.contract.job_argument import job_files
    from draftgen.spec import load_job_document

    # Before the log is set up: a SpecError prints as it is, without a log prefix.
    job, document = load_job_document(job_files(args)[0])
    live = {"auto": sys.stderr.isatty(), "live": True, "log": False}[args.progress]
    _setup_logging(live, args.log_format)
    log = logging.getLogger("draftgen.generate")
    args.error_log = log
    for warning in job.spec.warnings():
        log.warning("%s", warning)
    base_dir = (args.inputs or document.base_dir).resolve()
    if args.inputs is not None:
        # In a cluster (`--inputs` is the inputs volume) sources must stay on that volume: an
        # absolute path or a symlink leading elsewhere would read the container's own files.
        from draftgen.generator.prompts.inputs import dataset_files
        from draftgen.generator.rows.sources import SourceError as _SourceError

        for dataset in job.spec.datasets:
            try:
                files = dataset_files(dataset, base_dir)
            except _SourceError:
                continue  # reported with its fix when the dataset is read
            outside = [f for f in files if not f.resolve().is_relative_to(base_dir)]
            if outside:
                print(
                    f"spec.datasets[{dataset.name}].source: {outside[0]} is outside the inputs "
                    f"volume {base_dir}; name a file on that volume (no absolute paths or "
                    "symlinks leading elsewhere)",
                    file=sys.stderr,
                )
                return ExitCode.INVALID
    # Like every other relative path of the job, spec.output.path resolves from the job file's
    # directory (the operator always passes --output: mountPath/path).
    output = args.output if args.output is not None else document.base_dir / job.spec.output.path
    from draftgen.generator.arguments import check_arguments

    if args.serve == bool(args.servers):
        log.error(
            "give the server: --server URL (one already running) or --serve (start it here)"
            if not args.serve
            else "--serve starts the job's server: leave out --server"
        )
        return ExitCode.INVALID
    server = None
    if args.serve:
        from draftgen.serving import server_command_from, server_url

        command = server_command_from(job, document.base_dir, args)
        args.servers = [server_url(command)]
    check_arguments(args.servers, output, args.metrics_port)
    if args.serve:
        server = _start_server(job, command, output, args.cpu)  # ServeError: draftgen.cli
    try:
        return _generate(args, job, base_dir, output, live, server)
    finally:
        if server is not None:
            log.info("stopping the SGLang server this run started")
            try:
                server.stop()
            except KeyboardInterrupt:  # a second Ctrl-C: no more grace
                server.kill()
                raise


def _start_server(job, command: list[str], output: Path, cpu: bool):
    from draftgen.serving import ServerProcess, server_environment, shown

    log_path = output.parent / f"{output.name}.sglang.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    server = ServerProcess(command, server_environment(job, cpu), log=log_path)  # PortTaken
    logging.getLogger("draftgen.generate").info(
        "starting SGLang (log %s): %s", log_path, shown(command)
    )
    FORCED_EXIT_HOOKS.append(server.kill)

    def term(signum: int, frame: object) -> None:  # until the run's own handlers take over
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, term)  # the default would leave the server running
    return server


def _generate(args, job, base_dir: Path, output: Path, live: bool, server) -> int:
    from draftgen.errors import DraftgenError
    from draftgen.generator.arguments import ArgumentProblem, write_problem
    from draftgen.generator.prompts.template_clock import job_date
    from draftgen.generator.run import Runner, Settings

    log = logging.getLogger("draftgen.generate")
    template_date = job_date(job, output)
    settings = Settings(
        servers=args.servers,
        output=output,
        metrics_port=args.metrics_port,
        live_progress=live,
        log_format=args.log_format,
        health_timeout=args.health_timeout,
        allow_spec_change=args.allow_spec_change,
        generationjob=args.generationjob,
        namespace=args.namespace,
        template_date=template_date,
    )
    from draftgen.generator.prompts.input_preflight import InputsRefused, check_inputs, problems
    from draftgen.generator.prompts.inputs import sample_source
    from draftgen.generator.prompts.pretokenize import open_tokenizer

    try:
        with open_tokenizer(job, base_dir, template_date=template_date) as ctx:

            def check(datasets: list) -> None:
                # The preflight of the datasets still to do, before any server is waited for:
                # a missing source or a template that breaks their rows shows in seconds.
                report, code = check_inputs(
                    job, base_dir, ctx, confine=args.inputs, strict=False, datasets=datasets
                )
                for ds in report.datasets:
                    if ds.warning:
                        log.warning("%s", ds.warning)
                if not report.passed:
                    raise InputsRefused(problems(report), code)

            source = sample_source(job, base_dir, ctx)
            runner = Runner(job, settings, source, getattr(ctx, "tokenizer", None), check)
            linger = args.metrics_linger if args.metrics_port else 0.0
            code = asyncio.run(_main(runner, linger, server))
        if code == ExitCode.OK:
            code = _exports(job, output, args)
        return code
    except OSError as err:  # the output turned unwritable after the checks above
        problem = None if isinstance(err, DraftgenError) else write_problem(err)
        if problem is None:
            raise
        raise ArgumentProblem(problem) from err


def _exports(job, output: Path, args: argparse.Namespace) -> int:
    """spec.exports once every dataset is done, and their results in `--result-file`."""
    from draftgen.generator.exports import run_exports, write_results

    root = args.exports_root if args.exports_root is not None else output.resolve().parent
    results = run_exports(job, output, root)  # ExportFailed: exit 8, reported by draftgen.cli
    if args.result_file is not None:
        write_results(args.result_file, results)
    return ExitCode.OK


async def _watch(server, runner) -> None:
    """`--serve`: a server that exits ends the run (no 30-minute wait for its health)."""
    from draftgen.serving import ServeError

    while (code := server.exited()) is None:
        if server.bind_failed():  # it stays up serving nothing: as good as exited (stopped below)
            runner._stop_fatal(
                ServeError(
                    "the SGLang server this run started could not bind its port (another "
                    f"process took it while the model loaded); its log is {server.log}: start "
                    "again, or give another port with --port N"
                )
            )
            return
        await asyncio.sleep(0.5)
    runner._stop_fatal(
        ServeError(
            f"the SGLang server this run started exited with code {code}; its log is "
            f"{server.log} (the last lines usually say why: out of memory, a wrong flag)"
        )
    )


async def _main(runner, linger: float = 0.0, server=None) -> int:
    loop = asyncio.get_running_loop()
    received: list[int] = []
    finished = asyncio.Event()

    def on_signal(signum: int) -> None:
        if finished.is_set():  # the job is complete: a signal only cuts the metrics linger short
            finished.clear()
            return
        if received:  # a second signal: the user does not want to wait for the clean stop
            print(f"received {signal.Signals(signum).name} again: exiting now", file=sys.stderr)
            for hook in FORCED_EXIT_HOOKS:
                hook()
            os._exit(128 + signum)
        received.append(signum)
        logging.getLogger("draftgen.generate").warning(
            "received %s: stopping (in-flight requests are aborted, nothing partial is written)",
            signal.Signals(signum).name,
        )
        runner.stop()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    watch = asyncio.create_task(_watch(server, runner)) if server is not None else None
    try:
        ledgers = await runner.run()
    finally:
        if watch is not None:
            watch.cancel()
    if received:
        return 128 + received[0]
    for ledger in ledgers.values():
        logging.getLogger("draftgen.generate").info(
            "%s: %d samples, %d completion tokens, overshoot %.2f%%, truncated %.1f%%, %d rejects",
            ledger.dataset,
            ledger.samples,
            ledger.completion_tokens,
            ledger.overshoot_percent,
            100 * ledger.truncation_rate,
            sum(ledger.rejects.values()),
        )
    if linger > 0:
        # A process that exits at once takes its final counts with it: the last scrape may
        # predate the last records, and dashboards would show less than was written.
        finished.set()
        deadline = loop.time() + linger
        while finished.is_set() and loop.time() < deadline:
            await asyncio.sleep(min(0.2, deadline - loop.time()))
    return ExitCode.OK
