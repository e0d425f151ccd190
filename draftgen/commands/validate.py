"""`draftgen validate`: every check the operator makes, before you apply.

By default the cluster's rules: the operator's own `check` (draftgen.controller.validate: the
typed spec, the claims a cluster needs, the admin's policy from `DRAFTGEN_OPERATOR_*` variables),
so `validate` and the operator refuse the same specs. `--local` applies the rules of a local
`draftgen generate` run instead (no claims or model volume needed).

Jobs are named as for every command (`FILE`, `-f FILE`, `-` for standard input); a file may hold
many documents: each GenerationJob is validated, other kinds are skipped, so
`helm template ... | draftgen validate -f -` checks a whole chart's jobs.

With `--tokenizer`, also load each job's tokenizer here and run the generator's start-up checks on
it (special tokens, chat template, generation prefix), so a tokenizer that cannot load (a missing
package its own code imports, trustRemoteCode unset, a wrong path) shows before any server starts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.job_argument import add_job_argument, job_files
from draftgen.spec import GenerationJob, JobDocument, SpecError, job_documents, parse_job


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_job_argument(parser, many=True)
    parser.add_argument(
        "--local",
        action="store_true",
        help="the rules of a local `draftgen generate` run (no claims or model volume needed) "
        "instead of the cluster's",
    )
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
    from draftgen.generator.prompts.pretokenize import open_tokenizer

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


def check_layout(job: GenerationJob, base_dir: Path) -> str | None:
    """When the planner can tell (the model's config and free memory known here): why the
    server's attention layout cannot start, or its one rank's pool cannot hold the longest
    request; else None."""
    from draftgen.plan.layout_stage import rank_fit_problem
    from draftgen.plan.planner import PlanInputs, build_plan

    server = job.spec.server
    if server.attention_data_parallel_size == 1 and server.decode_context_parallel_size == 1:
        return None
    try:
        plan = build_plan(job, PlanInputs(base_dir=base_dir))
    except ValueError:  # MemoryInputError, ModelConfigError: `draftgen plan` reports them
        return None
    row = next((r for r in plan.layouts if r.current), None)
    if row is not None and row.status == "cannot start":
        return (
            f"spec.server.attentionDataParallelSize: {row.layout.label()} cannot start: "
            f"{row.reason} (draftgen plan prints every layout)"
        )
    return rank_fit_problem(plan, job)


def cluster_problems(doc: JobDocument) -> list[str]:
    """What the operator would refuse in this document: its admission check (the webhook's:
    the spec, the claims a cluster needs, the admin's policy from its settings, the name)."""
    from draftgen.controller.settings import OperatorSettings
    from draftgen.controller.validate import admission_problems

    return admission_problems(doc.data, OperatorSettings.from_env())


def problems_of(doc: JobDocument, local: bool) -> tuple[GenerationJob | None, list[str]]:
    """(the job, every problem) under the local or the cluster rules."""
    try:
        job: GenerationJob | None = parse_job(doc.data, doc.source)
        problems: list[str] = []
    except SpecError as err:
        job, problems = None, err.problems
    if not local:  # the operator's own words for the spec; the document's other parts stay
        problems = [p for p in problems if not p.startswith("spec")]
        problems += [p for p in cluster_problems(doc) if p not in problems]
    if job is None:
        return None, problems
    for problem in (check_sharding(job, doc.base_dir), check_layout(job, doc.base_dir)):
        if problem is not None:
            problems.append(problem)
    return job, problems


def _tokenizer_status(doc: JobDocument, job: GenerationJob) -> ExitCode:
    from draftgen.generator.prompts.integrity import IntegrityError
    from draftgen.generator.prompts.pretokenize import TokenizerError

    try:
        print(f"  {check_tokenizer(job, doc.base_dir)}")
    except TokenizerError as err:
        print(f"{doc.source}: {err}", file=sys.stderr)
        return ExitCode.INVALID
    except IntegrityError as err:
        print(f"{doc.source}: {err}", file=sys.stderr)
        return ExitCode.INTEGRITY
    return ExitCode.OK


def _inputs_status(doc: JobDocument, job: GenerationJob) -> ExitCode:
    """The preflight here (as the operator's preflight Job and `generate` run it); its exit
    code is the one `draftgen preflight` would give (2 a dataset, 3 the tokenizer)."""
    from draftgen.generator.prompts.input_preflight import preflight, problems, summary_lines

    report, code = preflight(job, doc.base_dir)
    print("\n".join(f"  {line}" for line in summary_lines(report)))
    for problem in problems(report):
        print(f"{doc.source}: {problem}", file=sys.stderr)
    return ExitCode.OK if report.passed else code


def run(args: argparse.Namespace) -> int:
    status = ExitCode.OK
    rules = "local rules" if args.local else "cluster rules"
    for path in job_files(args):
        try:
            docs = job_documents(path)
        except SpecError as err:
            print(err, file=sys.stderr)
            status = ExitCode.INVALID
            continue
        if not docs:
            print(f"{path}: no document of kind GenerationJob", file=sys.stderr)
            status = ExitCode.INVALID
        for doc in docs:
            job, problems = problems_of(doc, args.local)
            if problems:
                lines = "\n".join(f"  - {p}" for p in problems)
                hint = ""
                if job is not None and not args.local and not problems_of(doc, True)[1]:
                    hint = f"\n  (valid for a local run: draftgen validate --local {path})"
                print(
                    f"{doc.source}: GenerationJob is invalid ({rules}):\n{lines}{hint}",
                    file=sys.stderr,
                )
                status = ExitCode.INVALID
                continue
            assert job is not None
            print(
                f"{doc.source}: GenerationJob {job.metadata.name} is valid under the {rules} "
                f"({len(job.spec.datasets)} datasets)"
            )
            for warning in job.spec.warnings():
                print(f"  warning: spec.{warning}")
            if args.tokenizer:
                status = max(status, _tokenizer_status(doc, job))
            if args.inputs:
                status = max(status, _inputs_status(doc, job))
    return status
