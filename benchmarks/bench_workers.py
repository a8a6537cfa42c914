"""Indexing cost of the parse-stage worker process: the indexing runner (parse stage in a spawn worker, write
stage in this process) against the old path (the whole shipped pipelines/indexing.yaml run in this process),
same filings, same process, each into its own embedded Qdrant folder.

Default (alternating): filing by filing, the two paths alternate (which one goes first alternates too), so that
background load on a shared machine hits both alike. The worker path parses one filing per call here, so it gets
no head start from parsing the next filing while this one is embedded: the difference is the cost of the process
boundary (task and outcome pickled through a pipe), which is split out per filing as ``ipc_ms`` (wall time of the
parse call minus the parse time measured inside the worker).

Wall time on a shared machine swings with other processes' load (the same filing's write stage took 65 s and
152 s in two runs here), so each path's CPU time is recorded too: this process's user+system time, plus the
worker's (read from /proc) for the worker path. CPU seconds barely move with other processes' load, and the
worker's overhead (a second interpreter, pickling both ways) is CPU work, so it shows up there.

``--sample N``: N filings evenly spaced over the sorted list (the dev PDFs differ in size and layout).

``--batch``: additionally ``index_filings`` over all the filings once with ``workers=1`` and once with
``in_process=True`` (what ``haystack-fin index`` does, including the overlap of parsing and embedding).

    python benchmarks/bench_workers.py --pdfs ../shared/data/financebench-dev/pdfs [--limit N | --sample N]
        [--batch] [--out R.json]
"""

import argparse
import json
import logging
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

logger = logging.getLogger("bench_workers")


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux /proc; 0.0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def _with_store(data: dict, path: Path) -> dict:
    data["components"]["writer"]["init_parameters"]["document_store"]["init_parameters"]["path"] = str(path)
    return data


def alternating(pdfs: list[Path], tmp: Path) -> dict:
    from haystack import Pipeline

    from haystack_fin.indexing_runner import ParseWorkerPool
    from haystack_fin.pipeline_loader import ALLOWED_MODULES, pipeline_dict
    from haystack_fin.store_check import connect_store

    old = Pipeline.from_dict(_with_store(pipeline_dict("indexing"), tmp / "old"), allowed_modules=ALLOWED_MODULES)
    old.warm_up()
    rows = []
    with ParseWorkerPool(_with_store(pipeline_dict("indexing"), tmp / "new"), workers=1) as pool:
        pool.start()
        write = Pipeline.from_dict(pool.write_data, allowed_modules=ALLOWED_MODULES)
        write.warm_up()
        connect_store(write.get_component("writer").document_store)
        (_,) = pool.parse([str(pdfs[0])], timeout_s=None)  # the worker's start-up is not a filing's cost
        for n, pdf in enumerate(pdfs):
            row: dict = {"filing": pdf.stem}

            def run_old(row: dict = row, pdf: Path = pdf) -> None:
                t0, c0 = time.perf_counter(), _own_cpu()
                result = old.run({"converter": {"sources": [str(pdf)]}})
                row["old_s"] = time.perf_counter() - t0
                row["old_cpu_s"] = _own_cpu() - c0
                row["old_nodes"] = result["writer"]["documents_written"]

            def run_new(row: dict = row, pdf: Path = pdf) -> None:
                (worker,) = pool._workers  # one worker, started above and reused
                t0, c0, w0 = time.perf_counter(), _own_cpu(), _cpu_of(worker.process.pid)
                (outcome,) = pool.parse([str(pdf)], timeout_s=None)
                t1 = time.perf_counter()
                result = write.run(outcome.stage_outputs)
                t2 = time.perf_counter()
                row["new_cpu_s"] = _own_cpu() - c0 + _cpu_of(worker.process.pid) - w0
                assert not outcome.failures, outcome.failures
                row.update(
                    pages=outcome.n_pages,
                    new_s=t2 - t0,
                    parse_s=outcome.seconds,
                    ipc_s=(t1 - t0) - outcome.seconds,
                    write_s=t2 - t1,
                    new_nodes=result["writer"]["documents_written"],
                )
                t3 = time.perf_counter()
                blob = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
                t4 = time.perf_counter()
                pickle.loads(blob)
                row.update(
                    pickle_mb=len(blob) / 1e6,
                    dumps_ms=1000 * (t4 - t3),
                    loads_ms=1000 * (time.perf_counter() - t4),
                )

            for run in (run_old, run_new) if n % 2 == 0 else (run_new, run_old):
                run()
            rows.append(row)
            logger.info(
                "%-34s %4d pages  old %6.1f ms/page (cpu %6.1f)  worker %6.1f ms/page (cpu %6.1f) ipc %4.0f ms %.2f MB",
                pdf.stem,
                row["pages"],
                1000 * row["old_s"] / row["pages"],
                1000 * row["old_cpu_s"] / row["pages"],
                1000 * row["new_s"] / row["pages"],
                1000 * row["new_cpu_s"] / row["pages"],
                1000 * row["ipc_s"],
                row["pickle_mb"],
            )
        write.close()
    old.close()
    pages = sum(r["pages"] for r in rows)

    def total(key: str) -> float:
        return sum(r[key] for r in rows)

    return {
        "filings": len(rows),
        "pages": pages,
        "old_ms_per_page": round(1000 * total("old_s") / pages, 1),
        "worker_ms_per_page": round(1000 * total("new_s") / pages, 1),
        "ratio": round(total("new_s") / total("old_s"), 4),
        "old_cpu_ms_per_page": round(1000 * total("old_cpu_s") / pages, 1),
        "worker_cpu_ms_per_page": round(1000 * total("new_cpu_s") / pages, 1),
        "cpu_ratio": round(total("new_cpu_s") / total("old_cpu_s"), 4),
        "worker_parse_ms_per_page": round(1000 * total("parse_s") / pages, 1),
        "worker_ipc_ms_per_page": round(1000 * total("ipc_s") / pages, 2),
        "worker_write_ms_per_page": round(1000 * total("write_s") / pages, 1),
        "pickle_mb_total": round(total("pickle_mb"), 1),
        "pickle_dumps_plus_loads_ms_total": round(total("dumps_ms") + total("loads_ms"), 0),
        "same_node_counts": all(r["old_nodes"] == r["new_nodes"] for r in rows),
        "rows": rows,
    }


def batch(pdfs: list[Path], tmp: Path) -> dict:
    from haystack_fin.indexing_runner import index_filings
    from haystack_fin.pipeline_loader import pipeline_dict

    out = {}
    for label, in_process in (("workers_1", False), ("in_process", True)):
        data = _with_store(pipeline_dict("indexing"), tmp / f"batch-{label}")
        report = index_filings([str(p) for p in pdfs], data, in_process=in_process, quiet=True, timeout_s=None)
        out[label] = {
            "seconds": round(report.seconds, 1),
            "ms_per_page": round(1000 * report.seconds / report.pages, 1),
            "pages": report.pages,
            "nodes_written": report.nodes_written,
            "failures": report.failures,
        }
        logger.info("batch %s: %s", label, out[label])
    out["ratio"] = round(out["workers_1"]["seconds"] / out["in_process"]["seconds"], 4)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdfs", default="../shared/data/financebench-dev/pdfs", help="folder of filing PDFs")
    parser.add_argument("--limit", type=int, default=0, help="only the first N PDFs (sorted by name)")
    parser.add_argument("--sample", type=int, default=0, help="N filings evenly spaced over the sorted list")
    parser.add_argument("--batch", action="store_true", help="also time index_filings on the whole batch")
    parser.add_argument("--out", default=None, help="write the result JSON here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logger.setLevel(logging.INFO)  # this script's per-filing lines, not Haystack's per-component ones
    pdfs = sorted(Path(args.pdfs).glob("*.pdf"))[: args.limit or None]
    if args.sample and len(pdfs) > args.sample:
        step = len(pdfs) / args.sample
        pdfs = [pdfs[int(i * step)] for i in range(args.sample)]
    if not pdfs:
        print(f"no PDFs in {args.pdfs}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        result = {"alternating": alternating(pdfs, Path(tmp))}
        if args.batch:
            result["batch"] = batch(pdfs, Path(tmp))
    summary = {k: v for k, v in result["alternating"].items() if k != "rows"}
    print(json.dumps({"alternating": summary, **({"batch": result["batch"]} if "batch" in result else {})}, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":  # the spawned worker imports this module: nothing may run at import
    sys.exit(main())
