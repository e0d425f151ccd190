"""Resume cost (issue 7, benchmark 5): the time to resume over an output directory of one
million records (about 1 GB), generated synthetically under `.cache/bench/` and deleted after.

The records have the real shape (docs/output-format.md): ids, token lists of mixed length,
finish reasons, meta. Two figures:
- `scan_dataset` per dataset, in this process: what `draftgen generate` does before its first
  request (rebuild the ledgers, the ids done and the length history from the records);
- `draftgen generate` end to end on the same directory with every budget met: process start,
  tokenizer load, the scan, manifests written, exit — the whole restart a user waits for.
The page cache is warm for both (the files were just written); a cold read adds the disk's
sequential read time for ~1 GB.

    .cache/venv/bin/python bench/resume_cost.py [--records 1000000]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BENCH_DIR, REPO, TINY_KIMI, Goal, Result, job_document

DATASETS = 4
SHARD = 10_000  # spec.output.shardMaxRecords default


def write_output(out: Path, records: int, seed: int = 0) -> tuple[int, int]:
    """Shards of `records` records over DATASETS datasets; (bytes, completion tokens)."""
    rng = random.Random(seed)
    # Pre-made token lists, combined per record: realistic sizes without a slow generator.
    pool = [
        ",".join(str(rng.randrange(0, 163_840)) for _ in range(rng.randint(15, 110)))
        for _ in range(512)
    ]
    lengths = [s.count(",") + 1 for s in pool]
    total = tokens = 0
    per = records // DATASETS
    for d in range(DATASETS):
        name = f"ds{d}"
        directory = out / name
        directory.mkdir(parents=True)
        for shard in range((per + SHARD - 1) // SHARD):
            lines = []
            for i in range(shard * SHARD, min(per, (shard + 1) * SHARD)):
                a, b = rng.randrange(512), rng.randrange(512)
                reason = "length" if lengths[b] > 105 else "stop"
                lines.append(
                    f'{{"id":"{name}/row-{i:08d}/0","dataset":"{name}","source_index":{i},'
                    f'"turn":0,"input_ids":[{pool[a]}],"output_ids":[{pool[b]}],'
                    f'"prompt_tokens":{lengths[a]},"completion_tokens":{lengths[b]},'
                    f'"finish_reason":"{reason}","matched_stop":163586,"meta":{{"sampling":'
                    f'{{"max_new_tokens":400,"temperature":1.0}},"cached_tokens":0,'
                    f'"e2e_latency":12.5,"server":"http://s:30000","attempts":1,'
                    f'"created_at":1790000000.0}}}}\n'
                )
                tokens += lengths[b]
            data = "".join(lines).encode()
            (directory / f"shard-{shard:05d}.jsonl").write_bytes(data)
            total += len(data)
    return total, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    res = Result(
        "resume_cost",
        f"Resume over {args.records:,} records",
        ["step", "records", "GB", "seconds", "records/s", "peak RSS MB"],
    )
    work = BENCH_DIR / "resume"
    shutil.rmtree(work, ignore_errors=True)
    out = work / "out"
    try:
        t0 = time.perf_counter()
        size, tokens = write_output(out, args.records)
        res.rows.append(
            [
                "write the synthetic output (not resume)",
                args.records,
                size / 1e9,
                round(time.perf_counter() - t0, 1),
                None,
                None,
            ]
        )

        import cProfile
        import pstats

        from draftgen.output.resume import scan_dataset
        from draftgen.spec import Budget

        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()  # one dataset of four, profiled: where the time goes
        state = scan_dataset(out / "ds0", "ds0", Budget(), shard_max_records=SHARD)
        prof.disable()
        scan_s = time.perf_counter() - t0
        scanned = state.ledger.samples
        done = scanned * DATASETS
        stats = pstats.Stats(prof).stats
        total = sum(v[2] for v in stats.values())
        parse = sum(
            v[2]
            for k, v in stats.items()
            if k[2] in ("raw_decode", "<built-in method _json.scanstring>")
        )
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        res.rows.append(
            [
                "scan_dataset of one dataset (in-process, under cProfile)",
                scanned,
                size / 1e9 / DATASETS,
                round(scan_s, 1),
                scanned / scan_s,
                round(rss),
            ]
        )
        del state

        job = job_document(
            "resume",
            model={"weights": str(TINY_KIMI)},
            generator={"tokenizerWorkers": 1},
            datasets=[
                {
                    "name": f"ds{d}",
                    "source": "unused.jsonl",
                    "format": "prompt",
                    "budget": {"completionTokens": 1000},
                }
                for d in range(DATASETS)
            ],
        )
        (work / "job.yaml").write_text(json.dumps(job))
        cmd = [
            str(REPO / ".cache/venv/bin/draftgen"),
            "generate",
            "--job",
            str(work / "job.yaml"),
            "--server",
            "http://127.0.0.1:9",
            "--output",
            str(out),
            "--progress",
            "log",
        ]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        cli_s = time.perf_counter() - t0
        child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if proc.returncode != 0:
            raise SystemExit(f"draftgen generate exited {proc.returncode}:\n{proc.stderr[-2000:]}")
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["samples"] == done, (manifest["samples"], done)
        res.rows.append(
            [
                "draftgen generate, end to end (budgets met: exits)",
                manifest["samples"],
                size / 1e9,
                round(cli_s, 1),
                manifest["samples"] / cli_s,
                round(child_rss),
            ]
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res.goals.append(
        Goal(
            "resume over 1M records (~1 GB) in seconds, not minutes",
            f"{cli_s:.0f} s end to end for {done:,} records ({size / 1e9:.2f} GB)",
            cli_s < 60 if args.records >= 1_000_000 else None,
            ""
            if cli_s < 60 or args.records < 1_000_000
            else f"the scan parses every record's whole JSON line ({100 * parse / total:.0f} % of its "
            "time is json.loads, token lists included) to read four fields",
        )
    )
    res.add_table(
        "Where the scan's time goes (cProfile of one dataset's scan)",
        ["part", "share %"],
        [
            ["json.loads of each record", round(100 * parse / total, 1)],
            [
                "the rest (reading lines, torn-line check, ledger, id set)",
                round(100 * (1 - parse / total), 1),
            ],
        ],
    )
    res.notes.append(
        f"{DATASETS} datasets, {SHARD:,} records per shard, 15-110 ids per token "
        "list; warm page cache."
    )
    res.save()


if __name__ == "__main__":
    main()
