"""Admission of chains (`history: regenerated`): what a dataset's chains still need.

A chain runs one turn at a time; its next turn is queued (`Dataset.continuations`) when its reply
is written, and goes before any new chain of the dataset. The budget rule (docs/generator.md):

- `maxSamples` is exact across chains: a chain starts only while the samples written, in flight
  and still owed to the chains already started (`Dataset.chain_left`), plus every turn of the
  new chain, fit. Chains in flight therefore finish (unless they end early), and the dataset
  stops *between* chains.
- token budgets cannot be known ahead (replies' lengths): every turn is admitted as a sample is
  (`demand.budget_admits_sample`); once the budget is met or closes, the chains in flight end at
  the turn they reached. Their last record then has no `meta.chain_end`: a chain so cut is told
  apart from a finished one, and a resumed run with a raised budget continues it.
"""

from __future__ import annotations

from draftgen.generator.prompts.chains import ChainState
from draftgen.generator.prompts.samples import Sample
from draftgen.generator.scheduling.admission import samples_admit
from draftgen.generator.scheduling.datasets import Dataset


def is_chain_start(ds: Dataset, sample: Sample) -> bool:
    """`sample` would start a chain (not one of the chains this run already has going)."""
    return isinstance(sample.chain, ChainState) and sample.chain.row.id not in ds.chain_left


def chain_admits(ds: Dataset, sample: Sample) -> bool:
    """Whether a new chain may start: its whole length fits `maxSamples` beside the turns owed
    to the chains already going."""
    state = sample.chain
    if not isinstance(state, ChainState):
        return True
    owed = sum(ds.chain_left.values())
    rest = state.row.turns - state.turn - 1  # its turns after this one
    return samples_admit(
        max_samples=ds.spec.budget.max_samples,
        done=ds.ledger.samples + owed + rest,
        in_flight=len(ds.flights),
    )


def chain_launched(ds: Dataset, sample: Sample) -> None:
    """A chain's turn was sent: what it still owes is its turns after this one."""
    state = sample.chain
    if isinstance(state, ChainState):
        ds.chain_left[state.row.id] = state.row.turns - state.turn - 1


def chain_ended(ds: Dataset, sample: Sample) -> None:
    """The chain of `sample` goes no further: it owes nothing more."""
    state = sample.chain
    if isinstance(state, ChainState):
        ds.chain_left.pop(state.row.id, None)
