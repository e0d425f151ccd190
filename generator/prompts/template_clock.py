"""The date a chat template sees (`spec.model.templateDate`), pinned per job.

Templates may call `strftime_now` (transformers gives them `datetime.now().strftime`): gpt-oss's
prints `Current date: YYYY-MM-DD` into every prompt, so a job resumed on another day would make
other prompts for the same rows. Every prompt of a job is therefore rendered with one date:
`spec.model.templateDate`, else the one recorded in the output's job manifest (`template_date`)
by the run that started it, else (that first run) the job's creation day (a cluster's
`metadata.creationTimestamp`; run locally, the day in UTC), which the run records.

transformers compiles each template once per process (and caches it); `install` points the
compiled template's own `strftime_now` at `strftime_now` below, which formats the date of the
render in progress (`pinned`), or the clock when none is pinned, as transformers would.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from draftgen.contract import layout
from draftgen.generator.prompts.integrity import IntegrityError
from draftgen.spec import GenerationJob

MANIFEST_KEY = "template_date"

_PINNED: ContextVar[datetime | None] = ContextVar("draftgen_template_date", default=None)


def strftime_now(fmt: str) -> str:
    """The template's `strftime_now`: the pinned date (at midnight), else now."""
    pinned = _PINNED.get()
    return (pinned if pinned is not None else datetime.now()).strftime(fmt)


@contextmanager
def pinned(day: str | None) -> Iterator[None]:
    """Renders inside see `day` (`YYYY-MM-DD`) as today; None leaves the clock alone."""
    if day is None:
        yield
        return
    token = _PINNED.set(datetime.combine(date.fromisoformat(day), datetime.min.time()))
    try:
        yield
    finally:
        _PINNED.reset(token)


def _templates(tokenizer: Any) -> list[str]:
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):
        return [t for t in template.values() if isinstance(t, str)]
    return [template] if isinstance(template, str) else []


def dated_templates(tokenizer: Any) -> tuple[str, ...]:
    """The tokenizer's templates that read the date."""
    return tuple(t for t in _templates(tokenizer) if "strftime_now" in t)


def install(templates: tuple[str, ...]) -> None:
    """Give each template `strftime_now` above. Cheap, and called before every pinned render:
    transformers' cache of compiled templates is bounded, and a template compiled again after
    being evicted would have the clock's `strftime_now` back."""
    for template in templates:
        try:
            from transformers.utils.chat_template_utils import _compile_jinja_template

            compiled = _compile_jinja_template(template)
            if compiled.globals.get("strftime_now") is not strftime_now:
                compiled.globals["strftime_now"] = strftime_now
        except (ImportError, AttributeError) as err:
            raise IntegrityError(
                "model.templateDate: the chat template prints the date (strftime_now), and this "
                f"transformers version offers no way to pin it ({err}); install the transformers "
                "version in constraints.txt"
            ) from None


def job_date(
    job: GenerationJob, output: Path, today: Callable[[], date] = lambda: datetime.now(UTC).date()
) -> str:
    """The job's template date: `spec.model.templateDate`, else the one its output recorded,
    else the day of the job's `metadata.creationTimestamp` (in a cluster: the operator writes it
    into the generator's job document), else `today()`; the run records it in the job
    manifest."""
    if job.spec.model.template_date is not None:
        return job.spec.model.template_date
    try:
        recorded = json.loads(layout.job_manifest(output).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = None
    if isinstance(recorded, dict) and isinstance(recorded.get(MANIFEST_KEY), str):
        try:
            return date.fromisoformat(recorded[MANIFEST_KEY]).isoformat()
        except ValueError:
            pass
    created = (job.metadata.model_extra or {}).get("creationTimestamp")
    if isinstance(created, str):
        try:
            return datetime.fromisoformat(created.replace("Z", "+00:00")).date().isoformat()
        except ValueError:
            pass
    return today().isoformat()
