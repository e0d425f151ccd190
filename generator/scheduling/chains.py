"""Chains (`history: regenerated`) in the scheduler: what a dataset's chains still need, and
each turn's step to the next once its reply is in.

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

The step itself (parse the reply, render the next prompt) is `prompts/chains.ChainSteps`;
`chain_step` runs it for the Runner (in a thread) and `chain_goes_on` queues what it rendered.
"""

from __future__ import annotations

import logging

from draftgen.generator.prompts.chains import ChainState, ChainSteps
from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.generator.scheduling.admission import samples_admit
from draftgen.generator.scheduling.datasets import Dataset
from draftgen.generator.sglang.client import Generation

log = logging.getLogger("draftgen.generate")


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


def with_chains_rule(ds: Dataset, sample: Sample, admits: bool) -> bool | None:
    """What the budgets said of `sample` (`admits`), with the chains' rule added: a new chain
    starts only if its whole length fits (`chain_admits`). None: not now, but no reason to close
    the dataset either — the chains going may still end early and free their turns."""
    if admits and is_chain_start(ds, sample) and not chain_admits(ds, sample):
        return None if ds.flights or ds.continuations else False
    return admits


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


def chain_step(
    chains: ChainSteps,
    sample: Sample,
    result: Generation,
    max_prompt_tokens: int | None,
) -> tuple[str | None, Sample | Reject | None]:
    """The chain's end reason for this reply's record, and its next turn (a thread's work:
    parsing and rendering). A reply the parser cannot read ends the chain, recorded."""
    try:
        return chains.advance(sample, result.output_ids, result.finish_reason, max_prompt_tokens)
    except Exception as err:
        log.warning("%s: reply not parsed, its chain ends here: %s", sample.id, err)
        return "reply_unparsed", None


def chain_goes_on(
    ds: Dataset, sample: Sample, nxt: Sample | Reject | None, *, written: bool, stopping: bool
) -> bool:
    """After a chain turn's reply: queue its next turn (True: it goes before any new chain), or
    end the chain here — its reply not written, no next turn, the dataset done or the run
    stopping."""
    if written and isinstance(nxt, Sample) and not ds.ledger.done and not stopping:
        ds.continuations.append(nxt)
        return True
    chain_ended(ds, sample)
    return False
