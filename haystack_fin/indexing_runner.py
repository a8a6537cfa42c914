"""Index many filings without letting one of them hang or crash the batch.

The indexing pipeline is split in two stages (``split_indexing_pipeline``):

- the **parse stage** (converter, splitter): pure CPU, no models, where a pathological filing can spin (a
  backtracking regex once hung a 10-K for ever) or crash the interpreter (a segfault in a C parser). It runs in
  worker processes with a deadline per filing; a worker past its deadline is terminated and replaced.
- the **write stage** (embedder, trees, writer): runs in this process, one filing at a time, in filing order, with
  the models loaded once and the store opened once (embedded Qdrant allows one client per folder).

Workers are a small pool of ``multiprocessing`` spawn processes, each with its own duplex Pipe, not a
``ProcessPoolExecutor``: an executor cannot kill one hung task, and a process terminated while it writes to a
shared Queue can leave the queue with a half-written message. A Pipe belongs to one worker and is thrown away with
it. Each worker loads the parse-stage pipeline once and reuses it for every filing it gets; outcomes cross the
process boundary pickled (a 10-K's ~1,600 chunks: ~2 MB, <0.1 s each way, against ~30 s of parsing).
"""

import contextlib
import logging
import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from haystack import Document, Pipeline

from haystack_fin.core import schema
from haystack_fin.pipeline_loader import ALLOWED_MODULES, drop_components
from haystack_fin.store_check import connect_store, error_line

logger = logging.getLogger(__name__)

PARSE_COMPONENTS = ("converter", "splitter")
# Spawning a worker imports Haystack and the parse components: seconds on an idle machine, tens of seconds on a
# loaded one. Not part of any filing's time bound, but bounded so that a worker stuck while starting cannot hang.
STARTUP_TIMEOUT_S = 600.0
_TERMINATE_GRACE_S = 5.0  # SIGTERM, then SIGKILL after this long
_LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


@dataclass
class ParseOutcome:
    """One filing through the parse stage."""

    source: str  # the path as given
    documents: list[Document]  # every Document the parse stage emits towards the write stage (chunks, filing nodes)
    stage_outputs: dict[str, dict[str, Any]]  # {receiver_component: {socket: value}} to feed the write stage
    failures: list[str]  # one-line "FILE: reason" strings (converter failures, timeout, worker crash)
    n_pages: int
    n_chunks: int  # emitted Documents that are not filing nodes
    seconds: float  # wall time of the parse stage for this filing
    timed_out: bool = False


@dataclass
class IndexReport:
    """What ``index_filings`` did."""

    n_ok: int = 0
    n_failed: int = 0
    failures: list[str] = field(default_factory=list)
    nodes_written: int = 0
    pages: int = 0  # pages of the filings written
    seconds: float = 0.0  # wall time of the whole call (models and workers loaded, all filings)
    parse_seconds: float = 0.0  # sum of the filings' parse-stage times (in the workers)
    write_seconds: float = 0.0  # sum of the filings' write-stage times (in this process)
    optimize_seconds: float = 0.0  # the stores' optimize() after the batch (Qdrant Edge: HNSW, merged segments)


def _component(endpoint: str) -> str:
    return endpoint.split(".", 1)[0]


def split_indexing_pipeline(
    data: dict[str, Any], parse_components: Iterable[str] = PARSE_COMPONENTS
) -> tuple[dict[str, Any], dict[str, Any], list[tuple[str, str]]]:
    """The indexing pipeline dict split into the parse stage (``parse_components``: pure CPU, no models) and the
    write stage (everything else: embedder, trees, writer), plus the connections that cross from one to the other
    ``[(sender "comp.socket", receiver "comp.socket")]``. Derived from the dict's connections; only the names of
    the parse components are given.

    :raises ValueError: a parse component is missing, no connection crosses, or one goes from the write stage back
        into the parse stage (the parse stage could then not run first).
    """
    parse = tuple(parse_components)
    components = data.get("components") or {}
    missing = [name for name in parse if name not in components]
    if missing:
        raise ValueError(f"the indexing pipeline has no component {', '.join(map(repr, missing))}")
    connections = data.get("connections") or []
    crossing: list[tuple[str, str]] = []
    for conn in connections:
        sender_in, receiver_in = _component(conn["sender"]) in parse, _component(conn["receiver"]) in parse
        if sender_in and not receiver_in:
            crossing.append((conn["sender"], conn["receiver"]))
        elif receiver_in and not sender_in:
            raise ValueError(
                f"connection {conn['sender']} -> {conn['receiver']} feeds the parse stage from the write stage"
            )
    if not crossing:
        raise ValueError(f"no connection goes from {', '.join(parse)} to the rest of the pipeline")
    write = tuple(name for name in components if name not in parse)
    # drop_components keeps the other top-level keys (metadata, max_runs_per_component, ...) and only the
    # connections inside what is left.
    return drop_components(data, write), drop_components(data, parse), crossing


def _per_source(meta: dict[str, Any] | list[dict[str, Any]] | None, n: int) -> list[dict[str, Any] | None]:
    if isinstance(meta, list):
        if len(meta) != n:
            raise ValueError(f"meta has {len(meta)} entries but there are {n} sources")
        return list(meta)
    return [meta] * n


class _ParseStage:
    """The parse-stage pipeline, loaded once, run on one filing at a time (in a worker or in this process)."""

    def __init__(self, parse_data: dict[str, Any], crossing: list[tuple[str, str]], entry: str) -> None:
        self.pipe = Pipeline.from_dict(parse_data, allowed_modules=ALLOWED_MODULES)
        self.pipe.warm_up()
        self.crossing = sorted(crossing)  # several senders into one socket: Haystack's sync order (by sender)
        self.entry = entry
        self.components = set(parse_data["components"])

    def close(self) -> None:
        self.pipe.close()

    def run(self, source: str, meta: dict[str, Any] | None) -> ParseOutcome:
        t0 = time.perf_counter()
        try:
            result = self.pipe.run(
                {self.entry: {"sources": [source], "meta": meta}}, include_outputs_from=self.components
            )
        except Exception as exc:  # a component bug on one filing is that filing's failure
            logger.debug("Parse stage failed on %s", source, exc_info=True)
            return ParseOutcome(source, [], {}, [f"{source}: {error_line(exc)}"], 0, 0, time.perf_counter() - t0)
        failures = [
            _failure_line(source, f)
            for name in sorted(self.components)
            for f in (result.get(name) or {}).get("failures") or []
        ]
        stage_outputs: dict[str, dict[str, Any]] = {}
        documents: list[Document] = []
        seen: set[int] = set()
        for sender, receiver in self.crossing:
            comp, socket = sender.split(".", 1)
            if socket not in (result.get(comp) or {}):
                continue  # the sender did not run or did not emit this socket
            value = result[comp][socket]
            r_comp, r_socket = receiver.split(".", 1)
            inputs = stage_outputs.setdefault(r_comp, {})
            if r_socket in inputs and isinstance(inputs[r_socket], list) and isinstance(value, list):
                inputs[r_socket] = [*inputs[r_socket], *value]
            else:
                inputs[r_socket] = value
            for doc in value if isinstance(value, list) else [value]:
                if isinstance(doc, Document) and id(doc) not in seen:
                    seen.add(id(doc))
                    documents.append(doc)
        filing_nodes = [d for d in documents if d.meta.get(schema.NODE_TYPE) == schema.NodeType.FILING.value]
        pages_from = filing_nodes or (result.get(self.entry) or {}).get("documents") or []
        n_pages = sum(int(d.meta.get(schema.N_PAGES) or 0) for d in pages_from)
        return ParseOutcome(
            source=source,
            documents=documents,
            stage_outputs=stage_outputs,
            failures=failures,
            n_pages=n_pages,
            n_chunks=len(documents) - len(filing_nodes),
            seconds=time.perf_counter() - t0,
        )


def _failure_line(source: str, failure: Any) -> str:
    text = str(failure.get("error") or failure) if isinstance(failure, dict) else str(failure)
    lines = text.strip().splitlines()
    return lines[0] if lines else f"{source}: failed"


def _die_with_parent() -> None:
    """Linux: the kernel kills this worker if the parent dies without shutting the pool down (SIGKILL, OOM), so a
    worker stuck in C code cannot outlive it. Elsewhere a worker notices only at its next recv."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _worker_main(
    conn: multiprocessing.connection.Connection,
    parse_data: dict[str, Any],
    crossing: list[tuple[str, str]],
    entry: str,
    log_level: int,
) -> None:
    """A worker: load the parse stage once, then parse filings until told to stop or the parent goes away."""
    _die_with_parent()
    # Ctrl-C reaches the whole process group; the parent handles it and shuts the workers down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=log_level, format=_LOG_FORMAT)
    try:
        stage = _ParseStage(parse_data, crossing, entry)
    except Exception as exc:
        conn.send(("init_error", error_line(exc)))
        return
    conn.send(("ready",))
    try:
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                return  # the parent closed its end
            if task is None:
                return
            task_id, source, meta = task
            conn.send(("done", task_id, stage.run(source, meta)))
    finally:
        stage.close()


@dataclass(eq=False)  # identity: workers are dict keys and list members
class _Worker:
    process: Any  # multiprocessing SpawnProcess
    conn: multiprocessing.connection.Connection
    started: float
    ready: bool = False
    task: tuple[int, str] | None = None  # (index in the batch, source)
    task_started: float = 0.0


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"exit code {code}, killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


class ParseWorkerPool:
    """At most ``workers`` spawn processes running the parse stage of a pipeline dict, reused across filings and
    across ``parse`` calls. Use as a context manager: the workers are shut down at the end, on an exception and on
    KeyboardInterrupt. ``in_process=True`` runs the stage in this process instead (no time bound)."""

    def __init__(
        self,
        pipeline_data: dict[str, Any],
        *,
        workers: int = 1,
        parse_components: Iterable[str] = PARSE_COMPONENTS,
        in_process: bool = False,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        parse_components = tuple(parse_components)
        self.parse_data, self.write_data, self.crossing = split_indexing_pipeline(pipeline_data, parse_components)
        self.entry = parse_components[0]
        self.n_workers = workers
        self.in_process = in_process
        self._ctx = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []
        self._local: _ParseStage | None = None
        self._closed = False

    def __enter__(self) -> "ParseWorkerPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- workers -----------------------------------------------------------------------------------------------

    def start(self, n: int | None = None) -> None:
        """Start workers up to ``n`` (default ``workers``) now, e.g. so that they import while the caller loads
        its models. ``parse`` starts them as needed anyway."""
        if self._closed:
            raise RuntimeError("the pool is closed")
        if self.in_process:
            if self._local is None:
                self._local = _ParseStage(self.parse_data, self.crossing, self.entry)
            return
        target = min(self.n_workers, self.n_workers if n is None else n)
        while len(self._workers) < target:
            parent_end, child_end = self._ctx.Pipe(duplex=True)
            process = self._ctx.Process(
                target=_worker_main,
                args=(child_end, self.parse_data, self.crossing, self.entry, logging.getLogger().getEffectiveLevel()),
                name=f"haystack-fin-parse-{len(self._workers)}",
                daemon=True,
            )
            process.start()
            child_end.close()  # the worker holds its end; closing ours lets recv() see EOF when the worker dies
            self._workers.append(_Worker(process, parent_end, started=time.monotonic()))

    def _stop(self, worker: _Worker, graceful: bool = False) -> int | None:
        """Stop one worker and reap it (no zombie); its pipe, with whatever half-sent message, is discarded."""
        if worker in self._workers:
            self._workers.remove(worker)
        process = worker.process
        if graceful and worker.ready and worker.task is None and process.is_alive():
            with contextlib.suppress(OSError, ValueError):
                worker.conn.send(None)
            process.join(_TERMINATE_GRACE_S)
        if process.is_alive():
            process.terminate()
            process.join(_TERMINATE_GRACE_S)
        if process.is_alive():
            process.kill()
            process.join()
        code = process.exitcode
        with contextlib.suppress(OSError):
            worker.conn.close()
        process.close()  # frees the sentinel fd; the process was joined above
        return code

    def close(self) -> None:
        """Shut every worker down: idle ones are asked to exit, busy ones terminated."""
        self._closed = True
        for worker in list(self._workers):
            self._stop(worker, graceful=True)
        if self._local is not None:
            self._local.close()
            self._local = None

    # -- parsing -----------------------------------------------------------------------------------------------

    def parse(
        self,
        sources: list[str],
        meta: dict[str, Any] | list[dict[str, Any]] | None = None,
        timeout_s: float | None = 600,
    ) -> Iterator[ParseOutcome]:
        """Parse each source (one filing per pipeline run) and yield the outcomes in input order.

        A filing past ``timeout_s`` seconds (None or 0: no limit) is stopped, its worker terminated and replaced,
        and it is reported as ``FILE: timed out after N s``; a worker that dies is reported as
        ``FILE: worker process died (exit code X)``; the batch goes on."""
        if self._closed:
            raise RuntimeError("the pool is closed")
        if timeout_s is not None and (timeout_s < 0 or math.isnan(timeout_s)):
            raise ValueError(f"timeout_s must be positive, 0 or None, got {timeout_s}")
        sources = [str(s) for s in sources]
        metas = _per_source(meta, len(sources))
        if self.in_process:
            self.start()
            assert self._local is not None
            for source, source_meta in zip(sources, metas, strict=True):
                yield self._local.run(source, source_meta)
            return
        yield from self._parse_in_workers(sources, metas, timeout_s or None)

    def _parse_in_workers(
        self, sources: list[str], metas: list[dict[str, Any] | None], timeout_s: float | None
    ) -> Iterator[ParseOutcome]:
        todo = deque(range(len(sources)))
        done: dict[int, ParseOutcome] = {}
        next_i = 0
        # Filings parsed ahead of the one the caller is writing, held in memory: one per worker while the caller
        # works on the previous outcome keeps every worker busy.
        window = 2 * self.n_workers
        try:
            while next_i < len(sources):
                self.start(min(self.n_workers, len(todo) + self._busy()))
                for worker in self._workers:
                    if todo and worker.ready and worker.task is None and todo[0] < next_i + window:
                        i = todo.popleft()
                        worker.conn.send((i, sources[i], metas[i]))
                        worker.task, worker.task_started = (i, sources[i]), time.monotonic()
                if next_i in done:
                    yield done.pop(next_i)
                    next_i += 1
                    continue
                self._poll(done, timeout_s)
        finally:
            # The caller stopped early (break, exception, Ctrl-C): workers still on a filing nobody waits for are
            # stopped, so that a later parse() does not receive their stale results.
            for worker in [w for w in self._workers if w.task is not None]:
                self._stop(worker)

    def _busy(self) -> int:
        return sum(1 for w in self._workers if w.task is not None)

    def _poll(self, done: dict[int, ParseOutcome], timeout_s: float | None) -> None:
        """Wait for a message, a worker's death or the nearest deadline, and handle what happened."""
        now = time.monotonic()
        deadlines = [
            (w.task_started + timeout_s) if w.ready else (w.started + STARTUP_TIMEOUT_S)
            for w in self._workers
            if (w.task is not None and timeout_s is not None) or not w.ready
        ]
        wait_s = max(0.0, min(deadlines) - now) if deadlines else None
        handles: dict[Any, _Worker] = {}
        for w in self._workers:
            handles[w.conn] = w
            handles[w.process.sentinel] = w
        ready = multiprocessing.connection.wait(list(handles), timeout=wait_s)
        # Messages first: a worker that finished just before its deadline, or just before dying, is not lost.
        for worker in {handles[h] for h in ready}:
            if worker in self._workers:
                self._receive(worker, done)
        now = time.monotonic()
        for worker in list(self._workers):
            if not worker.ready and now >= worker.started + STARTUP_TIMEOUT_S and not worker.conn.poll():
                self._stop(worker)
                raise RuntimeError(f"a parse worker did not start within {STARTUP_TIMEOUT_S:g} s")
            if (
                worker.task is not None
                and timeout_s is not None
                and now >= worker.task_started + timeout_s
                and not worker.conn.poll()  # a result already on its way counts as in time
            ):
                i, source = worker.task
                worker.task = None  # stopped on purpose: not a crash
                self._stop(worker)
                line = f"{source}: timed out after {timeout_s:g} s"
                logger.warning("%s", line)
                done[i] = ParseOutcome(source, [], {}, [line], 0, 0, now - worker.task_started, timed_out=True)

    def _receive(self, worker: _Worker, done: dict[int, ParseOutcome]) -> None:
        try:
            # A dead worker's pipe reads as EOF once the messages it sent before dying are consumed.
            message = worker.conn.recv() if worker.conn.poll() else None
        except (EOFError, OSError):
            self._died(worker, done)
            return
        if message is None:
            if not worker.process.is_alive():
                self._died(worker, done)
        elif message[0] == "ready":
            worker.ready = True
        elif message[0] == "done":
            _, i, outcome = message
            worker.task = None
            done[i] = outcome
        elif message[0] == "init_error":
            self._stop(worker)
            raise RuntimeError(f"a parse worker could not load the parse stage: {message[1]}")

    def _died(self, worker: _Worker, done: dict[int, ParseOutcome]) -> None:
        task, ready = worker.task, worker.ready
        code = self._stop(worker)
        if not ready:
            raise RuntimeError(f"a parse worker died while starting ({_exit_text(code)})")
        if task is not None:
            i, source = task
            line = f"{source}: worker process died ({_exit_text(code)})"
            logger.warning("%s", line)
            done[i] = ParseOutcome(source, [], {}, [line], 0, 0, time.monotonic() - worker.task_started)


def parse_filings(
    sources: list[str],
    pipeline_data: dict[str, Any],
    meta: dict[str, Any] | list[dict[str, Any]] | None = None,
    *,
    timeout_s: float | None = 600,
    workers: int = 1,
    in_process: bool = False,
) -> Iterator[ParseOutcome]:
    """Run the parse stage of each filing in worker processes (multiprocessing spawn context), at most ``workers``
    at a time, and yield outcomes in input order. A filing past ``timeout_s`` is stopped (its worker terminated
    and replaced) and reported as ``FILE: timed out after N s``; a worker that dies is reported as
    ``FILE: worker process died (exit code X)``; the batch goes on. Workers are reused across filings.
    ``in_process=True`` runs the stage in this process without a time bound (tests, debugging).

    :param pipeline_data: the whole indexing pipeline dict; only its parse stage runs here.
    :param meta: metadata for every filing (a dict) or per source (a list of the same length).
    """
    with ParseWorkerPool(pipeline_data, workers=workers, in_process=in_process) as pool:
        yield from pool.parse(sources, meta, timeout_s)


def add_filing_vectors(store: Any, quiet: bool = False) -> int:
    """Give each filing node that has no vector the filing vector of its chunks (what ``FilingWriter`` writes with
    every filing since filing vectors exist): one filtered read of a filing's chunk vectors and one write per
    filing. ``store`` must return embeddings. Returns how many filing nodes were updated.
    """
    from haystack.document_stores.types import DuplicatePolicy
    from tqdm import tqdm

    from haystack_fin.components.filing_writer import with_filing_vectors

    is_filing = schema.node_type_filter(schema.NodeType.FILING)
    todo = [node for node in store.filter_documents(filters=is_filing) if node.embedding is None]
    updated = 0
    for node in tqdm(todo, desc="filing vectors", unit="filing", disable=quiet):
        filing = schema.FilingNode.from_meta(node.meta)
        conditions = [
            {"field": f"meta.{schema.FILING_ID}", "operator": "==", "value": filing.filing_id},
            schema.node_type_filter(schema.NodeType.CHUNK),
        ]
        if filing.index_run:  # the chunks of the run the filing node names (a re-index may have left others)
            conditions.append({"field": f"meta.{schema.INDEX_RUN}", "operator": "==", "value": filing.index_run})
        chunks = store.filter_documents(filters={"operator": "AND", "conditions": conditions})
        [with_vector] = with_filing_vectors([node], chunks)  # FilingWriter's rule, on the stored chunks
        if with_vector.embedding is None:
            logger.warning("%s: no chunk vectors, so no filing vector", filing.filing_id)
            continue
        store.write_documents([with_vector], policy=DuplicatePolicy.OVERWRITE)
        updated += 1
    return updated


def _optimize_stores(write: Pipeline, names: Iterable[str], quiet: bool) -> float:
    t0 = time.perf_counter()
    seen: set[int] = set()
    for name in names:
        store = getattr(write.get_component(name), "document_store", None)
        if store is None or id(store) in seen or not callable(getattr(store, "optimize", None)):
            continue
        seen.add(id(store))
        if not quiet:
            logger.info("Optimizing the store (segments and vector index) ...")
        store.optimize()
    return time.perf_counter() - t0


def index_filings(
    sources: Iterable[str | os.PathLike[str]],
    pipeline_data: dict[str, Any],
    meta: dict[str, Any] | list[dict[str, Any]] | None = None,
    *,
    timeout_s: float | None = 600,
    workers: int = 1,
    quiet: bool = False,
    progress_desc: str = "Indexing",
    in_process: bool = False,
    optimize: bool = True,
) -> IndexReport:
    """``parse_filings`` plus the write stage in this process, one filing at a time, in filing order: the
    write-stage pipeline is loaded once (its stores connected before any filing is parsed, so a locked store
    fails first) and run per filing on ``ParseOutcome.stage_outputs``. A filing that failed or timed out writes
    nothing. A tqdm progress bar unless ``quiet``. With ``optimize``, every store of the write stage that has an
    ``optimize()`` (Qdrant Edge, which runs no background optimizer) is optimized once after the batch when
    anything was written: its HNSW index is what keeps a search over the whole store (a question naming no
    company) from reading every vector.

    :raises StoreError: a store of the write stage is in use or has another vector size.
    """
    from tqdm import tqdm

    t0 = time.perf_counter()
    paths = [str(s) for s in sources]
    report = IndexReport()
    with ParseWorkerPool(pipeline_data, workers=workers, in_process=in_process) as pool:
        if not in_process:
            pool.start(min(workers, len(paths)))  # workers import while the write stage loads its models
        write = Pipeline.from_dict(pool.write_data, allowed_modules=ALLOWED_MODULES)
        try:
            for name in pool.write_data["components"]:
                connect_store(getattr(write.get_component(name), "document_store", None))
            write.warm_up()
            outcomes = pool.parse(paths, meta, timeout_s)
            for outcome in tqdm(outcomes, total=len(paths), desc=progress_desc, unit="filing", disable=quiet):
                report.parse_seconds += outcome.seconds
                if outcome.failures or outcome.timed_out:
                    report.n_failed += 1
                    report.failures.extend(outcome.failures)
                    continue
                t_write = time.perf_counter()
                try:
                    result = write.run(outcome.stage_outputs)
                except Exception as exc:  # e.g. the embedder on one filing: that filing fails, the batch goes on
                    logger.debug("Write stage failed on %s", outcome.source, exc_info=True)
                    report.n_failed += 1
                    report.failures.append(f"{outcome.source}: {error_line(exc)}")
                    continue
                finally:
                    report.write_seconds += time.perf_counter() - t_write
                report.n_ok += 1
                report.pages += outcome.n_pages
                report.nodes_written += sum(
                    int(out.get("documents_written") or 0) for out in result.values() if isinstance(out, dict)
                )
            if optimize and report.nodes_written:
                report.optimize_seconds = _optimize_stores(write, pool.write_data["components"], quiet)
        finally:
            write.close()
    report.seconds = time.perf_counter() - t0
    return report
