"""`draftgen export DIR --format FORMAT --out PATH`: records → what drafter trainers read,
without re-tokenizing anything. The export is built in a sibling directory and moved into place
at the end, so PATH is either the previous export or the complete new one."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

# The card's and the summary's names are the contract's: `draftgen generate` reads them back.
from draftgen.contract.export_cli import CARD_FILE, SUMMARY_FILE

from . import card
from .mix import parse_mix
from .records import ExportError, left_out_dirs, read_manifests
from .select import ExportOptions, ExportSummary, TrainerHint, export_rows
from .tokenizer import load_tokenizer, tokenizer_location

FORMATS = ("speculators", "specforge", "specforge-conversations", "parquet")
# The formats that decode text and so need the target model's tokenizer.
TEXT_FORMATS = ("speculators", "specforge-conversations")
RETOKENIZATION_WARNING = (
    "draftgen export: warning: --format specforge-conversations writes text, which SpecForge "
    "renders with its own chat template and tokenizes again: the ids it trains on can differ "
    "from what the model produced, prompts lose message fields other than role/content/"
    "tool_calls (Kimi's tool_declare turn among them) and every system message after the first, "
    "and without data.train_only_last_turn the prompt's earlier assistant turns are supervised "
    "too (docs/export.md). --format specforge writes the ids for data.prompts_path instead."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Optional here only so that `--mix a=0.5 b=2 DIR` parses: argparse's `--mix` takes DIR too,
    # and run() hands back the last word without `=` (see records_dir()).
    parser.add_argument(
        "dir", type=Path, nargs="?", help="output directory written by `draftgen generate`"
    )
    parser.add_argument(
        "--format",
        required=True,
        choices=FORMATS,
        help="speculators (input_ids + loss_mask JSONL), specforge (input_ids + loss_mask "
        "JSONL for SpecForge's data.prompts_path), specforge-conversations (conversations "
        "JSONL that SpecForge re-tokenizes; lossy), parquet (a Hugging Face datasets directory)",
    )
    parser.add_argument("--out", required=True, type=Path, help="export directory to write")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    parser.add_argument(
        "--include-truncated",
        action="store_true",
        help="keep samples that stopped at maxNewTokens (dropped by default)",
    )
    parser.add_argument(
        "--skip-degenerate",
        action="store_true",
        help="leave out replies caught in a loop (meta.degenerate; kept by default)",
    )
    parser.add_argument(
        "--mix",
        nargs="+",
        metavar="NAME=WEIGHT|NAME=tokens:N",
        help="per-dataset copies per sample (0.5 keeps half, 2 doubles) or a "
        "completion-token cap; unnamed datasets are carried once",
    )
    parser.add_argument(
        "--validation-fraction",
        type=float,
        default=0.0,
        metavar="F",
        help="share of sample ids in the validation split (default 0)",
    )
    parser.add_argument(
        "--split-seed",
        type=int,
        default=0,
        metavar="S",
        help="seed of the id hash behind the split and the mix (default 0)",
    )
    parser.add_argument(
        "--tokenizer",
        metavar="PATH",
        help="tokenizer for the text formats (default: the job manifest's model)",
    )
    parser.add_argument(
        "--specforge-text",
        action="store_true",
        help="specforge-conversations: write {id, text} rows (the rendered sequence, for "
        "SpecForge's data.is_preformatted) instead of conversations",
    )
    parser.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="allow the tokenizer's own code to run (Kimi's tokenizer needs it)",
    )


def options_from(args: argparse.Namespace) -> ExportOptions:
    if not 0.0 <= args.validation_fraction < 1.0:
        raise ExportError(
            f"--validation-fraction {args.validation_fraction}: give a number in [0, 1), e.g. 0.02"
        )
    return ExportOptions(
        include_truncated=args.include_truncated,
        skip_degenerate=args.skip_degenerate,
        mix=parse_mix(args.mix),
        validation_fraction=args.validation_fraction,
        split_seed=args.split_seed,
    )


def export(
    src: Path,
    export_format: str,
    out: Path,
    options: ExportOptions,
    tokenizer_path: str | None = None,
    trust_remote_code: bool = False,
    overwrite: bool = False,
    specforge_text: bool = False,
) -> ExportSummary:
    """Write one export; returns what went into it."""
    src, out = Path(src), Path(out)
    if out.exists() and not out.is_dir():
        raise ExportError(
            f"--out {out}: exists and is not a directory; choose another --out (--overwrite "
            "replaces an earlier export directory, never a file)"
        )
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise ExportError(
            f"{out} exists and is not empty; choose another --out or pass --overwrite"
        )
    if out.resolve() == src.resolve() or src.resolve() in out.resolve().parents:
        raise ExportError(f"--out {out} is inside the records directory {src}; write it elsewhere")
    from draftgen.output.lock import current_writer

    if (writer := current_writer(src)) is not None:
        print(
            f"draftgen export: warning: {src} is still being written ({writer}): this export "
            "holds the records written so far; export again when the run has ended",
            file=sys.stderr,
        )
    manifests = read_manifests(src)
    for gone in left_out_dirs(src):
        print(
            f"draftgen export: note: {gone} is left out: the job no longer has a dataset "
            f"{gone.name!r} ({src}/manifest.json)",
            file=sys.stderr,
        )
    for damaged in manifests.damaged:
        print(
            f"draftgen export: warning: {damaged}; left out, the export is built from the records",
            file=sys.stderr,
        )
    tokenizer = None
    if export_format in TEXT_FORMATS:
        tokenizer = load_tokenizer(
            tokenizer_location(src, manifests, tokenizer_path), trust_remote_code
        )

    staging = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        summary = ExportSummary()
        # The id formats carry a chain as one sample where its turns continue one another.
        merge = export_format in ("speculators", "specforge")
        rows = export_rows(src, replace(options, merge_chains=merge), summary)
        if export_format == "parquet":
            from . import parquet

            files = parquet.write(staging, rows)
            data_files = {s: f"data/{s}-*.parquet" for s in files}
        else:
            from . import specforge, specforge_conversations, speculators

            if export_format == "speculators":
                paths = speculators.write(staging, rows, tokenizer)
            elif export_format == "specforge":
                paths = specforge.write(staging, rows)
            else:
                paths = specforge_conversations.write(
                    staging, rows, tokenizer, preformatted=specforge_text
                )
            data_files = {s: p.name for s, p in paths.items()}
        if not data_files:
            read = sum(ds.samples for ds in summary.datasets.values())
            raise ExportError(
                f"nothing to export: {read} records read, none left after dropping truncated "
                "samples and applying the mix; check --mix or pass --include-truncated"
            )
        data_files = dict(sorted(data_files.items(), key=lambda kv: kv[0] != "train"))
        summary.trainer_hint = trainer_hint(
            export_format, out, summary, tokenizer, specforge_text, manifests.model
        )
        (staging / CARD_FILE).write_text(
            card.render(summary, manifests, options, data_files, export_format),
            encoding="utf-8",
        )
        (staging / SUMMARY_FILE).write_text(
            json.dumps(summary_json(summary, export_format), indent=2) + "\n", encoding="utf-8"
        )
        _move_into_place(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return summary


def trainer_hint(
    export_format: str,
    out: Path,
    summary: ExportSummary,
    tokenizer: Any,
    specforge_text: bool,
    model: str | None,
) -> TrainerHint | None:
    """What the trainer needs to take this export as it is: SpecForge's `data:` section, or
    speculators' `prepare-data` command with its `--seq-length`."""
    from . import specforge, specforge_conversations, speculators

    train_file = out.resolve() / "train.jsonl"
    config = "SpecForge run config (YAML)"
    if export_format == "specforge":
        return TrainerHint(config, "yaml", specforge.yaml_hint(train_file, summary.longest_row))
    if export_format == "specforge-conversations":
        template = specforge_conversations.specforge_template(tokenizer)
        text = specforge.conversations_yaml_hint(
            train_file, summary.longest_row, specforge_text, template
        )
        return TrainerHint(config, "yaml", text)
    if export_format == "speculators":
        text = speculators.prepare_data_hint(train_file, summary.longest_row, model)
        return TrainerHint("speculators prepare-data command", "sh", text)
    return None


def _move_into_place(staging: Path, out: Path) -> None:
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
    staging.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def summary_json(summary: ExportSummary, export_format: str) -> dict:
    return {
        "format": export_format,
        "torn_lines_skipped": summary.read.torn_lines,
        "longest_row_tokens": summary.longest_row,
        "datasets": {
            name: {
                "records": ds.samples,
                "prompt_tokens": ds.prompt_tokens,
                "completion_tokens": ds.completion_tokens,
                "finish_reasons": dict(ds.finish_reasons),
                "truncation_rate": ds.truncation_rate,
                "truncated_dropped": ds.truncated_dropped,
                "degenerate_dropped": ds.degenerate_dropped,
                "quality": ds.quality.as_dict(),
                "mixed_out": ds.mixed_out,
                "duplicates": ds.duplicates,
                "splits": {
                    s: {
                        "rows": c.samples,
                        "prompt_tokens": c.prompt_tokens,
                        "completion_tokens": c.completion_tokens,
                    }
                    for s, c in ds.splits.items()
                },
            }
            for name, ds in summary.datasets.items()
        },
    }


def records_dir(args: argparse.Namespace) -> Path:
    """DIR, also when `--mix` swallowed it (`--mix a=0.5 b=2 DIR`: the last word has no `=`)."""
    if args.dir is None and args.mix and "=" not in args.mix[-1]:
        args.dir = Path(args.mix.pop())
    if args.dir is None:
        raise ExportError("name the records directory: draftgen export DIR --format ... --out ...")
    return args.dir


def run(args: argparse.Namespace) -> int:
    try:
        records_dir(args)
        if args.specforge_text and args.format != "specforge-conversations":
            raise ExportError(
                "--specforge-text goes with --format specforge-conversations (--format "
                "specforge writes the ids, for SpecForge's data.prompts_path)"
            )
        if args.format == "specforge-conversations":
            print(RETOKENIZATION_WARNING, file=sys.stderr)
        summary = export(
            args.dir,
            args.format,
            args.out,
            options_from(args),
            args.tokenizer,
            args.trust_remote_code,
            args.overwrite,
            args.specforge_text,
        )
    except OSError as err:  # e.g. --out on a read-only filesystem (ExportError: draftgen.cli)
        raise ExportError(
            f"cannot write {err.filename or args.out} ({err.strerror}); choose a writable --out"
        ) from err
    for name, ds in summary.datasets.items():
        rows = " ".join(f"{s}={c.samples}" for s, c in ds.splits.items() if c.samples)
        print(
            f"{name}: {ds.samples} records, exported {rows or 'nothing'}; "
            f"{ds.truncated_dropped} dropped as truncated, {ds.mixed_out} left out by the mix"
        )
    if summary.read.torn_lines:
        print(
            f"skipped {len(summary.read.torn_lines)} torn last line(s): "
            f"{', '.join(summary.read.torn_lines)}"
        )
    print(f"wrote {args.format} export to {args.out}")
    if (hint := summary.trainer_hint) is not None:
        print(f"{hint.title}, also in the export's README.md:")
        print(hint.text)
    return 0
