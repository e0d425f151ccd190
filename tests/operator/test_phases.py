"""The phase table in `phases` is the lifecycle: complete, strict, and what the reconcile uses."""

from __future__ import annotations

import ast

import pytest

from draftgen.controller import phases
from draftgen.controller.phases import TRANSITIONS, Event, UndeclaredTransition, next_phase
from draftgen.controller.reconcile import JobRef, Reconciler
from draftgen.controller.settings import OperatorSettings
from draftgen.spec.status import PHASES
from tests.conftest import REPO


def test_every_phase_is_reachable_from_pending_and_only_phases_appear() -> None:
    seen, todo = {"Pending"}, ["Pending"]
    while todo:
        here = todo.pop()
        for (src, _), dst in TRANSITIONS.items():
            if src == here and dst not in seen:
                seen.add(dst)
                todo.append(dst)
    assert seen == set(PHASES)
    assert {src for src, _ in TRANSITIONS} <= set(PHASES)
    assert {event for _, event in TRANSITIONS} == set(Event)  # no event left unused


def test_an_undeclared_transition_is_refused() -> None:
    assert next_phase("Generating", Event.GENERATOR_SUCCEEDED) == "Succeeded"
    with pytest.raises(UndeclaredTransition, match="Succeeded on SUSPENDED"):
        next_phase("Succeeded", Event.SUSPENDED)  # an ended job is moved to Pending first
    with pytest.raises(UndeclaredTransition):
        next_phase("Pending", Event.SPEC_FIXED)  # only a rejected (Failed) job is fixed


def _rejected_job() -> JobRef:
    return JobRef(
        {"metadata": {"name": "j", "namespace": "ns", "generation": 1}, "spec": {"datasets": []}}
    )


def test_the_reconcile_takes_its_phases_from_the_table(monkeypatch) -> None:
    # A rejected spec is decided before any API call: no client is needed.
    reconciler = Reconciler(kube=None, settings=OperatorSettings())  # type: ignore[arg-type]
    assert reconciler.reconcile(_rejected_job()).status["phase"] == "Failed"

    table = dict(TRANSITIONS)
    table[("Pending", Event.SPEC_REJECTED)] = "Suspended"
    monkeypatch.setattr(phases, "TRANSITIONS", table)
    assert reconciler.reconcile(_rejected_job()).status["phase"] == "Suspended"

    del table[("Pending", Event.SPEC_REJECTED)]
    with pytest.raises(UndeclaredTransition):
        reconciler.reconcile(_rejected_job())


def test_no_operator_module_assigns_the_phase_but_the_table() -> None:
    """`x.phase = ...` (a status's phase) appears once: in `phases.enter`."""
    offenders = []
    for path in sorted((REPO / "operator").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AugAssign | ast.AnnAssign)
                else []
            )
            for target in targets:
                for t in ast.walk(target):
                    if (
                        isinstance(t, ast.Attribute)
                        and t.attr == "phase"
                        and not (isinstance(t.value, ast.Name) and t.value.id == "self")
                    ):
                        offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == ["operator/phases.py:" + str(_enter_line())]


def _enter_line() -> int:
    source = (REPO / "operator" / "phases.py").read_text()
    return next(
        i
        for i, line in enumerate(source.splitlines(), 1)
        if line.strip().startswith("status.phase = ")
    )
