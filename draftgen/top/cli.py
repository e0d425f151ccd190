"""`draftgen top TARGET`: a full-screen live view of a running job (docs/watching.md).

TARGET is `gj/NAME` (with `-n NAMESPACE`: a GenerationJob in the cluster), an `http(s)://` URL
(the generator's metrics endpoint) or a directory (a local output directory)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .model import History, build_view
from .sources import ClusterSource, DirectorySource, MetricsSource, NoCluster, Source

JOB_PREFIXES = ("gj/", "generationjob/", "generationjobs/", "generationjob.draftgen.io/")
QUIT_KEYS = ("q", "Q")


class TargetError(ValueError):
    """A TARGET that names none of the sources."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="TARGET",
        help="gj/NAME (a GenerationJob; with -n), a generator metrics URL, or an output directory",
    )
    parser.add_argument(
        "-n", "--namespace", default="default", help="namespace of gj/NAME (default: default)"
    )
    parser.add_argument(
        "--server",
        action="append",
        default=[],
        metavar="URL",
        help="an SGLang server to show (repeat for replicas; default: the servers the generator "
        "names, or for a GenerationJob its server pods)",
    )
    parser.add_argument(
        "--interval", type=float, default=2.0, help="seconds between readings (default 2)"
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="print one screen (from two readings --interval apart) and exit",
    )


def make_source(target: str, namespace: str, servers: list[str]) -> Source:
    for prefix in JOB_PREFIXES:
        if target.lower().startswith(prefix) and len(target) > len(prefix):
            return ClusterSource(target[len(prefix) :], namespace)
    if target.startswith(("http://", "https://")):
        return MetricsSource(target, servers)
    path = Path(target)
    if path.exists() and not path.is_dir():
        raise TargetError(f"{target}: not gj/NAME, an http(s):// metrics URL, or a directory")
    # A directory that does not exist yet is a run about to start: NO DATA until it writes.
    return DirectorySource(path, servers)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .screen import render

    try:
        source = make_source(args.target, args.namespace, args.server)
    except (TargetError, NoCluster) as err:
        print(err, file=sys.stderr)
        return 2
    history = History()
    # Piped (`--once > file`): the screen's own width, not rich's 80-column default.
    piped = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    console = Console(width=120) if piped else Console()
    try:
        if args.once or not console.is_terminal:
            # Two readings `interval` apart, so rates and ETAs are known.
            history.add(source.read())
            time.sleep(args.interval)
            history.add(source.read())
            console.print(render(build_view(history.items), live=False))
            return 0
        return _live(source, history, console, args.interval)
    finally:
        source.close()


def _live(source: Source, history: History, console, interval: float) -> int:
    from rich.live import Live

    from .keys import Keys
    from .screen import render

    history.add(source.read())
    try:
        with (
            Keys() as keys,
            Live(
                render(build_view(history.items), interval),
                console=console,
                screen=True,
                auto_refresh=False,
                redirect_stderr=False,
            ) as live,
        ):
            while True:
                if keys.wait(interval) in QUIT_KEYS:
                    return 0
                history.add(source.read())
                live.update(render(build_view(history.items), interval), refresh=True)
    except KeyboardInterrupt:
        return 0
