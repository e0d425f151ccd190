"""`draftgen`: one command line for every part. Each command lives in its own module and is
imported only when it runs, so `draftgen crd` does not pay for transformers or kopf."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from draftgen.contract.generator_cli import ExitCode, exit_codes_epilog
from draftgen.errors import DraftgenError

# name → (module with add_arguments(parser) and run(args) -> int, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("draftgen.commands.validate", "check a GenerationJob file and print its warnings"),
    "explain": ("draftgen.commands.explain", "print one spec field's documentation, offline"),
    "crd": ("draftgen.commands.crd", "print the GenerationJob CRD generated from the typed spec"),
    "plan": ("draftgen.plan.cli", "KV capacity, concurrency, host memory, headroom and ETA"),
    "preview": (
        "draftgen.commands.preview",
        "print the first samples' prompts as they will be sent",
    ),
    "preflight": ("draftgen.commands.preflight", "check a job's inputs and tokenizer, no server"),
    "download": ("draftgen.commands.download", "fetch hf:// weights into a directory, resumably"),
    "serve": (
        "draftgen.commands.serve",
        "start SGLang for a job as the operator would, no cluster",
    ),
    "generate": ("draftgen.generator.cli", "run a GenerationJob against SGLang servers"),
    "stats": ("draftgen.commands.stats", "summarise an output directory per dataset"),
    "top": ("draftgen.top.cli", "live view of a running job: cluster, metrics URL or directory"),
    "export": ("draftgen.export.cli", "convert records for drafter trainers"),
    "operator": ("draftgen.controller.cli", "run the Kubernetes operator"),
}


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(
        prog="draftgen",
        description="Generate drafter training data token for token from an SGLang-served model.",
    )
    parser.add_argument("--version", action="version", version=f"draftgen {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers = {}
    for name, (_, help_text) in COMMANDS.items():
        # One exit-code table for every command (docs/reference.md#exit-codes-every-command).
        subparsers[name] = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=exit_codes_epilog(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
    return parser, subparsers


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("draftgen")
    except PackageNotFoundError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # transformers' "PyTorch was not found" advice: draftgen only ever loads tokenizers.
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    parser, subparsers = _parser()
    chosen = next((a for a in argv if not a.startswith("-")), None)
    module = None
    if chosen in COMMANDS:
        module = importlib.import_module(COMMANDS[chosen][0])
        module.add_arguments(subparsers[chosen])
    args = parser.parse_args(argv)
    if module is None:
        parser.print_help()
        return ExitCode.INVALID
    try:
        code = int(module.run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at exit where it cannot be caught
        return code
    except DraftgenError as err:
        # The one place an error becomes an exit code, for every command (draftgen/errors.py).
        _report(err, getattr(args, "error_log", None))
        return err.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return ExitCode.SIGINT
    except BrokenPipeError:
        # `draftgen stats --json | head -1`: the reader has all it wanted. Point stdout at
        # /dev/null so the interpreter's final flush does not print a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return ExitCode.PIPE_CLOSED


def _report(err: DraftgenError, log: logging.Logger | None) -> None:
    """The error's lines: into the command's log once it set one up (`generate` leaves its
    logger in `args.error_log`), else plainly on stderr."""
    for line in err.report():
        if log is not None:
            log.error("%s", line)
        else:
            print(line, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
