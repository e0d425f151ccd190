"""`draftgen validate`: the same checks the operator and the generator make, before you apply.

With `--tokenizer`, also load each job's tokenizer here and run the generator's start-up checks on
it (special tokens, chat template, generation prefix), so a tokenizer that cannot load (a missing
package its own code imports, trustRemoteCode unset, a wrong path) shows before any server starts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from draftgen.spec import GenerationJob, SpecError, load_job


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", nargs="+", help="GenerationJob YAML files")
    parser.add_argument(
        "--tokenizer",
        action="store_true",
        help="also load each job's tokenizer (relative paths resolve from the job "
        "file's directory) and run the generator's start-up checks on it",
    )
    parser.add_argument(
        "--inputs",
        action="store_true",
        help="run the preflight here: open every dataset, read its first rows through the "
        "parsers and the tokenizer (as the operator's preflight Job and `generate` do)",
    )


def check_tokenizer(job: GenerationJob, base_dir: Path) -> str:
    """Load the tokenizer as the generator does; a one-line summary, or TokenizerError /
    IntegrityError with the generator's own message."""
    from draftgen.generator.pretokenize import open_tokenizer

    with open_tokenizer(job, base_dir, workers=0) as ctx:
        tok = ctx.tokenizer
        return f"tokenizer {type(tok).__name__} loads: {len(tok)} ids, chat template checked"


def check_sharding(job: GenerationJob, base_dir: Path) -> str | None:
    """When the model's config.json is readable here: the planner's refusal of a
    tensorParallelSize that does not divide the attention heads, else None."""
    from draftgen.plan.modelconfig import ModelConfigError, config_location, load_model_config
    from draftgen.plan.planner import check_tensor_parallel

    path = config_location(job.spec.model.config_path, job.spec.model.weights, base_dir)
    if path is None or not path.exists():
        return None
    try:
        model = load_model_config(path)
    except ModelConfigError:
        return None  # no readable config here: `draftgen plan` reports that
    try:
        check_tensor_parallel(model, job.spec.server.tensor_parallel_size)
    except ModelConfigError as err:
        return str(err)
    return None


def run(args: argparse.Namespace) -> int:
    status = 0
    for path in args.job:
        try:
            job = load_job(path)
        except SpecError as err:
            print(err, file=sys.stderr)
            status = 1
            continue
        sharding = check_sharding(job, Path(path).resolve().parent)
        if sharding is not None:
            print(f"{path}: GenerationJob is invalid:\n  - {sharding}", file=sys.stderr)
            status = 1
            continue
        print(
            f"{path}: GenerationJob {job.metadata.name} is valid "
            f"({len(job.spec.datasets)} datasets)"
        )
        for warning in job.spec.warnings():
            print(f"  warning: {warning}")
        if args.tokenizer:
            from draftgen.generator.integrity import IntegrityError
            from draftgen.generator.pretokenize import TokenizerError

            try:
                print(f"  {check_tokenizer(job, Path(path).resolve().parent)}")
            except (TokenizerError, IntegrityError) as err:
                print(f"{path}: {err}", file=sys.stderr)
                status = 1
        if args.inputs:
            from draftgen.generator.input_preflight import preflight, problems, summary_lines

            report, _ = preflight(job, Path(path).resolve().parent)
            print("\n".join(f"  {line}" for line in summary_lines(report)))
            for problem in problems(report):
                print(f"{path}: {problem}", file=sys.stderr)
            status = status or (0 if report.passed else 1)
    return status
