"""Every module of draftgen imports, and importing one acts on nothing.

Which module may import which (the layers) and that no import cycle exists at any depth, lazy
imports included and `if TYPE_CHECKING:` imports not, are import-linter's contracts in
pyproject.toml (`lint-imports`, run by tests/layout/test_checks.py). What stays here is what a
static import graph cannot see: that each module really imports, and without side effects.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Package name → directory: draftgen.generator and draftgen.controller are links to these.
ROOTS = {
    "draftgen": REPO / "draftgen",
    "draftgen.generator": REPO / "generator",
    "draftgen.controller": REPO / "operator",
}


def find_modules(roots: dict[str, Path]) -> list[str]:
    """Every module name under the package roots (a module reached through a link too is one
    name: draftgen/generator/x.py and generator/x.py are both draftgen.generator.x)."""
    modules: set[str] = set()
    for package, root in roots.items():
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules.add(".".join([package, *parts]))
    return sorted(modules)


def test_every_module_imports():
    names = find_modules(ROOTS)
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


def test_importing_a_module_acts_on_nothing():
    """Importing any module leaves the environment, the threads and prometheus_client's process-wide
    switches as they were: a module acts when it is called (kopf's handler registration in
    draftgen.controller.handlers is the one intended exception, and it touches none of these)."""
    names = find_modules(ROOTS)
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
