import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.document_stores.types import DocumentStore
from haystack.utils.filters import document_matches_filter

from haystack_fin.core import schema
from haystack_fin.core.retrieval.candidates import (
    Candidate,
    FilingState,
    SearchSettings,
    filing_ids_in_filter,
    gather_candidates,
    is_only_filing_filter,
    item_key,
    plan_search,
)
from haystack_fin.core.retrieval.passage_scoring import query_cosines
from haystack_fin.core.retrieval.question_analysis import analysis_or_own
from haystack_fin.core.retrieval.tree_search import IndexNode
from haystack_fin.core.schema import NodeType
from haystack_fin.core.validation import check_int, check_ints
from haystack_fin.store_registry import FilingEntry, SharedStoreClient, shared_store

logger = logging.getLogger(__name__)

_TREE_NODE_TYPES = (NodeType.SUMMARY.value, NodeType.QUESTION.value)
_VIEW = "dual_tree"  # this retriever's view of a shared filing entry (it depends on no init parameter)


@dataclass
class _CachedFiling:
    """One filing as this retriever caches it: the searchable state (Item trees with the chunk vectors as numpy rows;
    384 Python floats per chunk would cost ~12 KB each) and the chunk Documents, without vectors, to return."""

    state: FilingState
    chunks: dict[str, Document]


def _index_node(doc: Document, embedding: np.ndarray | None) -> IndexNode:
    meta = doc.meta
    level = meta.get(schema.TREE_LEVEL)
    return IndexNode(
        node_id=doc.id,
        # Documents without node_type come from a plain Haystack index: treat them as chunks.
        node_type=str(meta.get(schema.NODE_TYPE) or NodeType.CHUNK.value),
        item=item_key(meta.get(schema.ITEM)),
        text=doc.content or "",
        level=int(level) if level is not None else None,
        parent_id=meta.get(schema.TREE_PARENT_ID),
        children_ids=tuple(meta.get(schema.TREE_CHILDREN_IDS) or ()),
        embedding=embedding,
    )


@component
class DualTreeRetriever(SharedStoreClient):
    """Retrieves candidate chunks per SEC Item by beam search down the Item's summary tree (BM25) and question tree
    (dense cosine), pooling the leaves both trees reach (FinGEAR's dual-tree retrieval).

    Expects an index written by the haystack-fin indexing pipeline: ``chunk`` nodes with embeddings and meta
    ``filing_id``/``item``, and per (filing, Item) ``summary`` and ``question`` nodes carrying ``__level``,
    ``__parent_id`` and ``__children_ids`` (question nodes embedded). Items without tree nodes are searched flat
    (BM25 + dense over their chunks). Leaves are ranked by reciprocal-rank fusion of BM25 and cosine, scaled so a
    chunk first in both rankings scores 1.0.

    Per query it works on the filings named by ``budgets`` (FlamRouter output) or by ``filters``. Each filing's
    nodes are fetched once with ``filter_documents`` into the process-wide filing cache of the store's
    configuration (``store_registry.FilingCache``, an LRU of at least ``cache_size`` filings, shared with a
    ``GraphExpander`` on the same store, which then reads nothing itself), and the filing's in-memory trees are
    built once per cached entry; a cached filing is reloaded when its ``filing`` node reports a new ``index_run``
    (checked with ``get_documents_by_id`` when the store has it, or from an ``index_run`` key in the budget).
    Only the nodes of the filing node's ``index_run`` are kept: while a re-index is being written, the store holds
    nodes of two runs, and FilingWriter writes the filing node last, so the old run is read until the new one is
    complete, never a mix.
    The first query on a filing pays its fetch (about 1.5 s for one filing of a 40k-node embedded Qdrant, which
    scans in Python); ``preload()`` moves that cost to start-up.
    Works with any Haystack document store that returns embeddings from ``filter_documents``: ``QdrantDocumentStore``
    needs ``return_embedding=True``; ``InMemoryDocumentStore`` always does.

    Every returned Document is a copy of a chunk with ``score`` (fused) and meta ``query_cosine`` (its cosine to
    the question), ``retrieval`` = ``{"bm25", "dense", "trees", "tree_paths", "mode"}`` (tree paths are node ids
    from a root to the chunk) and ``budget_k`` (the Item's budget); ``return_embedding=True`` adds its unit vector.
    The retriever returns max(``candidates_per_item``, 3 * k) candidates per Item for a downstream ranker to cut to
    k; the ``trace`` output records what each tree visited per level.

    When a question names a primary financial statement ("... from the cash flow statement") or one of its line
    items or ratios ("capex", "quick ratio"), the blocks of that statement (``meta["statement"]``, tagged by
    FilingSplitter) of every filing searched join the candidates with ``retrieval = {"mode": "statement", ...}``,
    score 0 and their Item's budget; the trace lists them under ``statements``. ``statement_candidates=False``
    turns this off. Likewise, when the question's lexicon concepts name the headings they are reported under
    (``TermCluster.sections``: "Income Taxes", "Liquidity and Capital Resources", the cover's "Securities registered
    pursuant to Section 12(b)"), the chunks under such a heading (``meta["section_path"]``) that are closest to the
    question join with ``retrieval = {"mode": "section", ...}``; the trace lists them under ``sections``. Trees and
    embeddings rank a grid of numbers poorly (the statement's title is a surer guide), and a note or MD&A
    subsection, where an analyst reads the answer, lies below FLAM's Item-level routing.

    The other sources (``haystack_fin.core.retrieval.candidates``): the best flat BM25 + dense leaves of each Item
    that the beams missed (a beam can prune the branch that holds the answer, and which branch that is moves with
    the clustering whenever a filing's chunks change); the best flat matches of the Items the question's concepts
    are typically reported in (the lexicon's Item priors for the filing's form), whether or not FLAM gave them
    budget; the chunks closest to the question under the filing's headings below the Item titles that match the
    question best by BM25 (the MD&A subsection or note an analyst would open, named in the filing's words); the
    best BM25 + dense matches of the whole filing, whatever the budgets; and, for the first
    ``neighbour_candidates`` of all these, the prose on the page before and after under the same heading (a note or
    a discussion that runs on over a page break), with ``retrieval = {"mode": "neighbour", "of": ..., "direction":
    ...}``.

    Usage example:
    ```python
    from haystack import Pipeline
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
    from haystack_fin.components.dual_tree_retriever import DualTreeRetriever
    from haystack_fin.components.text_embedder import FinTextEmbedder

    store = QdrantDocumentStore(path="./fin-index", index="haystack_fin", embedding_dim=384, return_embedding=True)
    pipe = Pipeline()
    pipe.add_component("embedder", FinTextEmbedder())
    pipe.add_component("retriever", DualTreeRetriever(document_store=store, beam_width=3))
    pipe.connect("embedder.embedding", "retriever.query_embedding")
    question = "What was 3M's FY2018 capital expenditure?"
    result = pipe.run({
        "embedder": {"text": question},
        "retriever": {"query": question, "budgets": [{"filing_id": "3M_2018_10K", "item": "7", "k": 5, "weight": 1.0}]},
    })
    for doc in result["retriever"]["documents"]:
        print(doc.score, doc.meta["item"], doc.meta["page_numbers"], doc.meta["retrieval"]["tree_paths"])
    ```
    """

    def __init__(
        self,
        document_store: DocumentStore,
        beam_width: int = 3,
        top_k: int = 5,
        candidates_per_item: int = 10,
        use_summary_tree: bool = True,
        use_question_tree: bool = True,
        cache_size: int = 64,
        statement_candidates: bool = True,
        flat_candidates_per_item: int = 5,
        section_candidates: int = 8,
        intent_item_candidates: int = 0,
        heading_candidates: int = 0,
        headings_per_question: int = 3,
        filing_flat_candidates: int = 0,
        neighbour_candidates: int = 0,
        return_embedding: bool = False,
    ) -> None:
        """The ``*_candidates*`` counts add the chunks of each source (class docstring); 0 switches it off.
        :param document_store: the haystack-fin index (chunks, summary, question and filing nodes in one store).
        :param beam_width: tree nodes kept per level in each tree (FinGEAR uses 3).
        :param top_k: per-Item budget k when ``run`` gets no ``budgets`` (and for budget entries without ``k``).
        :param candidates_per_item: minimum candidates per Item; an Item with budget k gets max(this, 3 * k).
        :param use_summary_tree: let the BM25 walk of the summary tree guide retrieval (ablation switch).
        :param use_question_tree: likewise the dense walk of the question tree; both off: every Item searched flat.
        :param cache_size: filings whose nodes and trees are kept in memory (an LRU shared by the components reading
            this store configuration, holding the largest ``cache_size`` they ask for).
        :param statement_candidates: add the blocks (``meta["statement"]``) of the statements the question names or
            implies (``core.statements.statements_in_query``), of every filing searched, whichever Items are named.
        :param flat_candidates_per_item: per Item, its best flat BM25 + dense leaves that the trees did not reach.
        :param section_candidates: per filing and heading title of the question's concepts, the closest chunks under
            a matching heading (``core.retrieval.sections``), whichever Items the budgets name.
        :param intent_item_candidates: per filing and Item the question's concepts are reported in, its best flat
            matches, whether or not FLAM gave the Item budget.
        :param heading_candidates: per filing, the closest chunks under each of its best-matching headings.
        :param headings_per_question: how many of a filing's best-matching headings ``heading_candidates`` reads.
        :param filing_flat_candidates: per filing, its best chunks by BM25 + dense fusion over the whole filing.
        :param neighbour_candidates: for this many of the other sources' first candidates (taking turns across
            sources and filings), the prose continuing a prose candidate on the page before and after under the same
            heading.
        :param return_embedding: give each candidate its unit vector. Off, candidates carry only their cosine to the
            question (``meta["query_cosine"]``), which is all TwoStageRanker and ModalityThresholdFallback read;
            a pipeline copies every component's inputs, so vectors would be copied at every later stage.
        """
        check_ints(beam_width=beam_width, top_k=top_k, candidates_per_item=candidates_per_item, cache_size=cache_size)
        check_ints(
            0, flat_candidates_per_item=flat_candidates_per_item, section_candidates=section_candidates,
            intent_item_candidates=intent_item_candidates, heading_candidates=heading_candidates,
            headings_per_question=headings_per_question, filing_flat_candidates=filing_flat_candidates,
            neighbour_candidates=neighbour_candidates,
        )  # fmt: skip
        self.document_store = document_store
        self.beam_width = beam_width
        self.top_k = top_k
        self.candidates_per_item = candidates_per_item
        self.use_summary_tree = use_summary_tree
        self.use_question_tree = use_question_tree
        self.cache_size = cache_size
        self.statement_candidates = statement_candidates
        self.flat_candidates_per_item = flat_candidates_per_item
        self.section_candidates = section_candidates
        self.intent_item_candidates = intent_item_candidates
        self.heading_candidates = heading_candidates
        self.headings_per_question = headings_per_question
        self.filing_flat_candidates = filing_flat_candidates
        self.neighbour_candidates = neighbour_candidates
        self.return_embedding = return_embedding
        self._store: Any = None

    def to_dict(self) -> dict[str, Any]:
        # One style across components: every init parameter explicitly; default_to_dict serializes the store.
        return default_to_dict(
            self,
            document_store=self.document_store,
            beam_width=self.beam_width,
            top_k=self.top_k,
            candidates_per_item=self.candidates_per_item,
            use_summary_tree=self.use_summary_tree,
            use_question_tree=self.use_question_tree,
            cache_size=self.cache_size,
            statement_candidates=self.statement_candidates,
            flat_candidates_per_item=self.flat_candidates_per_item,
            section_candidates=self.section_candidates,
            intent_item_candidates=self.intent_item_candidates,
            heading_candidates=self.heading_candidates,
            headings_per_question=self.headings_per_question,
            filing_flat_candidates=self.filing_flat_candidates,
            neighbour_candidates=self.neighbour_candidates,
            return_embedding=self.return_embedding,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DualTreeRetriever":
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Bind the process-wide store instance (one embedded Qdrant client per folder); idempotent."""
        if self._store is not None:
            return
        self._attach_filings(self.cache_size)
        store = shared_store(self.document_store)
        if getattr(store, "return_embedding", True) is False:
            raise ValueError(
                f"{type(store).__name__} is configured with return_embedding=False, but DualTreeRetriever scores "
                "chunks by their vectors: create the store with return_embedding=True"
            )
        self._store = store

    # -- loading --------------------------------------------------------------------------------------------------
    def _build(self, entry: FilingEntry) -> _CachedFiling:
        """The retriever's view of one cached filing: Item trees (vectors as numpy matrices) and chunk Documents."""
        filing_id = entry.filing_id
        chunks: dict[str, Document] = {}
        nodes: list[IndexNode] = []
        missing = 0
        for doc in entry.docs:
            node_type = doc.meta.get(schema.NODE_TYPE) or NodeType.CHUNK.value
            if node_type == NodeType.FILING:
                continue
            vector = entry.vectors.get(doc.id)
            if node_type == NodeType.CHUNK:
                if vector is None:
                    missing += 1
                chunks[doc.id] = doc  # the entry's Documents carry no vector: shared, not copied
            elif node_type not in _TREE_NODE_TYPES:
                continue
            nodes.append(_index_node(doc, vector))
        if chunks and missing == len(chunks):
            raise ValueError(
                f"The {len(chunks)} chunks of filing {filing_id!r} came back without embeddings. DualTreeRetriever "
                "needs chunk vectors: index the chunks with an embedder and configure the document store to return "
                "them (QdrantEdgeDocumentStore or QdrantDocumentStore(..., return_embedding=True))."
            )
        if missing:
            logger.warning(
                "filing {filing_id}: {missing} of {n_chunks} chunks have no embedding (dense score 0)",
                filing_id=filing_id,
                missing=missing,
                n_chunks=len(chunks),
            )
        meta = {cid: doc.meta for cid, doc in chunks.items()}
        return _CachedFiling(FilingState.build(filing_id, entry.index_run or None, nodes, meta), chunks)

    def _load(self, filing_ids: list[str], hints: dict[str, str], trace: dict[str, Any]) -> dict[str, _CachedFiling]:
        """The searchable state of each filing: from the shared filing cache (all misses read in one store call,
        cached filings checked against their filing node's ``index_run``), its trees built once per entry."""
        assert self._filings is not None
        entries = self._filings.get(self._store, filing_ids, hints, probe=True, trace=trace)
        return {fid: entries[fid].view(_VIEW, self._build) for fid in filing_ids if fid in entries}

    def preload(self, filing_ids: list[str] | None = None) -> list[str]:
        """Fill the cache ahead of the first queries (e.g. when a server starts), with one store call.

        :param filing_ids: filings to load; None loads every filing that has a ``filing`` node, up to
            ``cache_size``.
        :returns: the filing ids now cached.
        """
        self.warm_up()
        ids = filing_ids if filing_ids is not None else self._filings_from_filters(None)
        ids = list(dict.fromkeys(ids))[-self.cache_size :]
        return list(self._load(ids, {}, {}))

    def _filings_from_filters(self, filters: dict[str, Any] | None) -> list[str]:
        named = filing_ids_in_filter(filters) if filters else None
        if named is not None:
            return named
        # No filing named: ask the (few) filing nodes which filings the filter selects. This scans the collection,
        # so a query pipeline should scope filings first (budgets or a filing_id filter).
        node_filter = schema.node_type_filter(schema.NodeType.FILING)
        flt = {"operator": "AND", "conditions": [filters, node_filter]} if filters else node_filter
        ids = {str(d.meta.get(schema.FILING_ID)) for d in self._store.filter_documents(filters=flt)}
        if not ids and filters:
            # The filter names chunk fields only (e.g. modality): find the filings through their chunks.
            chunk_filter = schema.node_type_filter(schema.NodeType.CHUNK)
            docs = self._store.filter_documents(filters={"operator": "AND", "conditions": [filters, chunk_filter]})
            ids = {str(d.meta.get(schema.FILING_ID)) for d in docs}
        logger.info("filters selected {n_filings} filings by scanning filing nodes", n_filings=len(ids))
        return sorted(ids)

    # -- search ---------------------------------------------------------------------------------------------------
    def _settings(self) -> SearchSettings:
        return SearchSettings(
            beam_width=self.beam_width,
            candidates_per_item=self.candidates_per_item,
            use_summary_tree=self.use_summary_tree,
            use_question_tree=self.use_question_tree,
            flat_candidates_per_item=self.flat_candidates_per_item,
            section_candidates=self.section_candidates,
            intent_item_candidates=self.intent_item_candidates,
            heading_candidates=self.heading_candidates,
            headings_per_question=self.headings_per_question,
            filing_flat_candidates=self.filing_flat_candidates,
            neighbour_candidates=self.neighbour_candidates,
            statement_candidates=self.statement_candidates,
        )

    def _allowed(self, cached: dict[str, _CachedFiling], filters: dict[str, Any] | None) -> dict[str, set[str]] | None:
        """Per filing, the chunk ids ``filters`` admits; None when it restricts no chunk (absent, or only naming the
        filings)."""
        if not filters or is_only_filing_filter(filters):
            return None
        return {
            fid: {cid for cid, doc in entry.chunks.items() if document_matches_filter(filters, doc)}
            for fid, entry in cached.items()
        }

    @component.output_types(documents=list[Document], trace=dict)
    def run(
        self,
        query: str,
        query_embedding: list[float],
        budgets: list[dict[str, Any]] | None = None,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        analysis: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """
        Retrieve candidate chunks per Item.

        :param query: the question (BM25 side).
        :param query_embedding: the question's vector, from the model that embedded the chunks and question nodes.
        :param budgets: FlamRouter output, ``[{"filing_id", "item", "k", "weight"}]``; an entry without ``item``
            covers all Items of its filing, one without ``k`` uses ``top_k``, an optional ``index_run`` skips the
            freshness check. When given, ``filters`` only restricts which chunks may be returned. An empty list
            without ``filters`` (nothing routed) searches nothing.
        :param filters: Haystack filters; without ``budgets`` they choose the filings (a ``meta.filing_id``
            condition is read directly, anything else is matched against filing nodes) and every Item of those
            filings is searched with budget ``top_k``; chunks must also match them.
        :param top_k: overrides the init ``top_k``.
        :param analysis: ``QueryAnalyzer``'s analysis of ``query``: its BM25 terms, the statements it names or
            implies and its concepts' headings and Items; without it the question is analysed with the built-in
            lexicon (``question_analysis.analysis_or_own``).
        :returns: ``documents``: candidates of all Items (at most max(candidates_per_item, 3 * k) per Item from
            the tree search, plus the other sources' chunks), the sources taking turns, each source's best first
            (``candidates.CandidatePool.ranked``); ``trace``: ``{"items": [per-Item mode, nodes kept per level,
            leaves reached, candidate ids], "statements": {asked, added}, "sections": ..., "cache": {hits, loaded,
            stale}, "seconds": ...}`` plus ``intent_items``, ``headings`` and ``filing_flat`` when those sources are
            on.
        """
        self.warm_up()
        start = time.perf_counter()
        k_default = top_k if top_k is not None else self.top_k
        check_int("top_k", k_default)
        analysed = analysis_or_own(query, analysis)
        plan = plan_search(budgets, filters, k_default, self._filings_from_filters)
        cache_trace: dict[str, Any] = {}
        filing_ids = list(dict.fromkeys(fid for fid, _ in plan.wanted))
        cached = self._load(filing_ids, plan.hints, cache_trace) if filing_ids else {}
        filings = {fid: entry.state for fid, entry in cached.items()}
        allowed = self._allowed(cached, filters)
        found = gather_candidates(filings, plan, analysed, query_embedding, self._settings(), allowed)
        for entry in found.items:
            if entry.get("mode") == "missing" and entry.get("filing_id") in filings:
                logger.info("filing {filing_id} has no chunks for item {item!r}", **entry)
        sims = query_cosines(query_embedding, [c.vector for c in found.candidates])
        documents = [
            self._document(cached[c.filing_id].chunks[c.chunk_id], c, sim, self.return_embedding)
            for c, sim in zip(found.candidates, sims, strict=True)
        ]
        trace = schema.RetrieverTrace(
            items=found.items,
            statements=found.statements,
            sections=found.sections,
            cache=cache_trace,
            seconds=round(time.perf_counter() - start, 4),
        )
        trace.update(found.extra)  # type: ignore[typeddict-item]
        return {"documents": documents, "trace": trace}

    @staticmethod
    def _document(chunk: Document, candidate: Candidate, cosine: float | None, with_vector: bool) -> Document:
        """A candidate as a copy of its chunk, with its score, its cosine to the question (the ranker's fallback
        scorer scores by it), its unit vector if asked, and why it came (``retrieval``, ``budget_k``)."""
        vector = candidate.vector
        meta = {**chunk.meta, schema.RETRIEVAL: candidate.retrieval, schema.BUDGET_K: candidate.budget_k}
        if cosine is not None:
            meta[schema.QUERY_COSINE] = cosine
        embedding = vector.tolist() if with_vector and vector is not None else None
        return replace(chunk, score=candidate.score, embedding=embedding, meta=meta)
