"""`draftgen generate`: run a GenerationJob against SGLang servers, locally or in the cluster."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

EXIT_CODES = {
    0: "every dataset met its budget or ran out of rows",
    1: "unexpected error (a bug: please report it with the log)",
    2: "the job file or the arguments are invalid",
    3: "integrity check refused to start: the data would be wrong (tokenizer, template, server)",
    4: "no server became healthy",
    5: "the output volume is full; free space and run the same command again to resume",
    130: "interrupted (SIGINT); run the same command again to resume",
    143: "terminated (SIGTERM); run the same command again to resume",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "exit codes:\n" + "\n".join(f"  {k:>3}  {v}" for k, v in EXIT_CODES.items())
    parser.add_argument("--job", required=True, type=Path, help="GenerationJob YAML file")
    parser.add_argument("--server", action="append", required=True, dest="servers",
                        metavar="URL", help="SGLang server base URL; repeat for replicas")
    parser.add_argument("--output", type=Path, default=None,
                        help="output directory (default: spec.output.path)")
    parser.add_argument("--inputs", type=Path, default=None,
                        help="directory relative dataset sources resolve from "
                             "(default: the job file's directory)")
    parser.add_argument("--metrics-port", type=int, default=None,
                        help="serve Prometheus metrics on this port (default: none)")
    parser.add_argument("--metrics-linger", type=float, default=0.0, metavar="SECONDS",
                        help="after a finished job, keep serving metrics this long so Prometheus "
                             "scrapes the final counts (a signal ends the wait; default 0)")
    parser.add_argument("--progress", choices=("auto", "live", "log"), default="auto",
                        help="live table on a terminal, log lines otherwise (auto)")
    parser.add_argument("--health-timeout", type=float, default=1800.0,
                        help="seconds to wait for a server's /health_generate (default 1800)")


def _setup_logging(live: bool) -> None:
    if live:
        from rich.logging import RichHandler

        handler: logging.Handler = RichHandler(show_path=False)
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def run(args: argparse.Namespace) -> int:
    from draftgen.spec import SpecError, load_job

    from .run import RunError, Runner, Settings
    from .writer import DiskFull

    live = {"auto": sys.stderr.isatty(), "live": True, "log": False}[args.progress]
    _setup_logging(live)
    log = logging.getLogger("draftgen.generate")
    try:
        job = load_job(args.job)
    except SpecError as err:
        print(err, file=sys.stderr)
        return 2
    for warning in job.spec.warnings():
        log.warning("%s", warning)
    base_dir = (args.inputs or args.job.parent).resolve()
    if args.inputs is not None:
        # In a cluster (`--inputs` is the inputs volume) sources must stay on that volume: an
        # absolute path or a symlink leading elsewhere would read the container's own files.
        from .inputs import dataset_files
        from .sources import SourceError as _SourceError

        for dataset in job.spec.datasets:
            try:
                files = dataset_files(dataset, base_dir)
            except _SourceError:
                continue  # reported with its fix when the dataset is read
            outside = [f for f in files if not f.resolve().is_relative_to(base_dir)]
            if outside:
                print(f"spec.datasets[{dataset.name}].source: {outside[0]} is outside the inputs "
                      f"volume {base_dir}; name a file on that volume (no absolute paths or "
                      "symlinks leading elsewhere)", file=sys.stderr)
                return 2
    output = args.output if args.output is not None else Path(job.spec.output.path)
    settings = Settings(servers=args.servers, output=output, metrics_port=args.metrics_port,
                        live_progress=live, health_timeout=args.health_timeout)
    from .inputs import iter_samples
    from .integrity import IntegrityError as InputIntegrityError
    from .pretokenize import TokenizerError, open_tokenizer
    from .sources import SourceError

    try:
        with open_tokenizer(job, base_dir) as ctx:
            def source(dataset, skip_ids, max_prompt_tokens):
                return iter_samples(job, dataset, base_dir=base_dir, tokenizer_ctx=ctx,
                                    skip_ids=skip_ids, max_prompt_tokens=max_prompt_tokens)

            runner = Runner(job, settings, source, getattr(ctx, "tokenizer", None))
            return asyncio.run(_main(runner, args.metrics_linger if args.metrics_port else 0.0))
    except DiskFull as err:
        log.error("disk full: %s", err)
        return 5
    except RunError as err:
        log.error("%s", err)
        return err.exit_code
    except InputIntegrityError as err:
        log.error("refusing to start: %s", err)
        return 3
    except (SourceError, TokenizerError) as err:
        log.error("%s", err)
        return 2


async def _main(runner, linger: float = 0.0) -> int:
    loop = asyncio.get_running_loop()
    received: list[int] = []
    finished = asyncio.Event()

    def on_signal(signum: int) -> None:
        if finished.is_set():  # the job is complete: a signal only cuts the metrics linger short
            finished.clear()
            return
        received.append(signum)
        logging.getLogger("draftgen.generate").warning(
            "received %s: stopping (in-flight requests are aborted, nothing partial is written)",
            signal.Signals(signum).name)
        runner.stop()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    ledgers = await runner.run()
    if received:
        return 128 + received[0]
    for ledger in ledgers.values():
        logging.getLogger("draftgen.generate").info(
            "%s: %d samples, %d completion tokens, overshoot %.2f%%, truncated %.1f%%, %d rejects",
            ledger.dataset, ledger.samples, ledger.completion_tokens, ledger.overshoot_percent,
            100 * ledger.truncation_rate, sum(ledger.rejects.values()))
    if linger > 0:
        # A process that exits at once takes its final counts with it: the last scrape may
        # predate the last records, and dashboards would show less than was written.
        finished.set()
        deadline = loop.time() + linger
        while finished.is_set() and loop.time() < deadline:
            await asyncio.sleep(min(0.2, deadline - loop.time()))
    return 0
