"""What each dataset sends next: its feed, started once the servers are known (a dataset that
regenerates its history resumes its chains where the records left them), and the sample it
offers admission each time — a chain's next turn before a new row, rejects and repeated rows
dealt with on the way."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from draftgen.generator.prompts.chains import ChainResume, ChainSteps
from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.generator.scheduling.datasets import Dataset
from draftgen.generator.scheduling.feed import Feed


def start_feeds(
    datasets: Sequence[Dataset],
    source: Callable[..., Iterator[Sample | Reject]],
    max_prompt_tokens: Callable[[], int | None],
    wake: Callable[[], None],
) -> ChainSteps | None:
    """A feed for every dataset not done yet, reading `source` past the ids already written; the
    source's `ChainSteps` when a dataset regenerates its history (None: none does)."""
    chains = None
    for ds in datasets:
        if ds.ledger.done:
            continue
        skip = frozenset(ds.state.done_ids)
        if ds.spec.history == "regenerated" and chains is None:
            chains = source.chain_steps()  # type: ignore[attr-defined]

        def make(d: Dataset = ds, s: frozenset[str] = skip) -> Iterator:
            # The prompt limit is read when the feed starts: servers may join until then.
            if d.spec.history == "regenerated":
                resume = ChainResume(d.state.chains_open, d.state.chains_ended)
                return source(d.spec, s, max_prompt_tokens(), resume)
            return source(d.spec, s, max_prompt_tokens())

        ds.feed = Feed(make, wake)
    return chains


def next_sample(ds: Dataset, reject: Callable[[Dataset, Reject], None]) -> Sample | None:
    """The dataset's next sample to send (a chain's next turn first; None: none ready); the
    feed's rejects go to `reject`, and a row written by an earlier run or already in flight (a
    repeated row id) is skipped. The feed's error, once it ended, is raised here."""
    if ds.continuations:
        return ds.continuations[0]
    while ds.pending is None and ds.feed is not None:
        item = ds.feed.take()
        if item is None:
            if ds.feed.error is not None:
                raise ds.feed.error
            return None
        if isinstance(item, Reject):
            reject(ds, item)
            continue
        if item.id in ds.state.done_ids or item.id in ds.flights:
            continue  # written by an earlier run, or a repeated row id
        ds.pending = item
    return ds.pending
