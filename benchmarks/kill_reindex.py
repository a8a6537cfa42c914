"""Kill a re-index with SIGKILL at random moments: the filing must always be complete, old version or new.

A store holding version 1 of a filing is copied once per trial; a child process re-indexes the copy with version 2
(``FilingWriter`` on the real Qdrant Edge store; the filing is parsed beforehand, so the child only writes, one
point per store update to stretch the write over many WAL records) and is killed with SIGKILL at a random moment
of that write. The moment is drawn in store updates, not seconds, so a loaded machine moves it no more than a
fast one: a position uniform over 1.1 times the updates of an uninterrupted write, the kill sent that fraction of
one update's mean duration after the child announces the update (past the last update: after its "done").
The parent then

1. reads the filing as every query does (``store_registry.FilingCache``: the nodes of the run its filing node
   names) and checks that they are exactly version 1's or exactly version 2's (every chunk, same text);
2. records how far the write got (pending marker, nodes of the new run, filing node switched, old run deleted);
3. runs what the next ``haystack-fin index`` runs first (``FilingWriter.warm_up``: the interrupted write's
   leftovers removed) and checks that the filing then holds one run only, and no marker.

Versions: the committed Best Buy 10-Q fixture split with 200-token chunks (version 1) and 150-token chunks
(version 2): two runs whose chunk positions overlap, so a write that reused chunk positions as ids would overwrite
version 1 in place. Vectors are seeded random unit vectors (the write cost of real ones, no model to load).

    python benchmarks/kill_reindex.py [--trials 20] [--seed 0] [--out benchmarks/results/kill-reindex-20.json]

It runs against whatever haystack-fin is first on the path: with the version before run-scoped ids and pending
markers on PYTHONPATH it measures that version the same way (what it lacks is skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "bestbuy-10q-2023-07-29.pdf"
FILING_ID = "bestbuy-10q"
DIM = 384
VERSION_TOKENS = {1: 200, 2: 150}


def _store(path: str, write_batch_size: int = 256) -> Any:
    from haystack_fin.document_stores.qdrant_edge import QdrantEdgeDocumentStore

    return QdrantEdgeDocumentStore(
        path=path, index="haystack_fin", embedding_dim=DIM, return_embedding=True, write_batch_size=write_batch_size
    )


def split_versions() -> dict[int, dict[str, Any]]:
    """Both versions of the filing: chunks (with seeded unit vectors) and filing node, as FilingSplitter cuts
    them."""
    from dataclasses import replace

    import numpy as np

    from haystack_fin.components.filing_converter import FilingConverter
    from haystack_fin.components.filing_splitter import FilingSplitter
    from haystack_fin.core import schema

    filing = FilingConverter().run(sources=[str(FIXTURE)], meta={schema.FILING_ID: FILING_ID})["documents"]
    versions: dict[int, dict[str, Any]] = {}
    for version, tokens in VERSION_TOKENS.items():
        out = FilingSplitter(chunk_tokens=tokens).run(documents=filing)
        rng = np.random.default_rng(version)
        chunks = []
        for doc in out["documents"]:
            v = rng.standard_normal(DIM)
            chunks.append(replace(doc, embedding=(v / np.linalg.norm(v)).tolist()))
        versions[version] = {"documents": chunks, "filing_nodes": out["filing_nodes"]}
    return versions


def expected(version: dict[str, Any]) -> dict[int, str]:
    from haystack_fin.core import schema

    return {int(d.meta[schema.CHUNK_INDEX]): d.content for d in version["documents"]}


class _Announcing:
    """An Edge shard that says "update N" on stdout as each update starts: what the parent times its kill by."""

    def __init__(self, shard: Any) -> None:
        self._shard = shard
        self._updates = 0

    def update(self, operation: Any) -> Any:
        self._updates += 1
        print(f"update {self._updates}", flush=True)
        return self._shard.update(operation)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._shard, name)


def child(store_dir: str, pickled: str) -> None:
    """Re-index the store with the pickled version, one point per store update; says when the write starts."""
    from haystack_fin.components.filing_writer import FilingWriter

    with open(pickled, "rb") as f:
        version = pickle.load(f)
    store = _store(store_dir, write_batch_size=1)
    store.count_documents()  # open the shard (replays its WAL) before the write is timed
    writer = FilingWriter(document_store=store)
    if hasattr(writer, "warm_up"):  # a version without it (the baseline) has nothing to clean up first
        writer.warm_up()
    store._shard = _Announcing(store._shard)  # numbers the write's updates only
    print("writing", flush=True)
    t0 = time.perf_counter()
    writer.run(documents=version["documents"], filing_nodes=version["filing_nodes"])
    print(f"done {time.perf_counter() - t0:.4f}", flush=True)
    store.close()


def _spawn(store_dir: Path, pickled: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, __file__, "--child", str(store_dir), str(pickled)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )


def _filing_filter() -> dict[str, Any]:
    from haystack_fin.core import schema

    if hasattr(schema, "filing_filter"):
        return schema.filing_filter(FILING_ID)
    return {"field": f"meta.{schema.FILING_ID}", "operator": "==", "value": FILING_ID}  # an older version


def _wait_for(proc: subprocess.Popen[str], word: str) -> int:
    """Read the child's lines up to the one that is ``word`` or starts with ``word`` and a space; returns how many
    "update N" lines came before it."""
    assert proc.stdout is not None
    updates = 0
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the child exited (code {proc.wait()}) before saying {word!r}")
        if line.strip() == word or line.startswith(word + " "):
            return updates
        if line.startswith("update "):
            updates += 1


def inspect_store(store_dir: Path, versions: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """What a query reads of the filing, which version that is, and what the write left in the store."""
    from haystack_fin.components import filing_writer
    from haystack_fin.core import schema
    from haystack_fin.store_registry import FilingCache

    pending_writes = getattr(filing_writer, "pending_writes", None)  # None: a version without markers

    runs = {v: str(versions[v]["filing_nodes"][0].meta[schema.INDEX_RUN]) for v in versions}
    store = _store(str(store_dir))
    try:
        entry = FilingCache(4).get(store, [FILING_ID]).get(FILING_ID)
        read = {}
        if entry is not None:
            read = {
                int(d.meta[schema.CHUNK_INDEX]): d.content
                for d in entry.docs
                if d.meta.get(schema.NODE_TYPE) == schema.NodeType.CHUNK.value
            }
        version = next((v for v in versions if read == expected(versions[v])), None)
        nodes = store.filter_documents(_filing_filter())
        by_run: dict[str, int] = {}
        for node in nodes:
            if node.meta.get(schema.NODE_TYPE) == schema.NodeType.CHUNK.value:
                key = next((f"v{v}" for v, r in runs.items() if node.meta.get(schema.INDEX_RUN) == r), "other")
                by_run[key] = by_run.get(key, 0) + 1
        marker = pending_writes is not None and bool(store.get_documents_by_id([schema.pending_node_id(FILING_ID)]))
        pending = pending_writes(store) if pending_writes is not None else []
        return {
            "version_read": version,
            "complete": version is not None and entry is not None and entry.index_run == runs[version],
            "chunks_read": len(read),
            "chunks_in_store": by_run,
            "marker": marker,
            "markers_supported": pending_writes is not None,
            "leftover_nodes": sum(p.leftover_nodes for p in pending),
        }
    finally:
        store.close()


def recover(store_dir: Path, versions: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The next index's first step (FilingWriter.warm_up), then what the store holds of the filing."""
    from haystack_fin.components.filing_writer import FilingWriter
    from haystack_fin.core import schema

    store = _store(str(store_dir))
    try:
        writer = FilingWriter(document_store=store)
        if hasattr(writer, "warm_up"):
            writer.warm_up()
        nodes = store.filter_documents(_filing_filter())
    finally:
        store.close()
    runs = {str(n.meta.get(schema.INDEX_RUN)) for n in nodes}
    return {
        "removed": sum(getattr(writer, "recovered", {}).values()),
        "runs_left": len(runs),
        "marker_left": any(n.meta.get(schema.NODE_TYPE) == "pending" for n in nodes),
    }


def phase(state: dict[str, Any]) -> str:
    """How far the killed write got, from what it left."""
    new = state["chunks_in_store"].get("v2", 0)
    old = state["chunks_in_store"].get("v1", 0)
    if not state["markers_supported"]:
        return "n/a (no pending markers in this version)"
    if not state["marker"]:
        return "finished" if not old else "not started"
    if state["version_read"] == 2:
        return "switched, old run being deleted" if old else "switched, old run deleted"
    return "writing the new run" if new else "marker written"


def run_trials(trials: int = 20, seed: int = 0, workdir: str | None = None) -> dict[str, Any]:
    from haystack_fin.components.filing_writer import FilingWriter

    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="kill-reindex-", dir=workdir))
    try:
        versions = split_versions()
        base = tmp / "v1"
        store = _store(str(base))
        FilingWriter(document_store=store).run(**versions[1])
        store.close()
        pickled = tmp / "v2.pkl"
        pickled.write_bytes(pickle.dumps(versions[2]))
        # One uninterrupted re-index: the length of the write, and the reference end state.
        calibration = tmp / "calibration"
        shutil.copytree(base, calibration)
        proc = _spawn(calibration, pickled)
        _wait_for(proc, "writing")
        t0 = time.perf_counter()
        updates = _wait_for(proc, "done")
        write_s = time.perf_counter() - t0
        proc.wait()
        update_s = write_s / max(updates, 1)
        reference = inspect_store(calibration, versions)
        rows = []
        for trial in range(trials):
            folder = tmp / f"trial-{trial:02d}"
            shutil.copytree(base, folder)
            position = rng.uniform(0.0, 1.1 * updates)
            update, fraction = int(position) + 1, position % 1.0
            proc = _spawn(folder, pickled)
            _wait_for(proc, "done" if update > updates else f"update {update}")
            time.sleep(fraction * update_s)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            state = inspect_store(folder, versions)
            after = recover(folder, versions)
            again = inspect_store(folder, versions)
            rows.append(
                {
                    "trial": trial,
                    "kill_at_update": round(position, 3),
                    "phase": phase(state),
                    **state,
                    "recovery": after,
                    "complete_after_recovery": again["complete"] and again["version_read"] == state["version_read"],
                }
            )
            shutil.rmtree(folder)
        ok = [r for r in rows if r["complete"] and r["complete_after_recovery"] and r["recovery"]["runs_left"] == 1]
        return {
            "trials": trials,
            "seed": seed,
            "complete": len(ok),
            "write_seconds_uninterrupted": write_s,
            "updates_uninterrupted": updates,
            "reference_after_uninterrupted_write": reference,
            "versions": {v: len(versions[v]["documents"]) for v in versions},
            "by_version_read": {str(v): sum(1 for r in rows if r["version_read"] == v) for v in (1, 2, None)},
            "by_phase": {p: sum(1 for r in rows if r["phase"] == p) for p in sorted({r["phase"] for r in rows})},
            "rows": rows,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="result JSON")
    parser.add_argument("--child", nargs=2, metavar=("STORE", "PICKLE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    result = run_trials(args.trials, args.seed)
    text = json.dumps(result, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(f"{result['complete']} of {result['trials']} killed re-indexes left the filing complete (old or new)")
    print(f"  version read: {result['by_version_read']}; phase reached: {result['by_phase']}")
    print(
        f"  uninterrupted write: {result['write_seconds_uninterrupted']:.3f} s, "
        f"{result['updates_uninterrupted']} store updates"
    )


if __name__ == "__main__":
    main()
