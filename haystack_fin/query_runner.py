"""The one query path: ``pipelines/query.yaml`` run with ``Pipeline.run``, for ``ask``, ``eval`` and the Python API.

Ablations are edits of the pipeline's dict form before it is loaded (a component re-configured, replaced or
removed, connections rewired), never hand calls of components, so what the benchmark measures is what ships.
How many passages come back (``k``) and how many candidates are ranked are run-time inputs (Haystack's run-time
override of ``top_k``); the YAML's values are the defaults.
"""

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from haystack import Document, Pipeline
from haystack.dataclasses import StreamingChunk

from haystack_fin.core.validation import check_int
from haystack_fin.pipeline_loader import (
    ALLOWED_MODULES,
    apply_fragment,
    drop_components,
    load_fragment,
    pipeline_dict,
    strip_generation,
)

ABLATIONS: tuple[str, ...] = (
    "summary_tree",
    "question_tree",
    "flat_candidates",
    "flam",
    "reranker",
    "scope",
    "statements",
    "sections",
    "graph",
    "fallback",
    "ranking_model",
    "evidence_places",
    "neighbours",
    "distinct_pages",
)
# Components whose top_k is the candidate count (what the ranker keeps before the window merges neighbours).
CANDIDATE_COMPONENTS: tuple[str, ...] = ("router", "retriever", "ranker")
# Components whose run-time outputs make up the trace.
TRACE_COMPONENTS: tuple[str, ...] = (
    "analyzer",
    "scope",
    "router",
    "retriever",
    "graph",
    "ranker",
    "fallback",
    "window",
)
# The input socket of each query component that reads the question's text (the shipped YAML's names).
QUESTION_INPUTS: dict[str, str] = {
    "analyzer": "query",
    "embedder": "text",
    "scope": "query",
    "router": "query",
    "retriever": "query",
    "graph": "query",
    "ranker": "query",
    "fallback": "query",
    "prompt_builder": "query",
    "answer_builder": "query",
}
_DENSE_SCOPE = "haystack_fin.components.dense_filing_scope.DenseFilingScope"


def _bypass(data: dict[str, Any], name: str) -> dict[str, Any]:
    """Remove component ``name`` from the documents chain: whatever fed its ``documents`` now feeds every receiver
    of its ``documents`` output (retriever -> graph -> ranker becomes retriever -> ranker)."""
    senders = [c["sender"] for c in data["connections"] if c["receiver"] == f"{name}.documents"]
    receivers = [c["receiver"] for c in data["connections"] if c["sender"] == f"{name}.documents"]
    data = drop_components(data, (name,))
    data["connections"].extend({"sender": s, "receiver": r} for s in senders for r in receivers)
    return data


def ablate(data: dict[str, Any], names: set[str] | list[str] | tuple[str, ...]) -> dict[str, Any]:
    """The query pipeline dict with the named parts switched off (see ``ABLATIONS``); ``data`` is not changed."""
    unknown = set(names) - set(ABLATIONS)
    if unknown:
        raise ValueError(f"unknown ablation(s) {sorted(unknown)}; choose from {ABLATIONS}")
    data = copy.deepcopy(data)
    components = data["components"]
    retriever = components["retriever"]["init_parameters"]
    if "summary_tree" in names:
        retriever["use_summary_tree"] = False
    if "question_tree" in names:
        retriever["use_question_tree"] = False
    if "flat_candidates" in names:  # tree candidates only
        retriever["flat_candidates_per_item"] = 0
    if "statements" in names:  # no statement blocks added, no statement prior in the ranker
        retriever["statement_candidates"] = False
        ranker = components["ranker"]["init_parameters"]
        ranker["fallback_weights"] = {**(ranker.get("fallback_weights") or {}), "statement": 0.0}
    if "sections" in names:  # no chunks under the concepts' headings added, no section prior in the ranker
        retriever["section_candidates"] = 0
        ranker = components["ranker"]["init_parameters"]
        ranker["fallback_weights"] = {**(ranker.get("fallback_weights") or {}), "section": 0.0}
    if "evidence_places" in names:  # no candidates from the concepts' Items, the filing's headings, the whole filing
        retriever.update(intent_item_candidates=0, heading_candidates=0, filing_flat_candidates=0)
    if "neighbours" in names:  # no prose continuing a candidate on the page before or after
        retriever["neighbour_candidates"] = 0
    if "ranking_model" in names:  # the hand-set fusion of the fallback's signals instead of the learned model
        components["ranker"]["init_parameters"]["scoring_model"] = None
    if "distinct_pages" in names and "window" in components:  # a passage may repeat pages already shown
        components["window"]["init_parameters"]["distinct_pages"] = False
    if "flam" in names:  # every Item with chunks gets an equal share, whatever the question
        components["router"]["init_parameters"]["mode"] = "uniform"
    if "scope" in names:  # the filings of the nearest chunks, as flat RAG would pick them
        scope = components["scope"]["init_parameters"]
        components["scope"] = {
            "type": _DENSE_SCOPE,
            "init_parameters": {"document_store": scope["document_store"], "max_filings": scope.get("max_filings", 3)},
        }
        # The dense scope reads no question text, so it has no analysis input.
        data["connections"] = [c for c in data["connections"] if c["receiver"] != "scope.analysis"]
        dense = {"sender": "embedder.embedding", "receiver": "scope.query_embedding"}
        if dense not in data["connections"]:  # FilingScope takes it too, to bound unscoped questions
            data["connections"].append(dense)
    if "graph" in names and "graph" in components:  # the retriever's candidates go to the ranker unexpanded
        data = _bypass(data, "graph")
    if "fallback" in names and "fallback" in components:  # the ranked passages go to the window unfiltered
        data = _bypass(data, "fallback")
    if "reranker" in names:  # the retriever's (or the graph's) candidates go straight to the window
        data = _bypass(data, "ranker")
    return data


def query_pipeline_dict(
    pipeline: str = "query",
    store_path: str | None = None,
    qdrant_url: str | None = None,
    index: str | None = None,
    generate: bool = False,
    ablations: set[str] | list[str] | tuple[str, ...] = (),
    ollama_url: str | None = None,
    ollama_model: str | None = None,
    fragments: list[str] | tuple[str, ...] = (),
    aliases_path: str | None = None,
) -> dict[str, Any]:
    """The query pipeline's dict as ``QueryRunner`` and ``FinQueryPipeline`` load it (parameters: ``QueryRunner``)."""
    data = pipeline_dict(pipeline, store_path, qdrant_url, index)
    for path in fragments:
        data = apply_fragment(data, load_fragment(path), str(path))
    if aliases_path and "scope" in data["components"]:
        data["components"]["scope"].setdefault("init_parameters", {})["aliases_path"] = str(aliases_path)
    if not generate:
        data = strip_generation(data)
    elif "llm" in data["components"]:
        llm = data["components"]["llm"].setdefault("init_parameters", {})
        llm.update({k: v for k, v in (("url", ollama_url), ("model", ollama_model)) if v})
    return ablate(data, set(ablations))


@dataclass
class QueryResult:
    """What one question returns: passages (best first, with provenance in meta), the generated answer when the
    pipeline generated one (``AnswerChecker``'s: ``meta["citations"]`` and ``meta["unsupported_numbers"]``), each
    stage's trace, and the candidates the ranker chose from (its ``documents`` input, in input order; empty when
    the pipeline has no ranker), so candidate generation can be judged apart from the ranking."""

    passages: list[Document]
    answer: Any = None
    trace: dict[str, Any] = field(default_factory=dict)
    candidates: list[Document] = field(default_factory=list)


class QueryRunner:
    """Loads the query pipeline once and answers questions with ``Pipeline.run``.

    Usage example:
    ```python
    from haystack_fin.query_runner import QueryRunner

    runner = QueryRunner(store_path="./fin-index", generate=False)
    result = runner.run("What was Best Buy's revenue in Q2 FY2024?", k=3)
    for doc in result.passages:
        print(doc.meta["filing_id"], doc.meta["item"], doc.meta["page_numbers"])
    runner.close()
    ```
    """

    def __init__(
        self,
        store_path: str | None = None,
        qdrant_url: str | None = None,
        index: str | None = None,
        *,
        pipeline: str = "query",
        generate: bool = False,
        ablations: set[str] | list[str] | tuple[str, ...] = (),
        ollama_url: str | None = None,
        ollama_model: str | None = None,
        fragments: list[str] | tuple[str, ...] = (),
        aliases_path: str | None = None,
    ) -> None:
        """
        :param store_path: embedded store folder (overrides the YAML's).
        :param qdrant_url: Qdrant server URL (overrides ``store_path``).
        :param index: collection name.
        :param pipeline: "query" (the shipped YAML) or a path to a query YAML of the same shape.
        :param generate: keep the gate, prompt, LLM, answer and checker components (each ``run`` can still switch
            generation off with ``generate=False``); False = retrieval only (the eval's pipeline).
        :param ablations: parts to switch off, see ``ABLATIONS``.
        :param ollama_url: the generator's Ollama server (default: the YAML's).
        :param ollama_model: the generator's model (default: the YAML's).
        :param fragments: YAML fragments whose init parameters are set on the pipeline's components, in order (e.g.
            the thresholds ``haystack-fin calibrate`` writes; ``pipeline_loader.load_fragment``).
        :param aliases_path: a company alias file for the scope (``FilingScope(aliases_path=...)``).
        """
        self.ablations = set(ablations)
        self.data = query_pipeline_dict(
            pipeline,
            store_path,
            qdrant_url,
            index,
            generate,
            ablations,
            ollama_url,
            ollama_model,
            fragments,
            aliases_path,
        )
        self.pipe = Pipeline.from_dict(self.data, allowed_modules=ALLOWED_MODULES)

    @property
    def generates(self) -> bool:
        """Whether the loaded pipeline has the generation components (``generate=True``)."""
        return "gate" in self.data["components"]

    @property
    def llm_url(self) -> str | None:
        """The generator's Ollama URL (None: no generator in the pipeline)."""
        llm = self.data["components"].get("llm")
        return str(llm["init_parameters"].get("url", "http://localhost:11434")) if llm else None

    def inputs(
        self,
        question: str,
        filing_ids: list[str] | None = None,
        k: int | None = None,
        candidates: int | None = None,
        generate: bool | None = None,
        streaming_callback: Callable[[StreamingChunk], None] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """The ``Pipeline.run`` inputs for a question: the question to every component that reads it, the explicit
        scope, ``k`` to the window, ``candidates`` to the candidate stages (None = the YAML's values), ``generate``
        to the gate (None = generate) and ``streaming_callback`` to the LLM."""
        present = set(self.data["components"])
        wanted: dict[str, dict[str, Any]] = {name: {socket: question} for name, socket in QUESTION_INPUTS.items()}
        wanted["scope"]["filing_ids"] = list(filing_ids) if filing_ids else None
        wanted["window"] = {}
        wanted["gate"] = {} if generate is None else {"generate": bool(generate)}
        wanted["llm"] = {} if streaming_callback is None else {"streaming_callback": streaming_callback}
        if self.data["components"].get("scope", {}).get("type") == _DENSE_SCOPE:
            del wanted["scope"]["query"]  # the dense scope reads no question text
        if k is not None:
            wanted["window"]["top_k"] = k
        if candidates is not None:
            for name in CANDIDATE_COMPONENTS:
                wanted[name]["top_k"] = candidates
        return {name: value for name, value in wanted.items() if name in present and value}

    def run(
        self,
        question: str,
        filing_ids: list[str] | None = None,
        k: int | None = None,
        candidates: int | None = None,
        *,
        generate: bool | None = None,
        streaming_callback: Callable[[StreamingChunk], None] | None = None,
    ) -> QueryResult:
        """Answer one question. ``k`` passages (default: the YAML's window ``top_k``); ``generate=False`` returns the
        passages only (the same passages: generation runs after the window); ``streaming_callback`` receives the
        LLM's tokens."""
        for name, value in (("k", k), ("candidates", candidates)):
            check_int(name, value, optional=True)
        present = set(self.data["components"])
        result = self.pipe.run(
            self.inputs(question, filing_ids, k, candidates, generate, streaming_callback),
            include_outputs_from={name for name in TRACE_COMPONENTS if name in present},
        )
        # The checker's copies when the pipeline has one (a custom YAML may end at the answer builder).
        answers = result.get("checker", {}).get("answers") or result.get("answer_builder", {}).get("answers") or []
        trace = {
            "analysis": result.get("analyzer", {}).get("analysis"),
            "scope": result.get("scope", {}).get("scope"),
            "routing": result.get("router", {}).get("routing"),
            "retrieval": result.get("retriever", {}).get("trace"),
            "graph": result.get("graph", {}).get("trace"),
            "rerank": result.get("ranker", {}).get("trace"),
            "fallback": result.get("fallback", {}).get("trace"),
        }
        return QueryResult(
            passages=result["window"]["documents"],
            answer=answers[0] if answers else None,
            trace=trace,
            candidates=self._ranker_input(result),
        )

    def _ranker_input(self, result: dict[str, Any]) -> list[Document]:
        """The documents the ranker was given: the output of whichever component feeds ``ranker.documents``."""
        for connection in self.data["connections"]:
            if connection["receiver"] == "ranker.documents":
                sender, _, socket = str(connection["sender"]).partition(".")
                return list(result.get(sender, {}).get(socket) or [])
        return []

    def close(self) -> None:
        """Release the store (an embedded store folder admits one client): ``Pipeline.close()`` calls every
        store-holding component's ``close``, which releases the shared instance."""
        self.pipe.close()
