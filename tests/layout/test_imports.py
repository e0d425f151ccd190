"""Every module of draftgen imports, and imports go one way: no cycle between modules, and none
between the packages (`draftgen.spec`, `draftgen.plan`, `draftgen.generator`, ...).

The import graph is read from the sources with `ast`, so an import inside a function counts (a
lazy import only hides a cycle); an import under `if TYPE_CHECKING:` does not (it never runs).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Package name → directory, as pyproject.toml's package-dir installs them.
ROOTS = {
    "draftgen": REPO / "draftgen",
    "draftgen.generator": REPO / "generator",
    "draftgen.controller": REPO / "operator",
}

Graph = dict[str, set[str]]


def find_modules(roots: dict[str, Path]) -> dict[str, Path]:
    """Module name → source file, for every `.py` file under the package roots."""
    modules: dict[str, Path] = {}
    for package, root in roots.items():
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    for package in roots:  # a namespace package (no __init__.py) is still a node
        modules.setdefault(package, roots[package])
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST):
    """Import nodes anywhere in the tree except under `if TYPE_CHECKING:`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]))
            continue
        yield from _imports(node)


def import_graph(modules: dict[str, Path]) -> Graph:
    """Module → the modules of `modules` it imports."""
    graph: Graph = {name: set() for name in modules}
    for name, path in modules.items():
        if path.is_dir():
            continue
        is_package = path.name == "__init__.py"
        package = name if is_package else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            for target in targets:
                while target and target not in modules:  # `import a.b.c` of a name: its module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def package_graph(graph: Graph, packages: set[str]) -> Graph:
    """The graph between top-level packages (`draftgen.spec`, ...); a top-level module such as
    `draftgen.cli` stays its own node. Imports inside one package are dropped."""

    def group(module: str) -> str:
        top = ".".join(module.split(".")[:2])
        return top if top in packages else module

    out: Graph = {}
    for source, targets in graph.items():
        out.setdefault(group(source), set()).update(
            group(t) for t in targets if group(t) != group(source)
        )
    return out


def find_cycle(graph: Graph) -> list[str] | None:
    """One cycle (`[a, b, ..., a]`) of the graph, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def _packages(modules: dict[str, Path]) -> set[str]:
    return {name for name, path in modules.items() if path.is_dir() or path.name == "__init__.py"}


# ------------------------------------------------------------------------------------- the repo


def test_every_module_imports():
    names = sorted(find_modules(ROOTS))
    code = (
        "import importlib, sys, traceback\nbad = []\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n        importlib.import_module(name)\n"
        "    except Exception:\n        bad.append(name + ':\\n' + traceback.format_exc())\n"
        "print('\\n'.join(bad)); sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *names], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(names) > 50  # the walk found the packages (generator and controller included)
    assert {"draftgen.generator.run", "draftgen.controller.reconcile"} <= set(names)


def test_no_import_cycle_between_modules():
    cycle = find_cycle(import_graph(find_modules(ROOTS)))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_import_cycle_between_packages():
    modules = find_modules(ROOTS)
    cycle = find_cycle(package_graph(import_graph(modules), _packages(modules)))
    assert cycle is None, "import cycle between packages: " + " -> ".join(cycle)


# ------------------------------------------------------------------ the checker finds real cycles


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return find_modules({"draftgen": tmp_path})


def test_a_lazy_import_still_makes_a_cycle(tmp_path):
    modules = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "gen/__init__.py": "",
            "gen/formats.py": "def parse():\n    from .glaive import parse_glaive\n",
            "gen/glaive.py": "from .formats import parse\n",
        },
    )
    assert find_cycle(import_graph(modules)) == [
        "draftgen.gen.formats",
        "draftgen.gen.glaive",
        "draftgen.gen.formats",
    ]


def test_a_type_checking_import_is_no_cycle(tmp_path):
    modules = _tree(
        tmp_path,
        {
            "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from draftgen import b\n",
            "b.py": "from . import a\n",
        },
    )
    assert find_cycle(import_graph(modules)) is None


def test_a_cycle_between_packages_is_found(tmp_path):
    modules = _tree(
        tmp_path,
        {
            "spec/__init__.py": "from .server import Server\n",
            "spec/server.py": "from draftgen.plan.hostmem import check\n",
            "plan/__init__.py": "",
            "plan/hostmem.py": "",
            "plan/planner.py": "from draftgen.spec import Server\n",
        },
    )
    assert find_cycle(import_graph(modules)) is None  # module by module it is one way...
    assert find_cycle(package_graph(import_graph(modules), _packages(modules))) == [
        "draftgen.plan",
        "draftgen.spec",
        "draftgen.plan",
    ]  # ...but the packages go round


def test_importing_a_module_acts_on_nothing():
    """Importing any module leaves the environment, the threads and prometheus_client's process-wide
    switches as they were: a module acts when it is called (kopf's handler registration in
    draftgen.controller.handlers is the one intended exception, and it touches none of these)."""
    names = sorted(find_modules(ROOTS))
    code = (
        "import importlib, os, sys, threading\n"
        "import prometheus_client.metrics as pm\n"
        "env, threads, created = dict(os.environ), threading.active_count(), pm._use_created\n"
        "for name in sys.argv[1:]:\n    importlib.import_module(name)\n"
        "changed = sorted(k for k in set(env) | set(os.environ) if env.get(k) != os.environ.get(k))\n"
        "print(changed, threading.active_count() - threads, pm._use_created == created)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *names], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == "[] 0 True", result.stdout
