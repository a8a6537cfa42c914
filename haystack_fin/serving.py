"""Serving the query pipeline: one warm service behind Hayhooks (``pipelines/haystack_fin/pipeline_wrapper.py``).

``FinService`` holds one pipeline, ``pipelines/query.yaml`` through ``QueryRunner`` (the path ``ask`` takes):
retrieval, then the prompt, Ollama generator, answer builder and ``AnswerChecker``. Its ``gate`` is closed per request
when Ollama is down or generation is off, so the answer is the evidence with the reason; the chat endpoint streams the
generator's tokens through a run-time ``streaming_callback``.

Configuration comes from the environment, so ``hayhooks run --pipelines-dir pipelines`` works as well as
``haystack-fin serve``: ``HAYSTACK_FIN_STORE`` (embedded store folder), ``HAYSTACK_FIN_QDRANT_URL`` (a Qdrant
server; the path for several processes or replicas, since an embedded folder admits one process),
``HAYSTACK_FIN_INDEX``, ``HAYSTACK_FIN_OLLAMA_URL`` and ``HAYSTACK_FIN_OLLAMA_MODEL`` (default: the YAML's).
"""

import json
import logging
import os
import queue
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

STORE_ENV = "HAYSTACK_FIN_STORE"
QDRANT_URL_ENV = "HAYSTACK_FIN_QDRANT_URL"
INDEX_ENV = "HAYSTACK_FIN_INDEX"
OLLAMA_URL_ENV = "HAYSTACK_FIN_OLLAMA_URL"
OLLAMA_MODEL_ENV = "HAYSTACK_FIN_OLLAMA_MODEL"
PIPELINE_NAME = "haystack-fin"  # the folder name under pipelines/: "haystack_fin" would shadow this package

# Request bounds: a question is a sentence or two; 2,000 characters is generous and keeps a pasted document from
# being embedded and BM25-scored against every Item.
MAX_QUESTION_CHARS = 2000
MAX_K = 50
WARM_UP_QUESTION = "What was total revenue?"


class RequestError(ValueError):
    """A request the service refuses, with the HTTP status that says why (the message is one line)."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


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

    def environ(self) -> dict[str, str]:
        """The environment variables that carry this configuration to a server process."""
        pairs = {
            STORE_ENV: self.store,
            QDRANT_URL_ENV: self.qdrant_url,
            INDEX_ENV: self.index,
            OLLAMA_URL_ENV: self.ollama_url,
            OLLAMA_MODEL_ENV: self.ollama_model,
        }
        return {k: v for k, v in pairs.items() if v}


def validate_question(question: Any, k: Any = 5) -> tuple[str, int]:
    """The question stripped and ``k``, or a ``RequestError`` naming the problem."""
    if not isinstance(question, str):
        raise RequestError("question must be a string")
    text = " ".join(question.split())
    if not text:
        raise RequestError("question is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise RequestError(f"question is {len(text):,} characters; the limit is {MAX_QUESTION_CHARS:,}", status=413)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise RequestError(f"k must be an integer from 1 to {MAX_K}, got {k!r}")
    return text, k


def ollama_reachable(url: str, timeout: float = 1.5) -> bool:
    """Whether an Ollama server answers ``/api/tags`` at ``url``."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/api/tags", timeout=timeout) as response:
            return bool(response.status == 200)
    except Exception:
        return False


def passage_dict(doc: Any) -> dict[str, Any]:
    """A returned passage as JSON: text and provenance."""
    m = doc.meta
    return {
        "id": doc.id,
        "text": doc.content,
        "filing_id": m.get("filing_id"),
        "company": m.get("company"),
        "form": m.get("form"),
        "period": m.get("period"),
        "item": m.get("item"),
        "pages": m.get("page_numbers"),
        "modality": m.get("modality"),
        "table_id": m.get("table_id"),
        "score": doc.score,
    }


def _plain(value: Any) -> Any:
    """JSON-safe copy of a trace (sets, dataclasses and numpy scalars become strings or lists)."""
    return json.loads(json.dumps(value, default=str))


def sources_text(passages: list[dict[str, Any]], citations: list[dict[str, Any]] | None) -> str:
    """The "Sources" block of a chat answer: the cited passages (all passages for an evidence-only answer)."""
    cited = {c["ref"] for c in citations} if citations is not None else None
    lines = []
    for n, p in enumerate(passages, 1):
        if cited is not None and n not in cited:
            continue
        pages = ", ".join(str(x) for x in p["pages"] or [])
        table = f", {p['table_id']}" if p.get("table_id") else ""
        lines.append(
            f"[{n}] {p['company']} {p['form']} {p['period']} ({p['filing_id']}), Item {p['item']}, p. {pages}{table}"
        )
    return "\n".join(lines)


def check_text(unsupported: list[dict[str, Any]]) -> str:
    if not unsupported:
        return "Every number in the answer was found in a cited passage."
    found = ", ".join(u["text"] for u in unsupported)
    return f"Numbers not found in the cited passages (check them): {found}"


class FinService:
    """Warm retrieval and answering for the served pipeline (thread-safe; see ``ask``)."""

    def __init__(self, config: ServingConfig) -> None:
        self.config = config
        self.runner: Any = None
        self.ollama_url = ""
        # One request runs at a time, generation included (it is one Pipeline.run of query.yaml): the embedded store
        # admits one client, and the query components keep per-store caches that were not written for concurrent
        # runs. A local Ollama server generates one answer at a time by default anyway; for parallel requests run
        # several workers against a Qdrant server.
        self._lock = threading.Lock()
        self._ollama_checked = 0.0
        self._ollama_up = False

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
        with self._lock:
            self.runner.run(WARM_UP_QUESTION, k=1, generate=False)
        took = time.perf_counter() - start
        logger.info("haystack-fin service warm in %.1f s", took)
        return took

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()

    def ollama_up(self) -> bool:
        """Whether Ollama answers; re-checked at most every 5 s so a request does not pay for the probe."""
        now = time.monotonic()
        if now - self._ollama_checked > 5.0:
            self._ollama_up = ollama_reachable(self.ollama_url)
            self._ollama_checked = now
        return self._ollama_up

    def ask(
        self,
        question: str,
        filing_ids: list[str] | None = None,
        k: int = 5,
        explain: bool = False,
        generate: bool = True,
        streaming_callback: Callable[[Any], None] | None = None,
    ) -> dict[str, Any]:
        """Passages, and a checked answer when Ollama is reachable (``generation`` says what happened): one run of
        the query pipeline, its gate closed when generation is off or Ollama is down."""
        question, k = validate_question(question, k)
        up = generate and self.ollama_up()
        with self._lock:
            result = self.runner.run(
                question, filing_ids or None, k=k, generate=up, streaming_callback=streaming_callback if up else None
            )
        unmatched = list((result.trace.get("scope") or {}).get("unmatched") or [])
        unknown = [u["text"] for u in unmatched if u.get("kind") == "filing_id"]
        if unknown:
            raise RequestError(f"no indexed filing has id {', '.join(map(repr, unknown))}", status=404)
        answer = result.answer
        out: dict[str, Any] = {
            "question": question,
            "answer": answer.data if answer is not None else None,
            "citations": answer.meta.get("citations") if answer is not None else None,
            "unsupported_numbers": answer.meta.get("unsupported_numbers") if answer is not None else None,
            # What the question asks for that no indexed filing has (company, period, form): "not in these filings".
            "unmatched": unmatched,
            "generation": generation_status(generate, up, answer is not None, bool(result.passages), self.ollama_url),
        }
        out["passages"] = [passage_dict(d) for d in result.passages]
        if explain:
            out["trace"] = _plain(result.trace)
        return out

    def chat(self, question: str, stream: bool) -> str | Iterator[Any]:
        """An OpenAI-style chat answer: the checked answer (or the evidence) followed by its sources; streamed token
        by token from the generator when ``stream`` (the same text as without)."""
        question, k = validate_question(question, 5)
        if not stream or not self.ollama_up():
            return render_chat(self.ask(question, k=k))
        from haystack.dataclasses import StreamingChunk

        chunks: queue.Queue[str | None] = queue.Queue()
        streamed: list[bool] = []

        def on_token(chunk: Any) -> None:
            streamed.append(True)
            if chunk.content:
                chunks.put(chunk.content)

        def work() -> None:
            try:
                out = self.ask(question, k=k, streaming_callback=on_token)
                # The tokens already went out; what follows them is the rest of render_chat's text.
                chunks.put(render_chat(out)[len(out["answer"] or "") :] if streamed else render_chat(out))
            except Exception as exc:  # the client gets one line; the server log the rest
                logger.exception("chat request failed")
                chunks.put(f"\n\nerror: {exc}")
            finally:
                chunks.put(None)

        threading.Thread(target=work, daemon=True).start()

        def tokens() -> Iterator[Any]:
            while (text := chunks.get()) is not None:
                yield StreamingChunk(content=text)  # the chunk type Hayhooks streams

        return tokens()


def generation_status(requested: bool, ollama_up: bool, answered: bool, passages: bool, url: str) -> str:
    """What happened to generation, in words (the reason when there is no answer)."""
    if answered:
        return "ollama"
    if not requested:
        return "skipped: generate=false"
    if not ollama_up:
        return f"skipped: Ollama not reachable at {url}"
    return "skipped: no passage found" if not passages else "skipped"


def _footer(passages: list[dict[str, Any]], citations: list[dict[str, Any]] | None, unsupported: list[Any]) -> str:
    sources = sources_text(passages, citations)
    return f"Sources:\n{sources or '(the answer cites no passage)'}\n\n{check_text(unsupported)}"


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


# ---------------------------------------------------------------------------------------------------------------
# haystack-fin serve
# ---------------------------------------------------------------------------------------------------------------


def server_environ(config: ServingConfig, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a Hayhooks server needs for this package: the store, offline model, no telemetry, the
    deserialization allowlist (Hayhooks sets none, and the YAML pipelines name ``haystack_fin`` types) and a
    sequential start (parallel deploys raced on imports in testing)."""
    env = dict(os.environ if base is None else base)
    for name in (STORE_ENV, QDRANT_URL_ENV, INDEX_ENV, OLLAMA_URL_ENV, OLLAMA_MODEL_ENV):
        env.pop(name, None)
    env.update(config.environ())
    allow = [p for p in env.get("HAYSTACK_DESERIALIZATION_ALLOWLIST", "").split(",") if p]
    env["HAYSTACK_DESERIALIZATION_ALLOWLIST"] = ",".join(dict.fromkeys([*allow, "haystack_fin.*"]))
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("HAYHOOKS_STARTUP_DEPLOY_STRATEGY", "sequential")
    return env


def served_pipelines_dir() -> Path:
    """The shipped ``pipelines/`` folder (inside the wheel or the repository): the wrapper folder ``haystack-fin/``
    deploys; Hayhooks logs a warning for query.yaml and indexing.yaml and skips them (they declare no inputs)."""
    from haystack_fin.pipeline_loader import pipelines_dir

    return pipelines_dir()


def hayhooks_command(host: str, port: int, pipelines: Path, mcp: bool = False) -> list[str]:
    """``hayhooks run`` (REST and OpenAI chat) or ``hayhooks mcp run`` (the MCP server: every deployed wrapper's
    ``run_api`` is a tool, its signature the tool's input schema and its docstring the description; streamable HTTP
    at ``/mcp``, SSE at ``/sse``) through this interpreter (hayhooks' ``__main__`` is empty, so ``-m hayhooks``
    would exit at once; its console script calls ``hayhooks.cli.hayhooks_cli``)."""
    return [
        sys.executable,
        "-c",
        "import sys; from hayhooks.cli import hayhooks_cli; sys.argv[0] = 'hayhooks'; sys.exit(hayhooks_cli())",
        *(["mcp", "run"] if mcp else ["run"]),
        "--host",
        host,
        "--port",
        str(port),
        "--pipelines-dir",
        str(pipelines),
    ]


def serve(
    config: ServingConfig, host: str, port: int, exec_fn: Callable[..., Any] | None = None, mcp: bool = False
) -> None:
    """Replace this process with a Hayhooks server for ``config`` (the store is checked first): REST and OpenAI
    chat, or with ``mcp`` Hayhooks' MCP server (a process of its own: on an embedded store, one of the two at a
    time; both against a Qdrant server)."""
    from haystack_fin.pipeline_loader import pipeline_dict
    from haystack_fin.store_check import check_pipeline_stores

    if not config.qdrant_url:
        if not config.store:
            raise RequestError("give --store DIR or --qdrant-url URL")
        check_pipeline_stores(pipeline_dict("query", config.store), config.store, create=False)
        config = ServingConfig(
            str(Path(config.store).expanduser().resolve()), None, config.index, config.ollama_url, config.ollama_model
        )
    if mcp:
        try:
            import mcp as _mcp  # noqa: F401  (hayhooks imports it lazily and would fail after the exec)
        except ImportError:
            raise RequestError("the MCP server needs the mcp package: pip install 'haystack-fin[serve]'") from None
    command = hayhooks_command(host, port, served_pipelines_dir(), mcp=mcp)
    env = server_environ(config)
    logger.info("starting %s", " ".join(command))
    (exec_fn or os.execve)(command[0], command, env)
