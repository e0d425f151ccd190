"""`draftgen download`'s command line, its progress series and where the weights land: what the
operator renders into the model download Job, what `draftgen/commands/download.py` parses and what
the operator reads back, from one definition.

The download Job reports bytes done/total on a Prometheus page (`BYTES_DONE`, `BYTES_TOTAL`,
scraped by the operator like the generator's) and, when it ends, the commit the revision
resolved to as its termination message (`{"commit": ...}` JSON).
"""

from __future__ import annotations

import argparse
import enum
from dataclasses import dataclass
from pathlib import Path

from .argv import add_report_argument, options
from .metrics import Metric

COMMAND = "download"
"""The `draftgen` subcommand that fetches `hf://` weights onto the models volume."""

METRICS_PORT = 9401
"""Port of the download Job's progress page."""

BYTES_DONE = Metric(
    "draftgen_model_download_bytes", "gauge", "bytes of the model's files on the volume so far"
)
BYTES_TOTAL = Metric(
    "draftgen_model_download_total_bytes", "gauge", "bytes of every file of the model's revision"
)


def hub_dir(mount_path: str, repo_id: str) -> str:
    """Where the weights of `repo_id` live on the models volume: `<mount>/hub/<ORG>/<NAME>`
    (the server's `--model-path` and the generator's tokenizer in a cluster)."""
    return f"{mount_path.rstrip('/')}/hub/{repo_id}"


class Flag(enum.StrEnum):
    """Flags of `draftgen download`."""

    REPO = "--repo"
    REVISION = "--revision"
    TO = "--to"
    METRICS_PORT = "--metrics-port"
    REPORT = "--report"


@dataclass(frozen=True)
class DownloadArgs:
    """The options the operator passes to `draftgen download` (the token comes from $HF_TOKEN)."""

    repo: str
    to: str
    revision: str | None = None
    metrics_port: int | None = None
    report: str | None = None

    def argv(self) -> list[str]:
        return [COMMAND, Flag.REPO.value, self.repo, Flag.TO.value, self.to] + options(
            (Flag.REVISION, self.revision),
            (Flag.METRICS_PORT, self.metrics_port),
            (Flag.REPORT, self.report),
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(Flag.REPO.value, required=True, help="hub repository, ORG/NAME")
    parser.add_argument(Flag.TO.value, required=True, type=Path, help="directory to fill")
    parser.add_argument(
        Flag.REVISION.value, default=None, help="commit, branch or tag (default: main)"
    )
    parser.add_argument(
        Flag.METRICS_PORT.value,
        type=int,
        default=None,
        help="serve bytes done/total as Prometheus gauges on this port",
    )
    add_report_argument(parser, Flag.REPORT, "write the resolved commit")
