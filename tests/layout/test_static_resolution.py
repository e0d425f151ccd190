"""An editor or type checker that knows nothing of setuptools resolves every import of draftgen's
own modules from the source tree: `draftgen.generator` and `draftgen.controller` are links to the
top-level `generator/` and `operator/` folders, not a mapping only the installed finder knows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest


def _module_file(repo: Path, dotted: str) -> Path | None:
    base = repo.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@pytest.mark.parametrize("link, target", [("generator", "generator"), ("controller", "operator")])
def test_package_links_point_at_top_level_folders(repo, link, target):
    path = repo / "draftgen" / link
    assert path.is_symlink(), f"draftgen/{link} must be a link to ../{target}"
    assert path.resolve() == (repo / target).resolve()


def test_every_draftgen_import_resolves_to_a_file_in_the_tree(repo):
    unresolved = []
    sources = [
        p
        for d in ("draftgen", "generator", "operator", "tests", "bench", "scripts")
        for p in (repo / d).rglob("*.py")
        if ".cache" not in p.parts
    ]
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if name.split(".")[0] == "draftgen" and _module_file(repo, name) is None:
                    unresolved.append(f"{source.relative_to(repo)}: {name}")
    assert not unresolved, "imports no file in the tree answers:\n" + "\n".join(unresolved)
