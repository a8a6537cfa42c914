"""Serving the query pipeline: one warm service behind Hayhooks (``pipelines/haystack_fin/pipeline_wrapper.py``).

``FinService`` holds two pipelines loaded from ``pipelines/query.yaml``: retrieval (``QueryRunner`` without
generation, the path ``ask`` and ``eval`` take) and answering (the YAML's prompt builder, Ollama generator and answer
builder, followed by ``AnswerChecker``). Keeping them apart lets a request fall back to an evidence-only answer when
Ollama is down without a second embedder or store, and lets the chat endpoint stream the generator's tokens.

Configuration comes from the environment, so ``hayhooks run --pipelines-dir pipelines`` works as well as
``haystack-fin serve``: ``HAYSTACK_FIN_STORE`` (embedded store folder), ``HAYSTACK_FIN_QDRANT_URL`` (a Qdrant
server; the path for several processes or replicas, since an embedded folder admits one process),
``HAYSTACK_FIN_INDEX``, ``HAYSTACK_FIN_OLLAMA_URL`` and ``HAYSTACK_FIN_OLLAMA_MODEL`` (default: the YAML's).
"""

import copy
import json
import logging
import os
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
ANSWER_COMPONENTS = ("prompt_builder", "llm", "answer_builder")


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
        self.answer_pipe: Any = None
        self.ollama_url = ""
        # Retrieval runs one request at a time: the embedded store admits one client, and the query components keep
        # per-store caches that were not written for concurrent runs. Answer generation (the slow part, waiting on
        # Ollama) runs outside the lock.
        self._lock = threading.Lock()
        self._ollama_checked = 0.0
        self._ollama_up = False

    def warm_up(self) -> float:
        """Load both pipelines and answer one question (model, store and filing caches loaded); seconds taken."""
        from haystack import Pipeline

        from haystack_fin.pipeline_loader import ALLOWED_MODULES, pipeline_dict
        from haystack_fin.query_runner import QueryRunner
        from haystack_fin.store_check import check_pipeline_stores

        start = time.perf_counter()
        cfg = self.config
        if not cfg.store and not cfg.qdrant_url:
            raise RequestError(f"no store configured: set {STORE_ENV} or {QDRANT_URL_ENV}", status=503)
        data = pipeline_dict("query", cfg.store, cfg.qdrant_url, cfg.index)
        if not cfg.qdrant_url:
            check_pipeline_stores(data, str(cfg.store), create=False)
        self.runner = QueryRunner(cfg.store, cfg.qdrant_url, cfg.index, generate=False)
        self.answer_pipe = Pipeline.from_dict(answer_pipeline_dict(data, cfg), allowed_modules=ALLOWED_MODULES)
        self.ollama_url = self.answer_pipe.get_component("llm").url
        with self._lock:
            self.runner.run(WARM_UP_QUESTION, k=1)
        self.answer_pipe.warm_up()
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

    def retrieve(self, question: str, filing_ids: list[str] | None, k: int) -> Any:
        with self._lock:
            return self.runner.run(question, filing_ids or None, k=k)

    def answer_inputs(self, question: str, documents: list[Any]) -> dict[str, Any]:
        return {
            "prompt_builder": {"query": question, "documents": documents},
            "answer_builder": {"query": question, "documents": documents},
            "checker": {"documents": documents},
        }

    def ask(
        self,
        question: str,
        filing_ids: list[str] | None = None,
        k: int = 5,
        explain: bool = False,
        generate: bool = True,
    ) -> dict[str, Any]:
        """Passages, and a checked answer when Ollama is reachable (``generation`` says what happened)."""
        question, k = validate_question(question, k)
        result = self.retrieve(question, filing_ids, k)
        unmatched = list((result.trace.get("scope") or {}).get("unmatched") or [])
        unknown = [u["text"] for u in unmatched if u.get("kind") == "filing_id"]
        if unknown:
            raise RequestError(f"no indexed filing has id {', '.join(map(repr, unknown))}", status=404)
        out: dict[str, Any] = {
            "question": question,
            "answer": None,
            "citations": None,
            "unsupported_numbers": None,
            # What the question asks for that no indexed filing has (company, period, form): "not in these filings".
            "unmatched": unmatched,
        }
        if not generate:
            out["generation"] = "skipped: generate=false"
        elif not result.passages:
            out["generation"] = "skipped: no passage found"
        elif not self.ollama_up():
            out["generation"] = f"skipped: Ollama not reachable at {self.ollama_url}"
        else:
            answers = self.answer_pipe.run(self.answer_inputs(question, result.passages))["checker"]["answers"]
            answer = answers[0]
            out.update(
                answer=answer.data,
                citations=answer.meta.get("citations"),
                unsupported_numbers=answer.meta.get("unsupported_numbers"),
                generation="ollama",
            )
        out["passages"] = [passage_dict(d) for d in result.passages]
        if explain:
            out["trace"] = _plain(result.trace)
        return out

    def chat(self, question: str, stream: bool) -> str | Iterator[Any]:
        """An OpenAI-style chat answer: the checked answer (or the evidence) followed by its sources."""
        question, k = validate_question(question, 5)
        if not stream or not self.ollama_up():
            return render_chat(self.ask(question, k=k))
        from hayhooks import streaming_generator
        from haystack.dataclasses import StreamingChunk

        result = self.retrieve(question, None, k)
        passages = [passage_dict(d) for d in result.passages]
        unmatched = list((result.trace.get("scope") or {}).get("unmatched") or [])
        if not passages:
            return render_chat(
                {"answer": None, "generation": "skipped: no passage found", "passages": [], "unmatched": unmatched}
            )

        def footer(pipeline_result: dict[str, Any]) -> str:
            meta = pipeline_result["checker"]["answers"][0].meta
            return "\n\n" + _footer(passages, meta.get("citations"), meta.get("unsupported_numbers") or [])

        tokens = streaming_generator(
            self.answer_pipe,
            pipeline_run_args=self.answer_inputs(question, result.passages),
            on_pipeline_end=footer,
            streaming_components=["llm"],
        )
        notice = notice_text(unmatched)

        def with_notice() -> Iterator[Any]:
            if notice:
                yield StreamingChunk(content=notice)  # the same chunk type the generator streams
            yield from tokens

        return with_notice()


def _footer(passages: list[dict[str, Any]], citations: list[dict[str, Any]] | None, unsupported: list[Any]) -> str:
    sources = sources_text(passages, citations)
    return f"Sources:\n{sources or '(the answer cites no passage)'}\n\n{check_text(unsupported)}"


def notice_text(unmatched: list[dict[str, Any]]) -> str:
    """One line per thing the question asks for that no indexed filing has, before the answer."""
    return "".join(f"Not in the indexed filings: {u['reason']}.\n" for u in unmatched)


def render_chat(out: dict[str, Any]) -> str:
    """The chat text of an ``ask`` result."""
    return notice_text(out.get("unmatched") or []) + _render_body(out)


def _render_body(out: dict[str, Any]) -> str:
    passages = out["passages"]
    if out["answer"] is None:
        lines = [f"No generated answer ({out['generation']}); the passages that answer the question:"]
        for n, p in enumerate(passages, 1):
            text = " ".join((p["text"] or "").split())
            lines.append(f"[{n}] {text[:300]}{'...' if len(text) > 300 else ''}")
        body = "\n".join(lines) if passages else "No indexed passage matches the question."
        return f"{body}\n\nSources:\n{sources_text(passages, None)}" if passages else body
    return f"{out['answer']}\n\n{_footer(passages, out['citations'], out['unsupported_numbers'] or [])}"


def answer_pipeline_dict(query_data: dict[str, Any], config: ServingConfig) -> dict[str, Any]:
    """The query YAML's prompt builder, LLM and answer builder, then ``AnswerChecker``; the LLM's URL and model from
    the configuration when given (the environment), else the YAML's."""
    components = {name: copy.deepcopy(query_data["components"][name]) for name in ANSWER_COMPONENTS}
    llm = components["llm"]["init_parameters"]
    if config.ollama_url:
        llm["url"] = config.ollama_url
    if config.ollama_model:
        llm["model"] = config.ollama_model
    components["checker"] = {"type": "haystack_fin.components.answer_checker.AnswerChecker", "init_parameters": {}}
    connections = [
        c
        for c in query_data["connections"]
        if c["sender"].split(".")[0] in ANSWER_COMPONENTS and c["receiver"].split(".")[0] in ANSWER_COMPONENTS
    ]
    connections.append({"sender": "answer_builder.answers", "receiver": "checker.answers"})
    return {"components": components, "connections": connections}


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


def hayhooks_command(host: str, port: int, pipelines: Path) -> list[str]:
    """``hayhooks run`` through this interpreter (hayhooks' ``__main__`` is empty, so ``-m hayhooks`` would exit
    at once; its console script calls ``hayhooks.cli.hayhooks_cli``)."""
    return [
        sys.executable,
        "-c",
        "import sys; from hayhooks.cli import hayhooks_cli; sys.argv[0] = 'hayhooks'; sys.exit(hayhooks_cli())",
        "run",
        "--host",
        host,
        "--port",
        str(port),
        "--pipelines-dir",
        str(pipelines),
    ]


def serve(config: ServingConfig, host: str, port: int, exec_fn: Callable[..., Any] | None = None) -> None:
    """Replace this process with a Hayhooks server for ``config`` (the store is checked first)."""
    from haystack_fin.pipeline_loader import pipeline_dict
    from haystack_fin.store_check import check_pipeline_stores

    if not config.qdrant_url:
        if not config.store:
            raise RequestError("give --store DIR or --qdrant-url URL")
        check_pipeline_stores(pipeline_dict("query", config.store), config.store, create=False)
        config = ServingConfig(
            str(Path(config.store).expanduser().resolve()), None, config.index, config.ollama_url, config.ollama_model
        )
    command = hayhooks_command(host, port, served_pipelines_dir())
    env = server_environ(config)
    logger.info("starting %s", " ".join(command))
    (exec_fn or os.execve)(command[0], command, env)
