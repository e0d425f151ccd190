"""Reading a GenerationJob from YAML, with errors that name the field and the fix."""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError

from .job import GenerationJob
from .yaml_strict import StrictYAMLError, load_all


class SpecError(DraftgenError, ValueError):
    """A GenerationJob was refused; `problems` holds one message per broken field."""

    exit_code = ExitCode.INVALID
    fix = "fix each field named; `draftgen explain FIELD` documents it"

    def __init__(self, problems: list[str], source: str = "GenerationJob") -> None:
        self.problems = problems
        self.source = source
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source} is invalid:\n{lines}")


STDIN = "-"
"""The file name that means standard input (`helm template ... | draftgen validate -f -`)."""


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The spec model whose fields sit at `loc` (`('spec', 'server')` → ServerSpec), or None."""
    model: Any = GenerationJob
    for part in loc:
        if isinstance(part, int) or str(part).startswith("function-"):
            continue
        field = _field_named(model, str(part))
        if field is None:
            return None
        model = _model_in(field.annotation)
        if model is None:
            return None
    return model


def _field_named(model: type[BaseModel], name: str) -> Any:
    for py_name, field in model.model_fields.items():
        if name in (py_name, field.alias):
            return field
    return None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The first pydantic model inside `X | None`, `list[X]`, `dict[str, X]`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def suggest_field(loc: tuple[Any, ...]) -> str | None:
    """For an unknown field at `loc`, the closest field name the spec has there, or None."""
    model = _model_at(loc[:-1])
    if model is None:
        return None
    names = [f.alias or n for n, f in model.model_fields.items()]
    typed = str(loc[-1])
    lowered = {n.lower(): n for n in names}
    if typed.lower() in lowered:  # wrong capitals: maxnewtokens, MaxNewTokens
        return lowered[typed.lower()]
    close = difflib.get_close_matches(typed, names, n=1, cutoff=0.6)
    if not close:
        squashed = typed.replace("_", "").replace("-", "").lower()
        close = [n for n in names if n.lower() == squashed]
    return close[0] if close else None


def _field_path(loc: tuple[Any, ...], root: dict | None) -> str:
    """`('spec', 'datasets', 2, 'budget')` → `spec.datasets[2](code).budget`."""
    out = ""
    node: Any = root
    for part in loc:
        if isinstance(part, int):
            name = ""
            if isinstance(node, list) and 0 <= part < len(node) and isinstance(node[part], dict):
                name = node[part].get("name") or ""
            out += f"[{part}]" + (f"({name})" if name else "")
        elif part in ("function-after", "function-before") or str(part).startswith("function-"):
            continue
        else:
            out += ("." if out else "") + str(part)
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    return out or "(top level)"


_FIXES = {
    "extra_forbidden": "remove it or check its spelling against `draftgen crd`",
    "missing": "add it",
    "literal_error": "",
    "int_parsing": "write a whole number",
    "int_type": "write a whole number",
    "float_parsing": "write a number",
    "bool_parsing": "write true or false",
    "bool_type": "write true or false",
    "float_type": "write a number",
    "string_type": "write a string",
    "list_type": "write a list",
    "dict_type": "write a mapping",
    "model_type": "write a mapping",
    "string_pattern_mismatch": "",
    "too_short": "",
}


def format_errors(err: ValidationError, root: dict | None = None) -> list[str]:
    """One line per error: `field.path: what is wrong; how to fix it`."""
    problems = []
    for e in err.errors(include_url=False):
        path = _field_path(tuple(e["loc"]), root)
        msg = e["msg"].removeprefix("Value error, ")
        fix = _FIXES.get(e["type"], "")
        if e["type"] == "string_pattern_mismatch" and "name" in path:
            fix = "use lowercase letters, digits and '-' (a DNS label)"
        if e["type"] == "extra_forbidden":
            msg = "unknown field"
            guess = suggest_field(tuple(e["loc"]))
            if guess is not None:
                fix = f"did you mean `{guess}`?"
        problems.append(f"{path}: {msg}" + (f"; {fix}" if fix else ""))
    return problems


def parse_job(data: Any, source: str = "GenerationJob") -> GenerationJob:
    """Validate a decoded GenerationJob document; raise `SpecError` naming every broken field."""
    if not isinstance(data, dict):
        raise SpecError([f"(top level): expected a mapping, got {type(data).__name__}"], source)
    try:
        return GenerationJob.model_validate(data)
    except ValidationError as err:
        raise SpecError(format_errors(err, data), source) from None


def parse_spec(spec: Any, name: str = "job", source: str = "GenerationJob"):
    """Validate only a `spec` (as the operator receives it)."""
    return parse_job(
        {
            "apiVersion": "draftgen.io/v1alpha1",
            "kind": "GenerationJob",
            "metadata": {"name": name},
            "spec": spec,
        },
        source,
    ).spec


@dataclass(frozen=True)
class JobDocument:
    """One GenerationJob document of a file, exactly as written (unset fields stay unset)."""

    data: dict[str, Any]
    source: str
    """`FILE`, or `FILE#N` when the file holds several documents (N counts from 1)."""

    base_dir: Path
    """Where the job's relative paths resolve from: the file's directory (the working
    directory for standard input)."""


def _read_text(path: str | Path) -> str:
    if str(path) == STDIN:
        try:
            return sys.stdin.read()
        except UnicodeDecodeError as err:
            raise SpecError([f"not UTF-8 (byte {err.start}); send UTF-8"], "<stdin>") from None
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise SpecError([f"cannot read the job file: {err.strerror}"], str(path)) from None
    except UnicodeDecodeError as err:
        raise SpecError(
            [
                f"not UTF-8 (byte {err.start}: {err.object[err.start : err.start + 1]!r}); save the "
                "job file as UTF-8"
            ],
            str(path),
        ) from None


def job_documents(path: str | Path) -> list[JobDocument]:
    """Every GenerationJob document of a YAML file (`-`: standard input); documents of other
    kinds are skipped, so a whole `helm template` output can be read. Raises `SpecError` when the
    file cannot be read or is not YAML; the documents themselves are not validated here."""
    name = "<stdin>" if str(path) == STDIN else str(path)
    text = _read_text(path)
    try:
        docs = [d for d in load_all(text) if d is not None]
    except StrictYAMLError as err:
        raise SpecError([str(err)], name) from None
    except yaml.YAMLError as err:
        raise SpecError([f"not valid YAML: {err}"], name) from None
    base_dir = Path.cwd() if str(path) == STDIN else Path(path).resolve().parent
    several = len(docs) > 1
    return [
        JobDocument(d, f"{name}#{n}" if several else name, base_dir)
        for n, d in enumerate(docs, start=1)
        if isinstance(d, dict) and d.get("kind") == "GenerationJob"
    ]


def load_job_document(path: str | Path) -> tuple[GenerationJob, JobDocument]:
    """The one GenerationJob of a file (`-`: standard input), validated, with its document."""
    found = job_documents(path)
    if len(found) != 1:
        name = "<stdin>" if str(path) == STDIN else str(path)
        raise SpecError(
            [
                f"expected exactly one document of kind GenerationJob, found {len(found)}"
                + ("; give a file with one job (this command runs one)" if found else "")
            ],
            name,
        )
    return parse_job(found[0].data, found[0].source), found[0]


def load_job(path: str | Path) -> GenerationJob:
    """Read a GenerationJob YAML file (the same file a user applies to a cluster)."""
    return load_job_document(path)[0]
