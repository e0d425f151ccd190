"""`draftgen validate`: every check the operator makes, before you apply.

By default the cluster's rules: the operator's own `check` (draftgen.controller.validate: the
typed spec, the claims a cluster needs, the admin's policy from `DRAFTGEN_OPERATOR_*` variables),
so `validate` and the operator refuse the same specs. `--local` applies the rules of a local
`draftgen generate` run instead (no claims or model volume needed), and its cheap checks
(validate_local.py: sources there and readable, a tokenizer in the model directory); the
server's rules (tensorParallelSize against the model's heads) only with `--serve`, where draftgen
starts the server. `maxNewTokens` reaching the model's context is refused under both. Each
document ends with one verdict line; a file with two GenerationJobs is refused under `--local`
(`generate` reads one).

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
        "--serve",
        action="store_true",
        help="with --local: draftgen starts the server (`draftgen serve`, `generate --serve`), "
        "so the server's rules apply too (tensorParallelSize against the model's heads)",
    )
    parser.add_argument(
        "--spec-only",
        action="store_true",
        help="only the spec's rules: not the cheap checks of --local (sources exist and are "
        "readable, the model directory holds a tokenizer, maxNewTokens below the context)",
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


def problems_of(
    doc: JobDocument, local: bool, serve: bool = False
) -> tuple[GenerationJob | None, list[str]]:
    """(the job, every problem of its spec) under the local or the cluster rules; the server's
    rules only where draftgen starts the server (a cluster, or a local run with `serve`)."""
    try:
        job: GenerationJob | None = parse_job(doc.data, doc.source)
        problems: list[str] = []
    except SpecError as err:
        job, problems = None, err.problems
    if not local:  # the operator's own words for the spec; the document's other parts stay
        problems = [p for p in problems if not p.startswith("spec")]
        problems += [p for p in cluster_problems(doc) if p not in problems]
    if job is None or (local and not serve):
        return job, problems
    for problem in (check_sharding(job, doc.base_dir), check_layout(job, doc.base_dir)):
        if problem is not None:
            problems.append(problem)
    return job, problems


def _tokenizer_status(doc: JobDocument, job: GenerationJob) -> ExitCode:
    from draftgen.generator.prompts.integrity import IntegrityError
    from draftgen.generator.prompts.pretokenize import TokenizerError

    try:
        print(f"  {check_tokenizer(job, doc.base_dir)}")
    except (TokenizerError, IntegrityError) as err:  # per file: the other files are checked too
        print(f"{doc.source}: {err}", file=sys.stderr)
        return err.exit_code
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


def _budgets(job: GenerationJob) -> str:
    """Each dataset's limits as numbers (`10M` → `10,000,000`)."""
    from draftgen.spec.quantity import normalized

    parts = []
    for ds in job.spec.datasets:
        b = ds.budget
        limits = [
            f"{name} {normalized(value)}"
            for name, value in (
                ("completionTokens", b.completion_tokens),
                ("totalTokens", b.total_tokens),
                ("maxSamples", b.max_samples),
            )
            if value is not None
        ]
        parts.append(f"{ds.name} " + (", ".join(limits) if limits else "every row"))
    return "; ".join(parts)


def _one_job_per_file(path: str, docs: list[JobDocument]) -> str | None:
    """A local run reads one GenerationJob from its file: a second one would be ignored."""
    if len(docs) < 2:
        return None
    names = ", ".join(str(d.data.get("metadata", {}).get("name", "?")) for d in docs)
    return (
        f"{path}: {len(docs)} GenerationJobs ({names}); `draftgen generate` runs the first "
        "only: put each job in its own file"
    )


def _check(doc: JobDocument, args: argparse.Namespace, rules: str, path: str) -> ExitCode:
    """Every check of one document, then its one verdict line."""
    job, problems = problems_of(doc, args.local, args.serve)
    if job is not None and not problems and not args.spec_only:
        from draftgen.commands import validate_local as cheap

        # --inputs and --tokenizer make the deeper checks of the same things, in their words.
        if args.local and not args.inputs:
            problems += cheap.source_problems(job, doc.base_dir)
        if args.local and not (args.inputs or args.tokenizer):
            problems += cheap.tokenizer_problems(job, doc.base_dir)
        problems += cheap.context_problems(job, doc.base_dir)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        hint = ""
        if job is not None and not args.local and not problems_of(doc, True)[1]:
            hint = f"\n  (valid for a local run: draftgen validate --local {path})"
        print(f"{doc.source}: GenerationJob is invalid ({rules}):\n{lines}{hint}", file=sys.stderr)
        return ExitCode.INVALID
    assert job is not None
    for warning in job.spec.warnings():
        print(f"  warning: spec.{warning}")
    status = ExitCode.OK
    if args.tokenizer:
        status = max(status, _tokenizer_status(doc, job))
    if args.inputs:
        status = max(status, _inputs_status(doc, job))
    if status != ExitCode.OK:
        print(
            f"{doc.source}: GenerationJob {job.metadata.name} is invalid ({rules}): "
            "the check above failed",
            file=sys.stderr,
        )
        return status
    print(
        f"{doc.source}: GenerationJob {job.metadata.name} is valid under the {rules} "
        f"({len(job.spec.datasets)} datasets; budgets: {_budgets(job)})"
    )
    return status


def run(args: argparse.Namespace) -> int:
    status = ExitCode.OK
    rules = "local rules" if args.local else "cluster rules"
    if args.serve:
        rules = "local rules, server started by draftgen"
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
        several = _one_job_per_file(path, docs) if args.local else None
        if several is not None:
            print(several, file=sys.stderr)
            status = ExitCode.INVALID
            continue
        for doc in docs:
            status = max(status, _check(doc, args, rules, path))
    return status
