"""Serving the query pipeline: one warm ``FinService`` and the bounds every request runs under.

``FinService`` holds one pipeline, ``pipelines/query.yaml`` through ``QueryRunner`` (the path ``ask`` takes):
retrieval, then the prompt, Ollama generator, answer builder and ``AnswerChecker``. Its ``gate`` is closed per request
when Ollama is down or generation is off, so the answer is the evidence with the reason.

``RequestSlots`` runs those requests one at a time in one worker thread (the embedded store admits one client, and
the query components keep per-store caches that were not written for concurrent runs), with at most ``max_queue``
waiting and each request bounded by its ``Deadline``. A thread cannot be stopped from outside, so the bound is kept
from inside: the worker skips a request whose deadline passed or whose client left, the generator's tokens are
streamed through a callback that stops the run once the deadline passes, and the generator's HTTP timeout is set to
what is left of the deadline (it bounds a generator that sends nothing). Retrieval is not interruptible; it is short.

The HTTP and MCP side is ``haystack_fin/server.py``. Configuration comes from the command line or the environment:
``HAYSTACK_FIN_STORE`` (embedded store folder), ``HAYSTACK_FIN_QDRANT_URL`` (a Qdrant server),
``HAYSTACK_FIN_INDEX``, ``HAYSTACK_FIN_OLLAMA_URL`` and ``HAYSTACK_FIN_OLLAMA_MODEL`` (default: the YAML's).
"""

import asyncio
import math
import os
import re
import threading
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from haystack import logging

from haystack_fin.core.validation import is_int
from haystack_fin.responses import (
    generation_status,
    numbers_check_text,
    passage_label,
    query_response,
    unknown_filing_ids,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

STORE_ENV = "HAYSTACK_FIN_STORE"
QDRANT_URL_ENV = "HAYSTACK_FIN_QDRANT_URL"
INDEX_ENV = "HAYSTACK_FIN_INDEX"
OLLAMA_URL_ENV = "HAYSTACK_FIN_OLLAMA_URL"
OLLAMA_MODEL_ENV = "HAYSTACK_FIN_OLLAMA_MODEL"
PIPELINE_NAME = "haystack-fin"  # the route prefix, the OpenAI model name and the MCP tool name

# Request bounds: a question is a sentence or two; 2,000 characters is generous and keeps a pasted document from
# being embedded and BM25-scored against every Item.
MAX_QUESTION_CHARS = 2000
MAX_K = 50
# Explicit filing ids: what the filing converter writes ([A-Za-z0-9._-], an accession number's digits and dashes)
# plus ":" and "+"; never "#", which separates a filing id from its node ids.
FILING_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}")
MAX_FILING_IDS = 10
# An unknown filing id re-reads the filing profiles (a filing indexed since the last read), at most this often, so
# a stream of unknown ids does not turn into a stream of store scans.
PROFILE_REFRESH_SECONDS = 5.0
WARM_UP_QUESTION = "What was total revenue?"


class RequestError(ValueError):
    """A request the service refuses, with the HTTP status that says why (the message is one line)."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


class RequestTimeout(RequestError):
    """The request's deadline passed (or its client left) before its answer was ready."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer within the {seconds:g} s deadline; try again, or ask a narrower question", 504)


class GenerationStopped(BaseException):
    """Raised inside the generator when the request's deadline passed or its client left. A ``BaseException`` so that
    Haystack's ``Pipeline.run`` lets it through as it is: an ``Exception`` would be wrapped in a
    ``PipelineRuntimeError`` after a snapshot of the pipeline's state is serialized for it (a few tenths of a second
    on the worker, and warnings in the log, for a request nobody waits for). ``FinService.ask`` turns it into
    ``RequestTimeout``."""


class ServerBusy(RequestError):
    """The queue of waiting requests is full; ``retry_after`` is an estimate in seconds of when it has room."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the server is busy (queue full); retry after {retry_after} s", 503)
        self.retry_after = retry_after


@dataclass(frozen=True)
class ServingConfig:
    store: str | None = None
    qdrant_url: str | None = None
    index: str | None = None
    ollama_url: str | None = None
    ollama_model: str | None = None

    @classmethod
    def from_env(cls) -> "ServingConfig":
        def get(name: str) -> str | None:
            return os.environ.get(name) or None

        return cls(get(STORE_ENV), get(QDRANT_URL_ENV), get(INDEX_ENV), get(OLLAMA_URL_ENV), get(OLLAMA_MODEL_ENV))


def _shown(value: str, limit: int = 40) -> str:
    """A client's value quoted in an error message: ``repr`` (escapes control characters and lone surrogates, which
    a JSON response could not encode), cut to ``limit`` characters."""
    return repr(value if len(value) <= limit else value[:limit] + "...")


def validate_question(question: Any, k: Any = 5) -> tuple[str, int]:
    """The question stripped and ``k``, or a ``RequestError`` naming the problem. The length is checked on the raw
    string, before it is split into words (a 3 MB question must not become a list of a million strings)."""
    if not isinstance(question, str):
        raise RequestError("question must be a string")
    if len(question) > MAX_QUESTION_CHARS:
        raise RequestError(f"question is {len(question):,} characters; the limit is {MAX_QUESTION_CHARS:,}", status=413)
    try:
        question.encode("utf-8")
    except UnicodeEncodeError:
        raise RequestError("question is not valid Unicode text (it holds a lone surrogate)") from None
    text = " ".join(question.split())
    if not text:
        raise RequestError("question is empty")
    if not is_int(k, 1, maximum=MAX_K):
        raise RequestError(f"k must be an integer from 1 to {MAX_K}, got {k!r}")
    return text, k


def validate_filing_ids(filing_ids: Any) -> list[str]:
    """Explicit filing ids, each once, in order (``[]`` for none), or a ``RequestError``: a list of at most
    ``MAX_FILING_IDS`` strings matching ``FILING_ID_PATTERN``."""
    if filing_ids is None:
        return []
    if not isinstance(filing_ids, list):
        raise RequestError("filing_ids must be a list of filing ids")
    if len(filing_ids) > MAX_FILING_IDS:
        raise RequestError(f"{len(filing_ids)} filing ids; the limit is {MAX_FILING_IDS}")
    for fid in filing_ids:
        if not isinstance(fid, str) or not FILING_ID_PATTERN.fullmatch(fid):
            shown = _shown(fid) if isinstance(fid, str) else type(fid).__name__
            raise RequestError(
                f"filing id {shown} is not valid: letters, digits and . _ - : + (at most 128 characters)"
            )
    return list(dict.fromkeys(filing_ids))


def ollama_reachable(url: str, timeout: float = 1.5) -> bool:
    """Whether an Ollama server answers ``/api/tags`` at ``url``."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/api/tags", timeout=timeout) as response:
            return bool(response.status == 200)
    except Exception:
        return False


def sources_text(passages: list[dict[str, Any]], citations: list[dict[str, Any]] | None) -> str:
    """The "Sources" block of a chat answer: the cited passages (all passages for an evidence-only answer)."""
    cited = {c["ref"] for c in citations} if citations is not None else None
    return "\n".join(f"[{n}] {passage_label(p)}" for n, p in enumerate(passages, 1) if cited is None or n in cited)


class Deadline:
    """When a request must be answered by, and whether it was given up (its client left, or the server answered
    504): the worker checks it before a run and at every generated token.

    Usage example:
    ```python
    deadline = Deadline(60)
    deadline.check()  # raises RequestTimeout once 60 s have passed or deadline.abandon() was called
    ```
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        self._abandoned = threading.Event()  # set from the event loop, read by the worker thread

    def remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def abandon(self) -> None:
        self._abandoned.set()

    @property
    def expired(self) -> bool:
        return self._abandoned.is_set() or time.monotonic() >= self.at

    def check(self) -> None:
        if self.expired:
            raise RequestTimeout(self.seconds)


class FinService:
    """Warm retrieval and answering for the served pipeline. Not thread-safe: one ``ask`` at a time (the server
    runs them through ``RequestSlots``)."""

    def __init__(self, config: ServingConfig) -> None:
        self.config = config
        self.runner: Any = None
        self.ollama_url = ""
        self._ollama_checked = 0.0
        self._ollama_up: bool | None = None  # not probed yet: the first probe is logged either way
        self._profiles_read = 0.0
        self._deadline = Deadline(math.inf)  # the running request's, read by the generator when its turn comes
        self._bounded: Any = None  # the runner whose generator is bounded

    def warm_up(self) -> float:
        """Load the query pipeline and answer one question (model, store and filing caches loaded); seconds taken."""
        from haystack_fin.pipeline_loader import pipeline_dict
        from haystack_fin.query_runner import QueryRunner
        from haystack_fin.store_check import check_pipeline_stores

        start = time.perf_counter()
        cfg = self.config
        if not cfg.store and not cfg.qdrant_url:
            raise RequestError(f"no store configured: set {STORE_ENV} or {QDRANT_URL_ENV}", status=503)
        if not cfg.qdrant_url:
            check_pipeline_stores(pipeline_dict("query", cfg.store), str(cfg.store), create=False)
        self.runner = QueryRunner(
            cfg.store,
            cfg.qdrant_url,
            cfg.index,
            generate=True,
            ollama_url=cfg.ollama_url,
            ollama_model=cfg.ollama_model,
        )
        self.ollama_url = self.runner.llm_url or ""
        self.runner.run(WARM_UP_QUESTION, k=1, generate=False)
        self._profiles_read = time.monotonic()
        self.ollama_up()
        took = time.perf_counter() - start
        logger.info("haystack-fin service warm in {took:.1f} s", took=took)
        return took

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()

    def ollama_up(self) -> bool:
        """Whether Ollama answers; re-checked at most every 5 s so a request does not pay for the probe."""
        now = time.monotonic()
        if now - self._ollama_checked > 5.0:
            up = ollama_reachable(self.ollama_url)
            if up != self._ollama_up:
                log = logger.info if up else logger.warning
                log("Ollama at {url} is {state}", url=self.ollama_url, state="reachable" if up else "not reachable")
            self._ollama_up = up
            self._ollama_checked = now
        return bool(self._ollama_up)

    def resolve_filings(self, filing_ids: list[str]) -> None:
        """Refuse explicit filing ids before the pipeline runs: more than the scope's ``max_filings`` (the bound a
        question's own scope has) is 422, an id no indexed filing has is 404."""
        scope = self.runner.pipe.get_component("scope") if "scope" in self.runner.data["components"] else None
        limit = getattr(scope, "max_filings", None)
        if isinstance(limit, int) and len(filing_ids) > limit:
            raise RequestError(f"{len(filing_ids)} filing ids; this server searches at most {limit} (max_filings)")
        if scope is None or not hasattr(scope, "profiles"):
            return  # a custom scope: the pipeline reports unknown ids as it runs
        known = {p.filing_id for p in scope.profiles}
        unknown = [fid for fid in filing_ids if fid not in known]
        if unknown and time.monotonic() - self._profiles_read > PROFILE_REFRESH_SECONDS:
            scope.refresh()  # a filing indexed since the profiles were read
            self._profiles_read = time.monotonic()
            known = {p.filing_id for p in scope.profiles}
            unknown = [fid for fid in filing_ids if fid not in known]
        if unknown:
            raise RequestError(f"no indexed filing has id {', '.join(map(repr, unknown))}", status=404)

    def _bound_generator(self) -> None:
        """Give the generator, when its turn in the pipeline comes, an HTTP timeout of what is left of the running
        request's deadline then (retrieval before it takes from under a second to a few on a loaded machine), so a
        generator that sends nothing cannot hold the worker past the deadline; past it, the generator is not called.

        Pipeline.run calls ``instance.run``, so the generator's own ``run`` is wrapped on the instance, once per
        loaded pipeline; ``close`` drops its client and its ``run`` opens one with the new timeout."""
        if "llm" not in self.runner.data["components"] or self._bounded is self.runner:
            return
        self._bounded = self.runner
        llm = self.runner.pipe.get_component("llm")
        if not (hasattr(llm, "timeout") and hasattr(llm, "close")):
            return
        generate, configured = llm.run, llm.timeout

        def run_within_deadline(*args: Any, **kwargs: Any) -> Any:
            if self._deadline.expired:
                raise GenerationStopped
            remaining = self._deadline.remaining()
            timeout = max(0.1, remaining) if math.isfinite(remaining) else configured
            if llm.timeout != timeout:
                llm.timeout = timeout
                llm.close()
            try:
                return generate(*args, **kwargs)
            except Exception:
                if self._deadline.expired:  # its HTTP timeout, which is the deadline
                    raise GenerationStopped from None
                raise

        llm.run = run_within_deadline

    def ask(
        self,
        question: str,
        filing_ids: list[str] | None = None,
        k: int = 5,
        explain: bool = False,
        generate: bool = True,
        streaming_callback: Callable[[Any], None] | None = None,
        deadline: Deadline | None = None,
    ) -> dict[str, Any]:
        """Passages, and a checked answer when Ollama is reachable (``generation`` says what happened): one run of
        the query pipeline, its gate closed when generation is off or Ollama is down. With a ``deadline``, the run
        stops at the first generated token past it (``RequestTimeout``)."""
        question, k = validate_question(question, k)
        ids = validate_filing_ids(filing_ids)
        deadline = deadline or Deadline(math.inf)
        deadline.check()  # it may have waited its whole deadline in the queue
        if ids:
            self.resolve_filings(ids)
        up = generate and self.ollama_up()
        on_token = None
        if up:
            self._deadline = deadline
            self._bound_generator()

            def on_token(chunk: Any) -> None:
                if deadline.expired:
                    raise GenerationStopped  # raised inside the generator: the pipeline run ends here
                if streaming_callback is not None:
                    streaming_callback(chunk)

        try:
            result = self.runner.run(question, ids or None, k=k, generate=up, streaming_callback=on_token)
        except GenerationStopped:
            raise RequestTimeout(deadline.seconds) from None
        except Exception as exc:
            if deadline.expired:
                raise RequestTimeout(deadline.seconds) from exc
            if getattr(exc, "component_name", None) == "llm":  # Haystack's PipelineRuntimeError names the component
                logger.exception("the generator at {url} failed", url=self.ollama_url)
                raise RequestError("the answer generator failed; the server log has the details", 502) from exc
            raise
        out = query_response(
            question,
            result,
            # No URL here: a client learns that generation is off, the operator's log says where Ollama was looked for.
            generation_status(generate, up, result.answer is not None, bool(result.passages), ""),
            explain,
        )
        unknown = unknown_filing_ids(out["unmatched"])
        if unknown:
            raise RequestError(f"no indexed filing has id {', '.join(map(repr, unknown))}", status=404)
        return out


class RequestSlots:
    """One request at a time in one worker thread, at most ``max_queue`` waiting, each until its ``Deadline``.

    ``acquire`` waits for the worker (``ServerBusy`` when the queue is full, ``RequestTimeout`` at the deadline; a
    cancelled wait leaves the queue); ``submit`` runs a function in the worker and gives the slot back when the
    function returns, not when its caller stops waiting, so a run past its deadline still holds the worker until it
    stops at its next check; ``run`` is both, answering at the deadline either way.

    Usage example (inside a coroutine):
    ```python
    slots = RequestSlots(max_queue=16, request_timeout=60)
    deadline = slots.deadline()
    out = await slots.run(lambda: service.ask("What was revenue?", deadline=deadline), deadline)
    ```
    """

    def __init__(self, max_queue: int, request_timeout: float) -> None:
        if max_queue < 0:
            raise ValueError(f"max_queue must be 0 or more, got {max_queue}")
        if not request_timeout > 0:
            raise ValueError(f"request_timeout must be a positive number of seconds, got {request_timeout}")
        self.max_queue = max_queue
        self.request_timeout = request_timeout
        self._lock = asyncio.Lock()  # FIFO: requests are served in arrival order
        self._waiting = 0
        self._run_seconds = 1.0  # moving average of a run, for Retry-After
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="haystack-fin-query")

    def deadline(self) -> Deadline:
        return Deadline(self.request_timeout)

    def retry_after(self) -> int:
        """Seconds until the queue has room, estimated from recent run times (1 to ``request_timeout``)."""
        estimate = math.ceil(self._run_seconds * (self._waiting + 1))
        return max(1, min(estimate, math.ceil(self.request_timeout)))

    def status(self) -> dict[str, Any]:
        return {
            "running": int(self._lock.locked()),
            "waiting": self._waiting,
            "max_queue": self.max_queue,
            "request_timeout_s": self.request_timeout,
        }

    async def acquire(self, deadline: Deadline) -> None:
        if self._lock.locked() and self._waiting >= self.max_queue:
            raise ServerBusy(self.retry_after())
        self._waiting += 1
        try:
            async with asyncio.timeout(deadline.remaining()):
                await self._lock.acquire()
        except TimeoutError:
            raise RequestTimeout(deadline.seconds) from None
        finally:
            self._waiting -= 1

    def submit(self, fn: Callable[[], T]) -> "asyncio.Future[T]":
        """Run ``fn`` in the worker; the caller holds the slot (``acquire``), which is released when ``fn`` returns."""
        started = time.monotonic()
        try:
            future = asyncio.get_running_loop().run_in_executor(self._executor, fn)
        except BaseException:
            self._lock.release()
            raise

        def done(finished: "asyncio.Future[T]") -> None:
            self._run_seconds = 0.8 * self._run_seconds + 0.2 * (time.monotonic() - started)
            self._lock.release()
            if not finished.cancelled():
                finished.exception()  # a run its caller stopped waiting for ends unread: not an error to log

        future.add_done_callback(done)
        return future

    async def run(self, fn: Callable[[], T], deadline: Deadline) -> T:
        await self.acquire(deadline)
        return await until_deadline(self.submit(fn), deadline)

    def close(self) -> None:
        """Drop what waits and let the running request finish (it stops at its deadline)."""
        self._executor.shutdown(wait=True, cancel_futures=True)


async def until_deadline(future: "asyncio.Future[T]", deadline: Deadline) -> T:
    """``future``'s result, or ``RequestTimeout`` at the deadline; either way, and when the caller is cancelled (its
    client left), the deadline is abandoned, which stops the worker at its next check."""
    try:
        done, _ = await asyncio.wait({future}, timeout=deadline.remaining())
    except asyncio.CancelledError:
        deadline.abandon()
        raise
    if not done:
        deadline.abandon()
        raise RequestTimeout(deadline.seconds)
    return future.result()


def _footer(passages: list[dict[str, Any]], citations: list[dict[str, Any]] | None, unsupported: list[Any]) -> str:
    sources = sources_text(passages, citations)
    return f"Sources:\n{sources or '(the answer cites no passage)'}\n\n{numbers_check_text(unsupported)}"


def notice_text(unmatched: list[dict[str, Any]]) -> str:
    """One line per thing the question asks for that no indexed filing has."""
    return "".join(f"Not in the indexed filings: {u['reason']}.\n" for u in unmatched)


def render_chat(out: dict[str, Any]) -> str:
    """The chat text of an ``ask`` result. A generated answer comes first (it is what streams), then the notices of
    what is not in the indexed filings, its sources and the number check; without an answer the notices come first."""
    notice = notice_text(out.get("unmatched") or [])
    passages = out["passages"]
    if out["answer"] is None:
        lines = [f"No generated answer ({out['generation']}); the passages that answer the question:"]
        for n, p in enumerate(passages, 1):
            text = " ".join((p["text"] or "").split())
            lines.append(f"[{n}] {text[:300]}{'...' if len(text) > 300 else ''}")
        body = "\n".join(lines) if passages else "No indexed passage matches the question."
        return notice + (f"{body}\n\nSources:\n{sources_text(passages, None)}" if passages else body)
    footer = _footer(passages, out["citations"], out["unsupported_numbers"] or [])
    return f"{out['answer']}\n\n{notice}{footer}"
