import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.document_stores.types import DocumentStore

from haystack_fin.core import schema
from haystack_fin.core.graph.build import FilingGraph, build_filing_graph
from haystack_fin.core.graph.entities import FiscalCalendar
from haystack_fin.core.graph.expand import Added, ExpansionParams, Seed, expand_filing, question_intent
from haystack_fin.core.lexicon import Lexicon
from haystack_fin.core.retrieval.passage_scoring import query_cosines
from haystack_fin.core.retrieval.question_analysis import analysis_or_own
from haystack_fin.core.validation import check_int
from haystack_fin.store_registry import FilingEntry, SharedStoreClient

logger = logging.getLogger(__name__)

_FILING_FIELD = f"meta.{schema.FILING_ID}"


def _is_chunk(doc: Document) -> bool:
    return str(doc.meta.get(schema.NODE_TYPE) or schema.NodeType.CHUNK.value) == schema.NodeType.CHUNK


_NO_GRAPH = object()  # the view of a filing without chunks (nothing to expand)


def _by_filing(documents: list[Document]) -> dict[str, list[Document]]:
    by_filing: dict[str, list[Document]] = {}
    for doc in documents:
        fid = doc.meta.get(schema.FILING_ID)
        if fid:
            by_filing.setdefault(str(fid), []).append(doc)
    return by_filing


def _seed(doc: Document) -> Seed:
    budget = doc.meta.get(schema.BUDGET_K)
    return Seed(doc.id, doc.score, str(doc.meta.get(schema.ITEM) or ""), budget if isinstance(budget, int) else None)


def _with_hit(doc: Document, hits: dict[str, float], filing_id: str) -> Document:
    """An incoming candidate with its entity hit in its filing's graph (``meta["graph"]``)."""
    if doc.id not in hits or str(doc.meta.get(schema.FILING_ID)) != filing_id:
        return doc
    return replace(doc, meta={**doc.meta, schema.GRAPH: {"entity_hit": round(hits[doc.id], 4), "hops": 0}})


@dataclass
class _CachedGraph:
    graph: FilingGraph
    docs: dict[str, Document]  # chunk Documents without vectors
    vectors: dict[str, np.ndarray]  # unit-length chunk vectors (dense part of the score)
    calendar: FiscalCalendar

    def item_of(self, chunk_id: str) -> str:
        return str(self.docs[chunk_id].meta.get(schema.ITEM) or "")


@component
class GraphExpander(SharedStoreClient):
    """Adds the passages a question's evidence lacks by following each filing's entity/relation graph
    (``haystack_fin.core.graph``): explicit references ("see Note 7"), table structure (a table and the paragraph
    that introduces it, a cell's row metric and column period) and confirmed same-value links.

    Place it between a retriever and a ranker. For each filing among the incoming ``documents`` it takes the
    filing's chunks from the process-wide filing cache of ``document_store``'s configuration
    (``store_registry.FilingCache``, shared with a ``DualTreeRetriever`` on the same store, so a cold filing is read
    once for both; after another retriever it reads the filing itself) and builds the graph (from entities and
    edges stored in chunk meta when present, else from chunk text and meta) once per cached entry; an entry is
    reloaded when the incoming chunks carry another ``index_run``. Anchors are the chunks holding the question's
    metrics and periods (a table cell "capex | 2018" first); the expansion walks 1-``max_hops`` hops from the
    anchors and the top incoming candidates, scores every reached chunk ``entity_weight * entity hit + hop_weight *
    hop proximity + vector_weight * cosine`` and adds at most ``max_added`` (intent-required ones first: a ratio's
    input statements, a comparison's periods, a "why" question's table paragraph). Incoming documents pass through
    unchanged, in order, with ``meta["graph"]`` (their entity hit); added ones follow with ``meta["graph"]`` = score
    parts, the path of edges (type, kind, confidence) that pulled them in and ``explain``, that path in plain words,
    ``meta["retrieval"] = {"mode": "graph"}``, ``meta["query_cosine"]`` (with ``query_embedding``) and a
    ``budget_k``: the Item's incoming budget plus the passages added to it, so that ``TwoStageRanker``'s per-Item cut
    has room for them (which also leaves room for one more of the Item's own candidates). Documents without
    ``filing_id`` pass through untouched.

    Usage example:
    ```python
    from haystack import Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack_fin.components.graph_expander import GraphExpander

    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=5))
    pipe.add_component("graph", GraphExpander(document_store=store, max_added=3))
    pipe.connect("retriever.documents", "graph.documents")
    q = "What was Netflix's FY2015 provision for income taxes?"
    out = pipe.run({"retriever": {"query": q}, "graph": {"query": q}})
    for doc in out["graph"]["documents"]:
        print(doc.meta["page_numbers"], doc.meta.get("graph", {}).get("path"))
    ```
    """

    def __init__(
        self,
        document_store: DocumentStore,
        max_added: int = 4,
        max_hops: int = 2,
        entity_weight: float = 0.5,
        hop_weight: float = 0.3,
        vector_weight: float = 0.2,
        min_score: float = 0.25,
        cache_size: int = 32,
        lexicon_path: str | None = None,
        raise_budgets: bool = True,
        return_embedding: bool = False,
    ) -> None:
        """
        :param document_store: the index holding the filings' chunks (any Haystack store; vectors are used when it
            returns them).
        :param max_added: passages added per query at most (``run``'s ``top_k`` overrides it).
        :param max_hops: path length limit, 1 or 2.
        :param entity_weight: weight of the entity hit (the chunk holds the question's metric and period).
        :param hop_weight: weight of hop proximity (product of edge confidences / hops; 1.0 for an anchor).
        :param vector_weight: weight of the cosine between the question's and the chunk's vectors (needs
            ``query_embedding``).
        :param min_score: added passages below this score are dropped (intent-required ones are kept).
        :param cache_size: filings whose nodes and graphs are kept (LRU; the cache is shared by the components
            reading this store configuration and holds the largest ``cache_size`` they ask for).
        :param lexicon_path: lexicon JSON for the chunks' metrics (and the question's when ``run`` gets no
            ``analysis``); default: the built-in lexicon. Use the QueryAnalyzer's.
        :param raise_budgets: an added passage's ``budget_k`` is its Item's incoming budget plus the passages added
            to that Item, so the ranker's per-Item cut has room for them; False: the Item's incoming budget.
        :param return_embedding: give added passages their unit vector; off, they carry only their cosine to the
            question (``meta["query_cosine"]``), as DualTreeRetriever's candidates do (without ``query_embedding``
            they keep the vector: no cosine to record).
        """
        check_int("max_added", max_added, 0)
        if max_hops not in (1, 2):
            raise ValueError(f"max_hops must be 1 or 2, got {max_hops!r}")
        check_int("cache_size", cache_size)
        for name, value in (("entity_weight", entity_weight), ("hop_weight", hop_weight),
                            ("vector_weight", vector_weight), ("min_score", min_score)):  # fmt: skip
            if not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")
        self.document_store = document_store
        self.max_added = max_added
        self.max_hops = max_hops
        self.entity_weight = entity_weight
        self.hop_weight = hop_weight
        self.vector_weight = vector_weight
        self.min_score = min_score
        self.cache_size = cache_size
        self.lexicon_path = lexicon_path
        self.raise_budgets = raise_budgets
        self.return_embedding = return_embedding
        self._lexicon: Lexicon | None = None
        self._store: Any = None

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            document_store=self.document_store,
            max_added=self.max_added,
            max_hops=self.max_hops,
            entity_weight=self.entity_weight,
            hop_weight=self.hop_weight,
            vector_weight=self.vector_weight,
            min_score=self.min_score,
            cache_size=self.cache_size,
            lexicon_path=self.lexicon_path,
            raise_budgets=self.raise_budgets,
            return_embedding=self.return_embedding,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GraphExpander":
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Load the lexicon and bind the process-wide store instance and filing cache; idempotent."""
        if self._lexicon is None:
            self._lexicon = Lexicon.load(self.lexicon_path)
        self._attach_store()
        self._attach_filings(self.cache_size)

    # -- graphs ---------------------------------------------------------------------------------------------------
    def _view_key(self) -> str:
        # The graph depends on the lexicon (metrics of the chunks); the expansion parameters apply at query time.
        return f"graph:{self.lexicon_path or ''}"

    def _load(self, filing_id: str, index_run: str) -> _CachedGraph | None:
        """The filing's graph: its nodes from the shared filing cache (read from the store only if no component
        has them cached), the graph built once per cached entry. ``index_run`` (from the incoming chunks) reloads
        an entry of another run."""
        assert self._filings is not None
        entry = self._filings.get(self._store, [filing_id], {filing_id: index_run} if index_run else None).get(
            filing_id
        )
        return self._graph_of(entry, filing_id)

    def _graph_of(self, entry: FilingEntry | None, filing_id: str) -> _CachedGraph | None:
        graph = entry.view(self._view_key(), self._build) if entry is not None else _NO_GRAPH
        if not isinstance(graph, _CachedGraph):  # _NO_GRAPH
            logger.warning("filing {filing_id}: no chunks in the document store, not expanded", filing_id=filing_id)
            return None
        return graph

    def _cached_graph(self, filing_id: str) -> FilingGraph | None:
        """The graph cached for ``filing_id``, without reading the store (for inspection and tests)."""
        entry = self._filings.cached(filing_id) if self._filings is not None else None
        graph = entry.views.get(self._view_key()) if entry is not None else None
        return graph.graph if isinstance(graph, _CachedGraph) else None

    def _build(self, entry: FilingEntry) -> "_CachedGraph | object":
        assert self._lexicon is not None
        chunks = [d for d in entry.docs if _is_chunk(d)]
        if not chunks:
            return _NO_GRAPH
        run = entry.index_run or str(chunks[0].meta.get(schema.INDEX_RUN) or "")
        graph = build_filing_graph(
            ({"id": d.id, "content": d.content, "meta": d.meta} for d in chunks), self._lexicon, entry.filing_id, run
        )
        vectors: dict[str, np.ndarray] = {}
        for d in chunks:
            v = entry.vectors.get(d.id)
            if v is not None:
                n = float(np.linalg.norm(v))
                if n > 0:
                    vectors[d.id] = v / n
        logger.info(
            "filing {filing_id}: graph of {n} chunks built in {s:.3f} s", filing_id=entry.filing_id, n=len(chunks),
            s=graph.seconds,
        )  # fmt: skip
        # The entry's Documents carry no vector: shared with the retriever's view, not copied.
        return _CachedGraph(graph, {d.id: d for d in chunks}, vectors, FiscalCalendar.from_meta(chunks[0].meta))

    def _filings_in_store(self) -> list[str]:
        # Filing nodes first (a payload-index lookup on an Edge or server store); a plain index has none, and then
        # its chunks name the filings (a scan, as before).
        for node_type in (schema.NodeType.FILING.value, schema.NodeType.CHUNK.value):
            flt = {"field": f"meta.{schema.NODE_TYPE}", "operator": "==", "value": node_type}
            ids = {str(d.meta[schema.FILING_ID]) for d in self._store.filter_documents(filters=flt)
                   if d.meta.get(schema.FILING_ID)}  # fmt: skip
            if ids:
                return sorted(ids)
        return []

    def preload(self, filing_ids: list[str] | None = None) -> list[str]:
        """Build and cache the graphs ahead of the first queries (what a server or a benchmark does at start-up;
        otherwise each filing's first query pays its load and the build). Filings already in the shared cache
        (a retriever's ``preload``) are not read again; the others are read with one store call.

        :param filing_ids: filings to load; None = every filing in the store, up to ``cache_size``.
        :returns: the filing ids whose graphs are now cached.
        """
        self.warm_up()
        assert self._filings is not None
        ids = list(dict.fromkeys(filing_ids if filing_ids is not None else self._filings_in_store()))
        ids = ids[-self.cache_size :]
        entries = self._filings.get(self._store, ids)
        return sorted(fid for fid in ids if fid in entries and self._graph_of(entries[fid], fid) is not None)

    @component.output_types(documents=list[Document], trace=dict)
    def run(
        self,
        documents: list[Document],
        query: str | None = None,
        top_k: int | None = None,
        analysis: dict[str, Any] | None = None,
        query_embedding: list[float] | None = None,
    ) -> dict[str, Any]:
        """
        Expand ``documents`` along each filing's graph.

        :param documents: candidates from any retriever (chunks with ``filing_id`` are expanded).
        :param query: the question; default: the question of ``analysis`` (so a pipeline that wires the analyzer
            needs no extra run input for this stage).
        :param top_k: passages added at most (overrides ``max_added``).
        :param analysis: ``QueryAnalyzer``'s analysis of ``query`` (its lexicon clusters and periods are used);
            without it the question is analysed with this expander's lexicon.
        :param query_embedding: the question's vector, for the similarity part of the score.
        :returns: ``documents``: the incoming documents, then the added ones; ``trace``: per filing the question's
            keys as matched (exact/normalized), anchors, chunks reached, required and added ids, the graph's build
            seconds and whether it was built from stored graph meta (``from_meta``), and the total seconds.
        """
        if query is None:
            if analysis is None or not analysis.get("question"):
                raise ValueError("GraphExpander needs the question: give query or a QueryAnalyzer analysis")
            query = str(analysis["question"])
        self.warm_up()
        start = time.perf_counter()
        limit = self.max_added if top_k is None else top_k
        check_int("top_k", limit, 0)
        analysed = analysis_or_own(query, analysis, self._lexicon)
        q_vec = np.asarray(query_embedding, dtype=np.float32).tolist() if query_embedding else None
        out_docs, present = list(documents), {d.id for d in documents}
        traces: list[dict[str, Any]] = []
        added_total = 0
        for fid, docs in _by_filing(documents).items():
            if added_total >= limit:
                break
            cached = self._load(fid, str(docs[0].meta.get(schema.INDEX_RUN) or ""))
            if cached is None:
                continue
            assert self._lexicon is not None
            intent = question_intent(query, self._lexicon, cached.calendar, list(analysed.clusters), analysed.scope)
            result = expand_filing(
                cached.graph, intent, [_seed(d) for d in docs], self._params(limit - added_total), q_vec,
                cached.vectors, cached.item_of, present, self.raise_budgets,
            )  # fmt: skip
            out_docs = [_with_hit(d, result.entity_hits, fid) for d in out_docs]
            out_docs.extend(self._added_document(cached, added, query_embedding) for added in result.added)
            added_total += len(result.added)
            graph = cached.graph
            traces.append({"filing_id": fid, "build_seconds": round(graph.seconds, 4), "from_meta": graph.from_meta,
                           **result.trace})  # fmt: skip
        return {"documents": out_docs, "trace": {"filings": traces, "seconds": round(time.perf_counter() - start, 4)}}

    def _params(self, max_added: int) -> ExpansionParams:
        return ExpansionParams(
            w_entity=self.entity_weight,
            w_hop=self.hop_weight,
            w_vector=self.vector_weight,
            max_hops=self.max_hops,
            max_added=max_added,
            min_score=self.min_score,
        )

    def _added_document(self, cached: _CachedGraph, added: Added, query_embedding: list[float] | None) -> Document:
        """An added passage: a copy of its chunk with the graph's score, ``added.meta``, its cosine to the question
        and, if asked, the chunk's unit vector."""
        chunk, vector = cached.docs[added.chunk_id], cached.vectors.get(added.chunk_id)
        meta = {**chunk.meta, **added.meta}
        cosine = query_cosines(query_embedding, [vector])[0]
        if cosine is not None:
            meta[schema.QUERY_COSINE] = cosine
        # Without a cosine (no query_embedding here), the vector is what a later stage can score the passage by.
        keep = self.return_embedding or cosine is None
        embedding = vector.tolist() if keep and vector is not None else None
        return replace(chunk, score=added.score, embedding=embedding, meta=meta)
