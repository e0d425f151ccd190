"""`draftgen plan FILE` (or `-f FILE`, `-` for standard input): KV capacity, concurrency, host memory, headroom and ETA, before the
GPUs are booked (estimated) or from one observed start (measured), as text or `--json`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import get_args

from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.job_argument import add_job_argument, job_files
from draftgen.spec import SpecError, load_job_document
from draftgen.spec.server import KVCacheDtype

from .figures import PlanInputs
from .kvcache import MemoryInputError, parse_start_log
from .modelconfig import ModelConfigError, load_model_config
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_job_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.add_argument(
        "--model-config",
        type=Path,
        metavar="PATH",
        help="the model's config.json (or its directory); default: "
        "spec.model.configPath, else config.json in the weights",
    )
    parser.add_argument(
        "--gpu-memory-gib",
        type=_positive(float),
        metavar="N",
        help="memory of one GPU in GiB, for the estimate",
    )
    measured = parser.add_argument_group("one observed start (replaces the estimate)")
    measured.add_argument(
        "--free-before-load-gib",
        type=_positive(float),
        metavar="X",
        help="`Load weight begin. avail mem=X GB` (minimum over ranks)",
    )
    measured.add_argument(
        "--free-after-load-gib",
        type=_positive(float),
        metavar="Y",
        help="`Load weight end. ... avail mem=Y GB` (minimum over ranks)",
    )
    measured.add_argument(
        "--from-log",
        type=Path,
        metavar="FILE",
        help="an SGLang startup log; its memory lines are read",
    )
    parser.add_argument(
        "--decode-tokens-per-second",
        type=_positive(float),
        metavar="S",
        help="decode speed of one request with the server full",
    )
    parser.add_argument(
        "--mean-prompt-tokens",
        type=_positive(int),
        metavar="N",
        help="mean prompt length for every dataset",
    )
    parser.add_argument(
        "--mean-completion-tokens",
        type=_positive(int),
        metavar="N",
        help="mean completion length for every dataset",
    )
    parser.add_argument(
        "--measured-throughput",
        type=_positive(float),
        metavar="T",
        help="observed completion tokens/s: ETA from it, and compared to the bound",
    )
    parser.add_argument(
        "--mem-fraction-static",
        type=float,
        metavar="F",
        help="plan for this fraction instead of the job's",
    )
    parser.add_argument(
        "--kv-cache-dtype",
        choices=get_args(KVCacheDtype),
        help="plan for this KV dtype instead of the job's",
    )


def run(args: argparse.Namespace) -> int:
    try:
        job, document = load_job_document(job_files(args)[0])
    except SpecError as err:
        print(err, file=sys.stderr)
        return ExitCode.INVALID
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
            gpu_memory_gib=args.gpu_memory_gib,
            free_before_load_gib=args.free_before_load_gib,
            free_after_load_gib=args.free_after_load_gib,
            start_log=parse_start_log(_read(args.from_log)) if args.from_log else None,
            decode_tokens_per_second=args.decode_tokens_per_second,
            mean_prompt_tokens=args.mean_prompt_tokens,
            mean_completion_tokens=args.mean_completion_tokens,
            measured_throughput=args.measured_throughput,
            mem_fraction_static=args.mem_fraction_static,
            kv_cache_dtype=args.kv_cache_dtype,
        )
        plan = build_plan(job, inputs)
    except (ModelConfigError, MemoryInputError, OSError) as err:
        print(f"plan: {err}", file=sys.stderr)
        return ExitCode.INVALID
    sys.stdout.write(render_json(plan) if args.json else render_text(plan))
    return 0


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise MemoryInputError(f"{path}: cannot read the log ({err.strerror})") from None
