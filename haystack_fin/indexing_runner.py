"""Index many filings without letting one of them hang or crash the batch.

The indexing pipeline is split in two stages (``split_indexing_pipeline``):

- the **parse stage** (converter, splitter): pure CPU, no models, where a pathological filing can spin (a
  backtracking regex once hung a 10-K for ever) or crash the interpreter (a segfault in a C parser). It runs in
  worker processes with a deadline per filing; a worker past its deadline is terminated and replaced.
- the **write stage** (embedder, trees, writer): runs in this process, one filing at a time, in filing order, with
  the models loaded once and the store opened once (embedded Qdrant allows one client per folder).

``index_filings`` first reads which filing each file is (``FilingConverter.identify``: the accession number, else
the cover's company, form and period; milliseconds a PDF, a second or two an HTML 10-K), in the same workers, so
that two files of one filing are refused before anything is written, and a stored filing is not replaced by
another document without ``replace``. Each worker runs under a memory bound (``worker_memory_mb``: the kernel's
data-segment limit, RLIMIT_DATA, on Linux): a filing past it fails with one line and the worker is replaced.

Workers are a small pool of ``multiprocessing`` spawn processes, each with its own duplex Pipe, not a
``ProcessPoolExecutor``: an executor cannot kill one hung task, and a process terminated while it writes to a
shared Queue can leave the queue with a half-written message. A Pipe belongs to one worker and is thrown away with
it. Each worker loads the parse-stage pipeline once and reuses it for every filing it gets; outcomes cross the
process boundary pickled (a 10-K's ~1,600 chunks: ~2 MB, <0.1 s each way, against ~30 s of parsing).
"""

import contextlib
import logging as std_logging
import math
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from haystack import Document, Pipeline, logging

from haystack_fin.core import schema
from haystack_fin.core.ingest.filing_identity import FilingIdentity, filing_id_for, sha256_of
from haystack_fin.core.validation import check_int
from haystack_fin.pipeline_loader import ALLOWED_MODULES, drop_components
from haystack_fin.store_check import connect_store, error_line

logger = logging.getLogger(__name__)

PARSE_COMPONENTS = ("converter", "splitter")
# Spawning a worker imports Haystack and the parse components: seconds on an idle machine, tens of seconds on a
# loaded one. Not part of any filing's time bound, but bounded so that a worker stuck while starting cannot hang.
STARTUP_TIMEOUT_S = 600.0
_TERMINATE_GRACE_S = 5.0  # SIGTERM, then SIGKILL after this long
_LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"
# Data-segment bound of a parse worker (MB; ``--worker-memory``). One worker that parsed, in turn, the 52 dev and
# more-filings PDFs, the 17 EDGAR HTML filings and the 14 adversarial files (the OCR engine loaded on the way) grew
# to at most 2,285 MB, its 1,000-page 10-K at 1,706 MB (benchmarks/worker_memory.py,
# benchmarks/results/worker-memory.json; a fresh worker holds ~0.4 GB); 4 GB leaves room for larger real filings.
DEFAULT_WORKER_MEMORY_MB = 4096
# A worker whose data segment has grown past this share of its bound between filings is replaced before it gets
# the next one, so that one filing does not fail for what earlier ones left behind.
_RECYCLE_SHARE = 0.6
_MEMORY_ERROR = re.compile(r"MemoryError|out of memory|bad_alloc|Cannot allocate memory|malloc.*fail", re.IGNORECASE)


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
class IdentifyOutcome:
    """Which filing one file is (``identity``), or why that could not be read (``failures``: time-out, crash)."""

    source: str
    identity: FilingIdentity | None
    failures: list[str]
    seconds: float
    timed_out: bool = False


@dataclass
class IndexReport:
    """What ``index_filings`` did."""

    n_ok: int = 0
    n_failed: int = 0
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # one line per filing written with a caveat (skipped pages)
    filing_ids: dict[str, str] = field(default_factory=dict)  # source -> filing id, for the filings written
    recovered: dict[str, int] = field(default_factory=dict)  # interrupted earlier writes cleaned up: id -> nodes
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


# The meta of a batch: one mapping for every source, or one per source (None: nothing given for that source).
SourceMeta = dict[str, Any] | list[dict[str, Any]] | list[dict[str, Any] | None] | None


def _per_source(meta: SourceMeta, n: int) -> list[dict[str, Any] | None]:
    if isinstance(meta, list):
        if len(meta) != n:
            raise ValueError(f"meta has {len(meta)} entries but there are {n} sources")
        return list(meta)
    return [meta] * n


def _memory_line(source: str, limit_mb: int) -> str:
    return f"{source}: the parse worker ran out of memory (limit {limit_mb} MB; raise it with --worker-memory)"


def _is_memory_error(exc: BaseException | None) -> bool:
    while exc is not None:
        if isinstance(exc, MemoryError):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class _ParseStage:
    """The parse-stage pipeline, loaded once, run on one filing at a time (in a worker or in this process)."""

    def __init__(
        self,
        parse_data: dict[str, Any],
        crossing: list[tuple[str, str]],
        entry: str,
        memory_limit_mb: int | None = None,
    ) -> None:
        self.pipe = Pipeline.from_dict(parse_data, allowed_modules=ALLOWED_MODULES)
        self.pipe.warm_up()
        self.crossing = sorted(crossing)  # several senders into one socket: Haystack's sync order (by sender)
        self.entry = entry
        self.components = set(parse_data["components"])
        self.memory_limit_mb = memory_limit_mb
        self.out_of_memory = False  # set when a filing hit the bound: the worker is then replaced

    def close(self) -> None:
        self.pipe.close()

    def _memory(self, source: str, lines: list[str]) -> list[str]:
        """Failure lines with a memory failure under the worker's bound said as such (the converter reports a
        MemoryError as any other error, PyMuPDF's allocator failing as its own)."""
        if self.memory_limit_mb is None or not any(_MEMORY_ERROR.search(line) for line in lines):
            return lines
        self.out_of_memory = True
        return [_memory_line(source, self.memory_limit_mb)]

    def identify(self, source: str, meta: dict[str, Any] | None) -> IdentifyOutcome:
        """The converter's ``identify`` (FilingConverter's: accession, cover, stem); a converter without one gives
        the given id or the file stem. Never fails on a bad file: parsing it reports why."""
        t0 = time.perf_counter()
        converter = self.pipe.get_component(self.entry)
        given = (meta or {}).get(schema.FILING_ID)
        try:
            identify = getattr(converter, "identify", None)
            if callable(identify):
                identity = identify(source, meta)
            else:
                basis = "given" if given else "file name"
                identity = FilingIdentity(source, str(given or filing_id_for(source)), basis, sha256_of(source))
        except Exception as exc:
            if self.memory_limit_mb is not None and _is_memory_error(exc):
                self.out_of_memory = True
                return IdentifyOutcome(source, None, [_memory_line(source, self.memory_limit_mb)], 0.0)
            logger.debug("Identifying {source} failed", source=source, exc_info=True)
            basis = "given" if given else "file name"
            identity = FilingIdentity(source, str(given or filing_id_for(source)), basis, sha256_of(source))
        return IdentifyOutcome(source, identity, [], time.perf_counter() - t0)

    def run(self, source: str, meta: dict[str, Any] | None) -> ParseOutcome:
        t0 = time.perf_counter()
        try:
            result = self.pipe.run(
                {self.entry: {"sources": [source], "meta": meta}}, include_outputs_from=self.components
            )
        except Exception as exc:  # a component bug on one filing is that filing's failure
            logger.debug("Parse stage failed on {source}", source=source, exc_info=True)
            line = f"{source}: {error_line(exc)}"
            if self.memory_limit_mb is not None and _is_memory_error(exc):
                self.out_of_memory, line = True, _memory_line(source, self.memory_limit_mb)
            return ParseOutcome(source, [], {}, [line], 0, 0, time.perf_counter() - t0)
        failures = self._memory(
            source,
            [
                _failure_line(source, f)
                for name in sorted(self.components)
                for f in (result.get(name) or {}).get("failures") or []
            ],
        )
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


def limit_memory(limit_mb: int | None) -> bool:
    """Bound this process's data segment (heap and anonymous mappings: what parsing allocates) to ``limit_mb``
    MB, so that an allocation past it fails (MemoryError, or the C library's own error) instead of taking the
    machine's memory. Linux (RLIMIT_DATA counts anonymous mappings since 4.7); elsewhere nothing is set.
    Returns whether the bound is in place."""
    if limit_mb is None or not sys.platform.startswith("linux"):
        return False
    import resource

    limit = int(limit_mb) << 20
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    return True


def data_segment_mb(pid: int) -> float | None:
    """A process's data segment (VmData) in MB, what RLIMIT_DATA bounds; None where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _worker_main(
    conn: multiprocessing.connection.Connection,
    parse_data: dict[str, Any],
    crossing: list[tuple[str, str]],
    entry: str,
    log_level: int,
    memory_limit_mb: int | None = None,
) -> None:
    """A worker: load the parse stage once, then identify or parse filings until told to stop or the parent goes
    away (or a filing exhausted its memory bound: it exits after reporting it, and the pool replaces it)."""
    _die_with_parent()
    # Ctrl-C reaches the whole process group; the parent handles it and shuts the workers down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    std_logging.basicConfig(level=log_level, format=_LOG_FORMAT)
    limited = limit_memory(memory_limit_mb)
    try:
        stage = _ParseStage(parse_data, crossing, entry, memory_limit_mb if limited else None)
    except Exception as exc:
        conn.send(("init_error", error_line(exc)))
        return
    conn.send(("ready",))
    try:
        while not stage.out_of_memory:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                return  # the parent closed its end
            if task is None:
                return
            task_id, kind, source, meta = task
            result = stage.identify(source, meta) if kind == "identify" else stage.run(source, meta)
            # After a filing exhausted the memory bound the worker retires (its heap may be left fragmented):
            # said with the result, so that the pool sends it nothing more.
            conn.send(("done", task_id, result, stage.out_of_memory))
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
    across ``parse``/``identify`` calls. Use as a context manager: the workers are shut down at the end, on an
    exception and on KeyboardInterrupt. ``in_process=True`` runs the stage in this process instead (no time or
    memory bound). ``worker_memory_mb`` bounds each worker's memory (``limit_memory``; None: no bound)."""

    def __init__(
        self,
        pipeline_data: dict[str, Any],
        *,
        workers: int = 1,
        parse_components: Iterable[str] = PARSE_COMPONENTS,
        in_process: bool = False,
        worker_memory_mb: int | None = DEFAULT_WORKER_MEMORY_MB,
    ) -> None:
        check_int("workers", workers)
        check_int("worker_memory_mb", worker_memory_mb, optional=True)
        parse_components = tuple(parse_components)
        self.parse_data, self.write_data, self.crossing = split_indexing_pipeline(pipeline_data, parse_components)
        self.entry = parse_components[0]
        self.n_workers = workers
        self.in_process = in_process
        self.worker_memory_mb = worker_memory_mb
        self._ctx = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []
        self._local: _ParseStage | None = None
        self._closed = False
        self._kind = "parse"

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
                args=(
                    child_end,
                    self.parse_data,
                    self.crossing,
                    self.entry,
                    std_logging.getLogger().getEffectiveLevel(),
                    self.worker_memory_mb,
                ),
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
        code: int | None = process.exitcode
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
        meta: SourceMeta = None,
        timeout_s: float | None = 600,
    ) -> Iterator[ParseOutcome]:
        """Parse each source (one filing per pipeline run) and yield the outcomes in input order.

        A filing past ``timeout_s`` seconds (None or 0: no limit) is stopped, its worker terminated and replaced,
        and it is reported as ``FILE: timed out after N s``; a worker that dies is reported as
        ``FILE: worker process died (exit code X)``; one past its memory bound as ``FILE: the parse worker ran out
        of memory (...)``; the batch goes on."""
        yield from self._run("parse", sources, meta, timeout_s)

    def identify(
        self,
        sources: list[str],
        meta: SourceMeta = None,
        timeout_s: float | None = 600,
    ) -> Iterator[IdentifyOutcome]:
        """Which filing each source is (the parse stage's converter's ``identify``), in input order, under the
        same time and memory bounds as ``parse``."""
        yield from self._run("identify", sources, meta, timeout_s)

    def _run(
        self,
        kind: str,
        sources: list[str],
        meta: SourceMeta,
        timeout_s: float | None,
    ) -> Iterator[Any]:
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
                if kind == "identify":
                    yield self._local.identify(source, source_meta)
                else:
                    yield self._local.run(source, source_meta)
            return
        yield from self._run_in_workers(kind, sources, metas, timeout_s or None)

    def _bloated(self, worker: _Worker) -> bool:
        """Whether an idle worker's data segment has grown past ``_RECYCLE_SHARE`` of its bound."""
        if self.worker_memory_mb is None:
            return False
        used = data_segment_mb(worker.process.pid)
        return used is not None and used > _RECYCLE_SHARE * self.worker_memory_mb

    def _run_in_workers(
        self, kind: str, sources: list[str], metas: list[dict[str, Any] | None], timeout_s: float | None
    ) -> Iterator[Any]:
        todo = deque(range(len(sources)))
        done: dict[int, Any] = {}
        next_i = 0
        # Filings parsed ahead of the one the caller is writing, held in memory: one per worker while the caller
        # works on the previous outcome keeps every worker busy.
        window = 2 * self.n_workers
        self._kind = kind
        try:
            while next_i < len(sources):
                self.start(min(self.n_workers, len(todo) + self._busy()))
                for worker in list(self._workers):
                    if todo and worker.ready and worker.task is None and todo[0] < next_i + window:
                        if self._bloated(worker):
                            self._stop(worker, graceful=True)  # replaced by start() on the next round
                            continue
                        i = todo.popleft()
                        worker.conn.send((i, kind, sources[i], metas[i]))
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

    def _failed(self, source: str, line: str, seconds: float, timed_out: bool = False) -> Any:
        """The outcome of a task that did not finish, of the kind being run."""
        if self._kind == "identify":
            return IdentifyOutcome(source, None, [line], seconds, timed_out=timed_out)
        return ParseOutcome(source, [], {}, [line], 0, 0, seconds, timed_out=timed_out)

    def _busy(self) -> int:
        return sum(1 for w in self._workers if w.task is not None)

    def _poll(self, done: dict[int, Any], timeout_s: float | None) -> None:
        """Wait for a message, a worker's death or the nearest deadline, and handle what happened."""
        now = time.monotonic()
        deadlines = [
            (w.task_started + timeout_s) if w.ready and timeout_s is not None else (w.started + STARTUP_TIMEOUT_S)
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
                logger.warning("{line}", line=line)
                done[i] = self._failed(source, line, now - worker.task_started, timed_out=True)

    def _receive(self, worker: _Worker, done: dict[int, Any]) -> None:
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
            _, i, outcome, retiring = message
            worker.task = None
            done[i] = outcome
            if retiring:
                self._stop(worker, graceful=True)  # replaced by start() when there is more to do
        elif message[0] == "init_error":
            self._stop(worker)
            raise RuntimeError(f"a parse worker could not load the parse stage: {message[1]}")

    def _died(self, worker: _Worker, done: dict[int, Any]) -> None:
        task, ready = worker.task, worker.ready
        code = self._stop(worker)
        if not ready:
            raise RuntimeError(f"a parse worker died while starting ({_exit_text(code)})")
        if task is not None:
            i, source = task
            line = f"{source}: worker process died ({_exit_text(code)})"
            logger.warning("{line}", line=line)
            done[i] = self._failed(source, line, time.monotonic() - worker.task_started)


def parse_filings(
    sources: list[str],
    pipeline_data: dict[str, Any],
    meta: SourceMeta = None,
    *,
    timeout_s: float | None = 600,
    workers: int = 1,
    in_process: bool = False,
    worker_memory_mb: int | None = DEFAULT_WORKER_MEMORY_MB,
) -> Iterator[ParseOutcome]:
    """Run the parse stage of each filing in worker processes (multiprocessing spawn context), at most ``workers``
    at a time, and yield outcomes in input order. A filing past ``timeout_s`` is stopped (its worker terminated
    and replaced) and reported as ``FILE: timed out after N s``; a worker that dies is reported as
    ``FILE: worker process died (exit code X)``; one past ``worker_memory_mb`` as ``FILE: the parse worker ran out
    of memory (...)``; the batch goes on. Workers are reused across filings. ``in_process=True`` runs the stage
    in this process without a time or memory bound (tests, debugging).

    :param pipeline_data: the whole indexing pipeline dict; only its parse stage runs here.
    :param meta: metadata for every filing (a dict) or per source (a list of the same length).
    """
    with ParseWorkerPool(
        pipeline_data, workers=workers, in_process=in_process, worker_memory_mb=worker_memory_mb
    ) as pool:
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
            schema.filing_filter(filing.filing_id),
            schema.node_type_filter(schema.NodeType.CHUNK),
        ]
        if filing.index_run:  # the chunks of the run the filing node names (a re-index may have left others)
            conditions.append({"field": f"meta.{schema.INDEX_RUN}", "operator": "==", "value": filing.index_run})
        chunks = store.filter_documents(filters={"operator": "AND", "conditions": conditions})
        [with_vector] = with_filing_vectors([node], chunks)  # FilingWriter's rule, on the stored chunks
        if with_vector.embedding is None:
            logger.warning("{filing_id}: no chunk vectors, so no filing vector", filing_id=filing.filing_id)
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


def _filing_stores(write: Pipeline, names: Iterable[str]) -> list[Any]:
    """The stores of the write stage's FilingWriters (where filings are looked up before they are replaced)."""
    from haystack_fin.components.filing_writer import FilingWriter

    stores: list[Any] = []
    for name in names:
        component = write.get_component(name)
        if isinstance(component, FilingWriter) and all(component.document_store is not s for s in stores):
            stores.append(component.document_store)
    return stores


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def _resolve_ids(
    identities: list[tuple[int, FilingIdentity, bool]], stores: list[Any], replace: bool
) -> tuple[dict[int, str], list[tuple[list[int], str]]]:
    """The filing id each identified source is written under, and the refused sources with their one-line reason.

    A default id yields to the id under which a store already holds the same file (the same bytes; the same path
    for a filing stored without its hash): re-indexing it stays a re-index when the default id would come out
    otherwise (a store written when ids were file stems). Then two sources of one id are both refused; and a source
    whose id a store holds for another document (another path and other bytes) is refused unless ``replace``.

    :param identities: (index in the batch, identity, whether the id was given by the caller).
    """
    from haystack_fin.components.filing_writer import stored_filings

    stored: dict[str, schema.FilingNode] = {}
    for store in stores:
        for found in stored_filings(
            store,
            filing_ids=[i.filing_id for _, i, _ in identities],
            source_paths=[i.source for _, i, _ in identities],
            source_sha256s=[i.source_sha256 for _, i, _ in identities if i.source_sha256],
        ):
            stored.setdefault(found.filing_id, found)
    ids: dict[int, str] = {}
    for index, identity, given in identities:
        fid = identity.filing_id
        if not given:
            same = sorted(
                {
                    n.filing_id
                    for n in stored.values()
                    if identity.source_sha256 and n.source_sha256 == identity.source_sha256
                }
            )
            if not same:
                same = sorted(
                    {
                        n.filing_id
                        for n in stored.values()
                        # A path says "same document" only where the store recorded no hash (written before
                        # hashes were): otherwise another document saved under that name would replace it.
                        if not n.source_sha256 and n.source_path and _same_file(n.source_path, identity.source)
                    }
                )
            if len(same) == 1:
                fid = same[0]
        ids[index] = fid
    refused: list[tuple[list[int], str]] = []
    by_id: dict[str, list[int]] = {}
    for index, fid in ids.items():
        by_id.setdefault(fid, []).append(index)
    sources = {index: identity.source for index, identity, _ in identities}
    for fid, group in by_id.items():
        if len(group) > 1:
            names = ", ".join(sources[i] for i in group)
            refused.append(
                (
                    group,
                    f"{names}: the same filing ({fid}); none of them was indexed: index each alone with "
                    "--meta filing_id=ID to keep them apart",
                )
            )
            continue
        (index,) = group
        node = stored.get(fid)
        identity = next(i for j, i, _ in identities if j == index)
        if node is None or replace:
            continue
        other_file = not (node.source_path and _same_file(node.source_path, identity.source))
        other_bytes = not (node.source_sha256 and node.source_sha256 == identity.source_sha256)
        if other_file and other_bytes:
            refused.append(
                (
                    [index],
                    f"{identity.source}: filing {fid} is already indexed from another document "
                    f"({node.source_path or 'unknown source'}); not replaced: pass --replace to replace it, or "
                    "--meta filing_id=ID to index this one under another id",
                )
            )
    for group, _ in refused:
        for index in group:
            ids.pop(index, None)
    return ids, refused


def index_filings(
    sources: Iterable[str | os.PathLike[str]],
    pipeline_data: dict[str, Any],
    meta: SourceMeta = None,
    *,
    timeout_s: float | None = 600,
    workers: int = 1,
    quiet: bool = False,
    progress_desc: str = "Indexing",
    in_process: bool = False,
    optimize: bool = True,
    replace: bool = False,
    worker_memory_mb: int | None = DEFAULT_WORKER_MEMORY_MB,
) -> IndexReport:
    """``parse_filings`` plus the write stage in this process, one filing at a time, in filing order: the
    write-stage pipeline is loaded once (its stores connected before any filing is parsed, so a locked store
    fails first, and the leftovers of interrupted writes removed: ``FilingWriter.warm_up``) and run per filing on
    ``ParseOutcome.stage_outputs``.

    Before anything is parsed, every file is identified (``ParseWorkerPool.identify``: the filing id from the
    accession number or the cover, unless ``meta`` gives one) and the batch checked: sources that come out as one
    filing are refused together with one line naming them all; a source whose filing id a store already holds
    for another document (another source path and other bytes) is refused unless ``replace``. A filing that
    failed, timed out, ran out of memory or was refused writes nothing; the batch goes on.

    A tqdm progress bar unless ``quiet``. With ``optimize``, every store of the write stage that has an
    ``optimize()`` (Qdrant Edge, which runs no background optimizer) is optimized once after the batch when
    anything was written: its HNSW index is what keeps a search over the whole store (a question naming no
    company) from reading every vector.

    :param replace: let a source replace a stored filing of the same id that came from another document.
    :param worker_memory_mb: memory bound of each parse worker (``limit_memory``; None: none).
    :raises StoreError: a store of the write stage is in use or has another vector size.
    """
    from tqdm import tqdm

    from haystack_fin.core.ingest.pdf import skipped_pages_note

    t0 = time.perf_counter()
    paths = [str(s) for s in sources]
    metas = _per_source(meta, len(paths))
    report = IndexReport()
    with ParseWorkerPool(
        pipeline_data, workers=workers, in_process=in_process, worker_memory_mb=worker_memory_mb
    ) as pool:
        if not in_process:
            pool.start(min(workers, len(paths)))  # workers import while the write stage loads its models
        write = Pipeline.from_dict(pool.write_data, allowed_modules=ALLOWED_MODULES)
        try:
            for name in pool.write_data["components"]:
                connect_store(getattr(write.get_component(name), "document_store", None))
            write.warm_up()
            stores = _filing_stores(write, pool.write_data["components"])
            for name in pool.write_data["components"]:
                report.recovered.update(getattr(write.get_component(name), "recovered", None) or {})

            identified: list[tuple[int, FilingIdentity, bool]] = []
            failed: dict[int, list[str]] = {}
            outcomes_ = pool.identify(paths, metas, timeout_s)
            for i, found in enumerate(
                tqdm(
                    outcomes_,
                    total=len(paths),
                    desc="Reading filing ids",
                    unit="filing",
                    disable=quiet or len(paths) < 2,
                )
            ):
                report.parse_seconds += found.seconds
                if found.identity is None:
                    failed[i] = found.failures
                else:
                    identified.append((i, found.identity, bool((metas[i] or {}).get(schema.FILING_ID))))
            ids, refused = _resolve_ids(identified, stores, replace)
            for group, line in refused:
                report.failures.append(line)
                report.n_failed += len(group)
            todo = sorted(ids)
            todo_paths = [paths[i] for i in todo]
            todo_metas = [{**(metas[i] or {}), schema.FILING_ID: ids[i]} for i in todo]
            for i in sorted(failed):
                report.n_failed += 1
                report.failures.extend(failed[i])

            outcomes = pool.parse(todo_paths, todo_metas, timeout_s)
            for outcome in tqdm(outcomes, total=len(todo_paths), desc=progress_desc, unit="filing", disable=quiet):
                report.parse_seconds += outcome.seconds
                if outcome.failures or outcome.timed_out:
                    report.n_failed += 1
                    report.failures.extend(outcome.failures)
                    continue
                t_write = time.perf_counter()
                try:
                    result = write.run(outcome.stage_outputs)
                except Exception as exc:  # e.g. the embedder on one filing: that filing fails, the batch goes on
                    logger.debug("Write stage failed on {source}", source=outcome.source, exc_info=True)
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
                for node in outcome.documents:
                    if node.meta.get(schema.NODE_TYPE) != schema.NodeType.FILING.value:
                        continue
                    filing = schema.FilingNode.from_meta(node.meta)
                    report.filing_ids[outcome.source] = filing.filing_id
                    if filing.skipped_pages:
                        report.warnings.append(f"{outcome.source}: {skipped_pages_note(filing.skipped_pages)}")
            if optimize and report.nodes_written:
                report.optimize_seconds = _optimize_stores(write, pool.write_data["components"], quiet)
        finally:
            write.close()
    report.seconds = time.perf_counter() - t0
    return report
