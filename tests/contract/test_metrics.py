"""The generator's metric series are exactly the contract's definitions."""

from __future__ import annotations

from draftgen.contract import metrics
from draftgen.generator.metrics import GeneratorMetrics


def _families() -> dict[str, tuple[str, tuple[str, ...]]]:
    m = GeneratorMetrics()
    out = {}
    for family in m.registry.collect():
        name = family.name + ("_total" if family.type == "counter" else "")
        labels: tuple[str, ...] = ()
        for sample in family.samples:
            labels = tuple(k for k in sample.labels if k != "le")
            break
        out[name] = (family.type, labels)
    return out


def test_the_generator_exposes_every_defined_series_with_its_type() -> None:
    got = _families()
    assert set(got) == {m.name for m in metrics.ALL}
    for m in metrics.ALL:
        assert got[m.name][0] == m.type, m.name


def test_the_labels_of_every_series_are_the_defined_ones() -> None:
    m = GeneratorMetrics()
    by_name = {}
    for collector in vars(m).values():
        if hasattr(collector, "_labelnames"):
            name = collector._name + ("_total" if collector._type == "counter" else "")
            by_name[name] = tuple(collector._labelnames)
    assert by_name == {d.name: d.labels for d in metrics.ALL}


def test_names_are_unique_and_in_the_draftgen_namespace() -> None:
    names = [m.name for m in metrics.ALL]
    assert len(names) == len(set(names))
    assert all(n.startswith("draftgen_") for n in names)
