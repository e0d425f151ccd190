"""Reading a GenerationJob from YAML, with errors that name the field and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .job import GenerationJob
from .yaml_strict import StrictYAMLError, load_all


class SpecError(ValueError):
    """A GenerationJob was refused; `problems` holds one message per broken field."""

    def __init__(self, problems: list[str], source: str = "GenerationJob") -> None:
        self.problems = problems
        self.source = source
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source} is invalid:\n{lines}")


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


def load_job(path: str | Path) -> GenerationJob:
    """Read a GenerationJob YAML file (the same file a user applies to a cluster)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
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
    try:
        docs = [d for d in load_all(text) if d is not None]
    except StrictYAMLError as err:
        raise SpecError([str(err)], str(path)) from None
    except yaml.YAMLError as err:
        raise SpecError([f"not valid YAML: {err}"], str(path)) from None
    jobs = [d for d in docs if isinstance(d, dict) and d.get("kind") == "GenerationJob"]
    if len(jobs) != 1:
        raise SpecError(
            [f"expected exactly one document of kind GenerationJob, found {len(jobs)}"], str(path)
        )
    return parse_job(jobs[0], str(path))
