"""`draftgen plan FILE` (or `-f FILE`, `-` for standard input): KV capacity, concurrency, host memory, headroom and ETA, before the
GPUs are booked (estimated) or from one observed start (measured), as text or `--json`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.job_argument import add_job_argument, job_files
from draftgen.spec import load_job_document
from draftgen.spec.server import KVCacheDtype

from .figures import PlanInputs
from .kvcache import MemoryInputError, parse_start_log
from .modelconfig import load_model_config
from .planner import build_plan
from .report import render_json, render_text


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} must be positive")
        return value

    return parse


MEASURED = "one observed start (replaces the estimate)"

# flag, parser, metavar, help, argument group (None: the main one). Each dest is the name of a
# PlanInputs field; `_AS_GIVEN` are the ones it takes unchanged.
_OPTIONS: tuple[tuple[str, Callable[[str], Any], str, str, str | None], ...] = (
    (
        "--model-config",
        Path,
        "PATH",
        "the model's config.json (or its directory); default: spec.model.configPath, else "
        "config.json in the weights",
        None,
    ),
    ("--gpu-memory-gib", _positive(float), "N", "memory of one GPU in GiB, for the estimate", None),
    (
        "--free-before-load-gib",
        _positive(float),
        "X",
        "`Load weight begin. avail mem=X GB` (minimum over ranks)",
        MEASURED,
    ),
    (
        "--free-after-load-gib",
        _positive(float),
        "Y",
        "`Load weight end. ... avail mem=Y GB` (minimum over ranks)",
        MEASURED,
    ),
    ("--from-log", Path, "FILE", "an SGLang startup log; its memory lines are read", MEASURED),
    (
        "--decode-tokens-per-second",
        _positive(float),
        "S",
        "decode speed of one request with the server full",
        None,
    ),
    ("--mean-prompt-tokens", _positive(int), "N", "mean prompt length for every dataset", None),
    (
        "--mean-completion-tokens",
        _positive(int),
        "N",
        "mean completion length for every dataset",
        None,
    ),
    (
        "--measured-throughput",
        _positive(float),
        "T",
        "observed completion tokens/s: ETA from it, and compared to the bound",
        None,
    ),
    ("--mem-fraction-static", float, "F", "plan for this fraction instead of the job's", None),
)
_AS_GIVEN = (
    "gpu_memory_gib",
    "free_before_load_gib",
    "free_after_load_gib",
    "decode_tokens_per_second",
    "mean_prompt_tokens",
    "mean_completion_tokens",
    "measured_throughput",
    "mem_fraction_static",
    "kv_cache_dtype",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_job_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    groups = {None: parser, MEASURED: parser.add_argument_group(MEASURED)}
    for flag, parse, metavar, text, group in _OPTIONS:
        groups[group].add_argument(flag, type=parse, metavar=metavar, help=text)
    parser.add_argument(
        "--kv-cache-dtype",
        choices=get_args(KVCacheDtype),
        help="plan for this KV dtype instead of the job's",
    )


def run(args: argparse.Namespace) -> int:
    # SpecError, ModelConfigError, MemoryInputError: reported and mapped by draftgen.cli.
    job, document = load_job_document(job_files(args)[0])
    if args.from_log and (args.free_before_load_gib or args.free_after_load_gib):
        print(
            "plan: give either --from-log or --free-before-load-gib/--free-after-load-gib, "
            "not both",
            file=sys.stderr,
        )
        return ExitCode.INVALID
    if args.mem_fraction_static is not None and not 0 < args.mem_fraction_static < 1:
        print(
            f"plan: --mem-fraction-static {args.mem_fraction_static} must be between 0 and 1",
            file=sys.stderr,
        )
        return ExitCode.INVALID
    try:
        inputs = PlanInputs(
            base_dir=document.base_dir,
            model_config=load_model_config(args.model_config) if args.model_config else None,
            start_log=parse_start_log(_read(args.from_log)) if args.from_log else None,
            **{name: getattr(args, name) for name in _AS_GIVEN},
        )
        plan = build_plan(job, inputs)
    except OSError as err:
        print(f"plan: {err}", file=sys.stderr)
        return ExitCode.INVALID
    sys.stdout.write(render_json(plan) if args.json else render_text(plan))
    return 0


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise MemoryInputError(f"{path}: cannot read the log ({err.strerror})") from None
