"""One error root: every exception class of the product is a `DraftgenError` that carries an
`ExitCode` and a one-line fix, and draftgen/errors.py's tree names it (issue 27)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import draftgen
from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError


def _product_classes() -> list[type[BaseException]]:
    """Every exception class defined in a product module (draftgen.*, with the generator and
    the operator under their package names draftgen.generator and draftgen.controller)."""
    found = []
    for info in pkgutil.walk_packages(draftgen.__path__, "draftgen."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == module.__name__:
                found.append(cls)
    return sorted(set(found), key=lambda c: f"{c.__module__}.{c.__qualname__}")


def _names(classes: list[type[BaseException]]) -> list[str]:
    return [f"{c.__module__}.{c.__qualname__}" for c in classes]


def test_every_exception_class_is_a_draftgen_error() -> None:
    classes = _product_classes()
    assert len(classes) >= 36, _names(classes)
    outside = [c for c in classes if not issubclass(c, DraftgenError)]
    assert outside == [], f"not under DraftgenError: {_names(outside)}"


def test_every_draftgen_error_has_an_exit_code_and_a_one_line_fix() -> None:
    for cls in [DraftgenError, *_product_classes()]:
        assert issubclass(cls, DraftgenError)
        assert isinstance(cls.exit_code, ExitCode), f"{cls.__qualname__}: {cls.exit_code!r}"
        fix = cls.fix
        assert isinstance(fix, str) and fix.strip() and "\n" not in fix, cls.__qualname__


def test_the_error_tree_in_errors_py_names_every_class() -> None:
    doc = importlib.import_module("draftgen.errors").__doc__ or ""
    missing = [c.__qualname__ for c in _product_classes() if c.__qualname__ not in doc]
    assert missing == [], f"add to draftgen/errors.py's tree: {missing}"
