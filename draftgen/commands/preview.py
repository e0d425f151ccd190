"""`draftgen preview JOB [--dataset NAME] [-n N]`: the first samples' prompts exactly as they
will be sent, read through the generator's own input side (parsers, selection, chat template,
generation prefix): the text with every special token marked `[[...]]`, the ids and their
count, the thinking settings and whether the prompt ends with the generation prefix, and the
tools declared. The check docs/models.md asks for before a long run, without a server."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.job_argument import add_inputs_argument, add_job_argument, job_files

MARK = "[[{}]]"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_job_argument(parser)
    add_inputs_argument(parser)
    parser.add_argument("--dataset", metavar="NAME", help="only this dataset (default: each)")
    parser.add_argument("-n", type=int, default=1, help="samples per dataset (default 1)")
    parser.add_argument(
        "--no-ids", action="store_true", help="leave out the id list (the count stays)"
    )


def marked_text(tokenizer: Any, ids: list[int], special: set[int]) -> str:
    """The prompt as text, each special token's text in `[[...]]` so none passes for text."""
    out: list[str] = []
    run: list[int] = []
    for token in ids:
        if token in special:
            if run:
                out.append(tokenizer.decode(run))
                run = []
            out.append(MARK.format(tokenizer.decode([token])))
        else:
            run.append(token)
    if run:
        out.append(tokenizer.decode(run))
    return "".join(out)


def special_ids(tokenizer: Any, declared: dict[str, int]) -> set[int]:
    """The tokenizer's special and added-special tokens, and the job's `model.specialTokens`."""
    ids = set(getattr(tokenizer, "all_special_ids", []) or [])
    for token_id, added in (getattr(tokenizer, "added_tokens_decoder", {}) or {}).items():
        if getattr(added, "special", False):
            ids.add(int(token_id))
    return ids | set(declared.values())


def run(args: argparse.Namespace) -> int:
    from draftgen.generator.prompts.inputs import iter_samples
    from draftgen.generator.prompts.integrity import IntegrityError
    from draftgen.generator.prompts.pretokenize import TokenizerError, open_tokenizer
    from draftgen.generator.prompts.samples import Reject
    from draftgen.generator.rows.sources import SourceError
    from draftgen.spec import SpecError, load_job_document

    try:
        job, document = load_job_document(job_files(args)[0])
    except SpecError as err:
        print(err, file=sys.stderr)
        return ExitCode.INVALID
    datasets = [d for d in job.spec.datasets if args.dataset in (None, d.name)]
    if not datasets:
        names = ", ".join(d.name for d in job.spec.datasets)
        print(f"--dataset {args.dataset}: no such dataset; the job has {names}", file=sys.stderr)
        return ExitCode.INVALID
    base_dir = (args.inputs or document.base_dir).resolve()
    model = job.spec.model
    try:
        with open_tokenizer(job, base_dir, workers=0) as ctx:
            tok = ctx.tokenizer
            marks = special_ids(tok, ctx.special_token_ids)
            prefix = ctx.settings.prefix_ids
            print(f"model {model.tokenizer_location}: {len(tok)} ids")
            print(f"thinking: chatTemplateKwargs {json.dumps(dict(model.chat_template_kwargs))}")
            print(
                f"generation prefix: {model.generation_prefix!r} = ids {list(prefix)}"
                if prefix
                else "generation prefix: none"
            )
            for ds in datasets:
                shown = 0
                for item in iter_samples(job, ds, base_dir=base_dir, tokenizer_ctx=ctx):
                    if isinstance(item, Reject):
                        print(f"\n{ds.name} row {item.source_index}: rejected as {item.reason}: "
                              f"{item.detail}")  # fmt: skip
                        continue
                    _print_sample(ds.name, ds.format, item, tok, marks, prefix, not args.no_ids)
                    shown += 1
                    if shown >= args.n:
                        break
                if shown == 0:
                    print(f"\n{ds.name}: no sample (every row read was rejected, or none)")
    except (SourceError, TokenizerError) as err:
        print(err, file=sys.stderr)
        return ExitCode.INVALID
    except IntegrityError as err:
        print(err, file=sys.stderr)
        return ExitCode.INTEGRITY
    return ExitCode.OK


def _print_sample(
    name: str, fmt: str, sample: Any, tok: Any, marks: set[int], prefix: tuple, ids: bool
) -> None:
    info = sample.info
    ends = (
        "ends with the generation prefix"
        if prefix and list(sample.input_ids[-len(prefix) :]) == list(prefix)
        else ("does NOT end with the generation prefix" if prefix else "")
    )
    tools = info.get("num_tools", 0)
    print(f"\n=== {name} ({fmt}) sample {sample.id}: row {sample.source_index}, turn {sample.turn}")
    print(f"prompt: {len(sample.input_ids)} tokens{'; ' + ends if ends else ''}")
    if tools:
        fallback = info.get("tool_fallback")
        how = f"in a fallback form ({fallback})" if fallback else "in the model's own format"
        print(f"tools: {tools} declared {how}")
    else:
        print("tools: none")
    print("--- text (special tokens in [[...]]) ---")
    print(marked_text(tok, list(sample.input_ids), marks))
    if ids:
        print("--- ids ---")
        print(" ".join(str(i) for i in sample.input_ids))
