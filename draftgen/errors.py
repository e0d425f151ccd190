"""The root of draftgen's errors: every exception the product raises on purpose is a
`DraftgenError` that carries the command's exit code (`ExitCode`) and a one-line fix. The
`draftgen` command line maps them to exit codes in one place (`draftgen.cli.main`), printing
`report()`'s lines; tests/layout/test_errors.py walks every subclass.

    DraftgenError                  exit_code, fix, report()
     ├── RunError                  a `draftgen generate` run cannot go on
     │    ├── OutputLocked         output/lock.py: another run writes to the output      6
     │    ├── SpecChanged          output/fingerprint.py: the job changed under a resume  3
     │    ├── NewerSchema          output/manifest.py: written by a newer draftgen         2
     │    ├── ServersDown          generator/sglang/fleet.py: no server became healthy    4
     │    ├── NotSGLang            generator/sglang/health.py: --server is not SGLang         2
     │    └── ServeError           serving.py: the server --serve started failed          4
     │         └── PortTaken        serving.py: its port is taken before the start         4
     ├── the job and its inputs (exit 2 unless marked)
     │    ├── SpecError            spec/load.py: the job file's fields
     │    ├── StrictYAMLError      spec/yaml_strict.py: duplicate keys, anchors, tags
     │    ├── UnknownField         spec/reference.py: `draftgen explain` of no field
     │    ├── ModelLocationError   contract/model_location.py: spec.model.weights
     │    ├── ArgumentProblem      generator/arguments.py: a flag of `draftgen generate`
     │    ├── SourceError          generator/rows/sources.py: a dataset's source
     │    ├── RowError             generator/rows/conversation.py: a row (recorded as a reject)
     │    ├── JsonLimitError       safe_json.py: a row too large or deep (a reject)
     │    ├── TokenizerError       generator/prompts/tokenizer.py: no loadable tokenizer
     │    ├── UnknownReplyFamily   generator/prompts/replies: no reply parser fits the model
     │    ├── IntegrityError       generator/prompts/integrity.py: the data would be wrong  3
     │    └── InputsRefused        generator/prompts/input_preflight.py: the preflight failed
     │                             (its exit code per instance: 2 a dataset, 3 the tokenizer)
     ├── the planner (exit 2)
     │    ├── ModelConfigError     plan/modelconfig.py: the model's config.json
     │    ├── MemoryInputError     plan/kvcache.py: the GPU memory given
     │    └── LayoutNotPlanned     plan/layouts.py: a layout the planner cannot size
     ├── the output and its readers
     │    ├── DiskFull             output/writer.py: the output volume is full (also OSError)  5
     │    ├── ManifestDamaged      output/manifest.py: a manifest is not a JSON object     2
     │    ├── BadRecord            output/record.py: a line that is not draftgen's record   2
     │    ├── ExportError          export/records.py: `draftgen export` cannot go on        2
     │    │    └── ManifestDamaged export/records.py: the run's manifest is unreadable      2
     │    ├── ExportFailed         generator/exports.py: a spec.exports entry failed        8
     │    └── ResultError          contract/export_cli.py: an export's result message       2
     ├── talking to servers
     │    ├── SGLangError          generator/sglang/client.py: a request failed             1
     │    │    ├── ServerUnavailable   unreachable or 5xx (retried)                         4
     │    │    ├── RequestTimeout      no answer in time (retried)                          4
     │    │    ├── BadResponse         refused or not a generation                          3
     │    │    └── Aborted             the server aborted it (retried)                      1
     │    ├── ServerInfoError      contract/server_info.py: `/get_server_info` unreadable   3
     │    ├── PageError            contract/metrics.py: not a Prometheus page               2
     │    ├── NoCluster            top/sources.py: no cluster to watch                      2
     │    └── TargetError          top/cli.py: `draftgen top`'s target                      2
     ├── the operator
     │    ├── KubeError            controller/kube.py: the API server refused a call        1
     │    ├── NotOwned             controller/ownership.py: a foreign object holds a name   2
     │    └── UndeclaredTransition controller/phases.py: a phase change the table lacks     1
     ├── _Stop                     commands/serve.py: a signal stops `draftgen serve`     143
     └── the project's own tools
          ├── StaleDoc             contract/metrics_doc.py: docs/metrics.md is stale        2
          └── SGLangServerError    testing/sglang.py: the test server did not start         1

`ExitCode` is the table of every command's exit codes (`draftgen -h` prints it; the operator reads
a generator Job's code against it, `contract/generator_cli.py`'s `FATAL_EXIT_CODES`).

Classes that other code catches by a builtin type keep it as a second base (`ValueError` for
pydantic validators and parsers, `OSError` for `DiskFull`, `KeyError` for `UnknownField`).
"""

from __future__ import annotations

import enum

__all__ = ["DraftgenError", "ExitCode", "RunError"]


class ExitCode(enum.IntEnum):
    """The exit codes of every `draftgen` command (docs/cli.md has the table); each member's
    docstring is what `-h` prints for it. `generate` can return any of them; `validate`, `plan`,
    `export`, `stats` and `operator --render` return 0, 2 (refused: the message names the field
    or flag and the fix), 3 (`validate --tokenizer`: an integrity check) or 141."""

    def __new__(cls, value: int, doc: str) -> ExitCode:
        member = int.__new__(cls, value)
        member._value_ = value
        member.__doc__ = doc
        return member

    OK = 0, "done (generate: every dataset met its budget or ran out of rows)"
    UNEXPECTED = 1, "unexpected error (a bug: please report it with the log)"
    INVALID = 2, "the job file, its inputs or the arguments are invalid (the message says the fix)"
    INTEGRITY = (
        3,
        ("integrity check refused to start: the data would be wrong (tokenizer, template, server)"),
    )
    SERVERS_DOWN = 4, "no server became healthy"
    DISK_FULL = (
        5,
        ("the output volume is full; free space and run the same command again to resume"),
    )
    OUTPUT_LOCKED = (
        6,
        (
            "another run writes to this output directory (its pid and host are named); wait "
            "for it to end or use another --output"
        ),
    )
    HUB_UNREACHABLE = (
        7,
        "the model hub could not be reached or broke off; run again: it fetches only what is missing",
    )
    EXPORT_FAILED = (
        8,
        (
            "every dataset is done but an export of spec.exports failed (named in the log); the "
            "records are complete"
        ),
    )
    SIGINT = 130, "interrupted (SIGINT); run the same command again to resume"
    PIPE_CLOSED = (
        141,
        "standard output was closed early (`| head`): not an error of the command",
    )
    SIGTERM = 143, "terminated (SIGTERM); run the same command again to resume"


class DraftgenError(Exception):
    """An error draftgen expects and explains: the command exits with `exit_code`; `fix` is the
    one line that says what to do (the message itself names the field, file or flag)."""

    exit_code: ExitCode = ExitCode.UNEXPECTED
    fix: str = "read the message: it names what to change"

    def report(self) -> list[str]:
        """The lines the command prints (to stderr, or into its log) before it exits."""
        return [str(self)]


class RunError(DraftgenError):
    """The run cannot go on; `exit_code` tells the caller why (see `draftgen generate -h`)."""

    fix = "read the message: it names what stopped the run"
