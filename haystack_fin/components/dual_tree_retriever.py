import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.document_stores.types import DocumentStore
from haystack.utils.filters import document_matches_filter

from haystack_fin.core import schema
from haystack_fin.core.lexicon import Lexicon
from haystack_fin.core.retrieval.question_analysis import analysis_for
from haystack_fin.core.retrieval.sections import (
    SectionIndex,
    normalize_heading,
    question_sections,
    sections_in_query,
)
from haystack_fin.core.retrieval.tree_search import (
    IndexNode,
    ItemSearchResult,
    ItemTree,
    beam_search,
    build_item_trees,
    flat_search,
    n_candidates_for,
)
from haystack_fin.core.schema import NodeType
from haystack_fin.core.statements import statements_in_query
from haystack_fin.store_registry import FilingEntry, SharedStoreClient, shared_store

logger = logging.getLogger(__name__)

_FILING_FIELD = f"meta.{schema.FILING_ID}"
_TREE_NODE_TYPES = (NodeType.SUMMARY.value, NodeType.QUESTION.value)
_VIEW = "dual_tree"  # this retriever's view of a shared filing entry (it depends on no init parameter)


@dataclass
class _CachedFiling:
    """One filing's searchable state: its Item trees and its chunk Documents (without vectors, which live in the
    trees' numpy matrices; 384 Python floats per chunk would cost ~12 KB each)."""

    filing_id: str
    index_run: str | None
    trees: dict[str, ItemTree]
    chunks: dict[str, Document]
    statement_ids: dict[str, list[str]]  # statement kind -> ids of its blocks, in filing order
    sections: SectionIndex  # chunk ids by the headings above them


def _item_key(value: Any) -> str:
    return "" if value is None else str(value)


def _index_node(doc: Document, embedding: np.ndarray | None) -> IndexNode:
    meta = doc.meta
    level = meta.get(schema.TREE_LEVEL)
    return IndexNode(
        node_id=doc.id,
        # Documents without node_type come from a plain Haystack index: treat them as chunks.
        node_type=str(meta.get(schema.NODE_TYPE) or NodeType.CHUNK.value),
        item=_item_key(meta.get(schema.ITEM)),
        text=doc.content or "",
        level=int(level) if level is not None else None,
        parent_id=meta.get(schema.TREE_PARENT_ID),
        children_ids=tuple(meta.get(schema.TREE_CHILDREN_IDS) or ()),
        embedding=embedding,
    )


def _filing_ids_in_filter(filters: dict[str, Any]) -> list[str] | None:
    """Filing ids named by a ``meta.filing_id`` ==/in condition, at the top or inside a top-level AND."""
    conditions = [filters]
    if filters.get("operator") == "AND" and "conditions" in filters:
        conditions = list(filters["conditions"])
    for cond in conditions:
        if cond.get("field") == _FILING_FIELD and cond.get("operator") in ("==", "in"):
            value = cond.get("value")
            return [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return None


def _is_only_filing_filter(filters: dict[str, Any]) -> bool:
    return filters.get("field") == _FILING_FIELD and filters.get("operator") in ("==", "in")


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

    Every returned Document is a copy of a chunk (with its vector, unit-normalized) with ``score`` (fused) and meta
    ``retrieval`` = ``{"bm25", "dense", "trees", "tree_paths", "mode"}`` (tree paths are node ids from a root to
    the chunk) and ``budget_k`` (the Item's budget). The retriever returns max(``candidates_per_item``, 3 * k)
    candidates per Item for a downstream ranker to cut to k; the ``trace`` output records what each tree visited
    per level.

    When a question names a primary financial statement ("... from the cash flow statement") or one of its line
    items or ratios ("capex", "quick ratio"), the blocks of that statement (``meta["statement"]``, tagged by
    FilingSplitter) of every filing searched join the candidates with ``retrieval = {"mode": "statement", ...}``,
    score 0 and their Item's budget; the trace lists them under ``statements``. ``statement_candidates=False``
    turns this off. Likewise, when the question's lexicon concepts name the headings they are reported under
    (``TermCluster.sections``: "Income Taxes", "Liquidity and Capital Resources", the cover's "Securities registered
    pursuant to Section 12(b)"), the chunks under such a heading (``meta["section_path"]``) that are closest to the
    question join with ``retrieval = {"mode": "section", ...}``; the trace lists them under ``sections``.

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
        lexicon_path: str | None = None,
        flat_candidates_per_item: int = 5,
        section_candidates: int = 8,
    ) -> None:
        """
        :param document_store: the haystack-fin index (chunks, summary, question and filing nodes in one store).
        :param beam_width: tree nodes kept per level in each tree (FinGEAR uses 3).
        :param top_k: per-Item budget k when ``run`` gets no ``budgets`` (and for budget entries without ``k``).
        :param candidates_per_item: minimum candidates per Item; an Item with budget k gets max(this, 3 * k).
        :param use_summary_tree: let the BM25 walk of the summary tree guide retrieval (ablation switch).
        :param use_question_tree: let the dense walk of the question tree guide retrieval (ablation switch). With
            both switches off every Item is searched flat.
        :param cache_size: filings whose nodes and trees are kept in memory (LRU; the cache is shared by the
            components reading this store configuration and holds the largest ``cache_size`` they ask for).
        :param statement_candidates: when the question names a primary financial statement or one of its line
            items (``haystack_fin.core.statements.statements_in_query``), also return the blocks of that statement
            (chunks with ``meta["statement"]``) of every filing searched, whichever Items the budgets name. Trees
            and embeddings rank a grid of numbers poorly; the statement's title is a surer guide.
        :param lexicon_path: lexicon JSON for the statement cues; default: the built-in lexicon. Used when ``run``
            gets no ``analysis``; in the shipped query YAML the ``QueryAnalyzer``'s lexicon is used.
        :param flat_candidates_per_item: after the tree candidates, also return this many of the Item's best leaves
            by flat BM25 + dense fusion that the trees did not reach (0: trees only). A beam can prune the branch
            that holds the answer, and which branch that is moves with the clustering whenever a filing's chunks
            change; the ranker then sees the best flat matches too.
        :param section_candidates: per filing and heading title of the question's concepts
            (``haystack_fin.core.retrieval.sections``), also return up to this many chunks under a matching heading,
            closest to the question by cosine first, whichever Items the budgets name (0: off). A note or MD&A
            subsection is where an analyst reads the answer, and FLAM's Item-level routing cannot reach below the
            Item.
        """
        for name, value in (
            ("beam_width", beam_width),
            ("top_k", top_k),
            ("candidates_per_item", candidates_per_item),
            ("cache_size", cache_size),
        ):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name, count in (
            ("flat_candidates_per_item", flat_candidates_per_item),
            ("section_candidates", section_candidates),
        ):
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {count!r}")
        self.document_store = document_store
        self.beam_width = beam_width
        self.top_k = top_k
        self.candidates_per_item = candidates_per_item
        self.use_summary_tree = use_summary_tree
        self.use_question_tree = use_question_tree
        self.cache_size = cache_size
        self.statement_candidates = statement_candidates
        self.lexicon_path = lexicon_path
        self.flat_candidates_per_item = flat_candidates_per_item
        self.section_candidates = section_candidates
        self._lexicon: Lexicon | None = None
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
            lexicon_path=self.lexicon_path,
            flat_candidates_per_item=self.flat_candidates_per_item,
            section_candidates=self.section_candidates,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DualTreeRetriever":
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Bind the process-wide store instance (one embedded Qdrant client per folder) and load the lexicon;
        idempotent."""
        if (self.statement_candidates or self.section_candidates) and self._lexicon is None:
            self._lexicon = Lexicon.load(self.lexicon_path)
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

    def clear_cache(self) -> None:
        """Forget all cached filings of this store configuration, for every component sharing them (e.g. after
        re-indexing into a store without ``get_documents_by_id``)."""
        if self._filings is not None:
            self._filings.clear()

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
        statement_ids: dict[str, list[str]] = {}
        for doc in chunks.values():
            if doc.meta.get(schema.STATEMENT):
                statement_ids.setdefault(str(doc.meta[schema.STATEMENT]), []).append(doc.id)
        # Ids sort in filing order ("<filing_id>#chunk-00012"), which makes the heading order deterministic.
        sections = SectionIndex((cid, chunks[cid].meta.get(schema.SECTION_PATH) or ()) for cid in sorted(chunks))
        return _CachedFiling(
            filing_id, entry.index_run or None, build_item_trees(filing_id, nodes), chunks, statement_ids, sections
        )

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
        named = _filing_ids_in_filter(filters) if filters else None
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
    def _search_item(
        self,
        tree: ItemTree,
        query: str,
        query_embedding: list[float],
        k: int,
        allowed: set[str] | None,
        query_terms: Sequence[str] | None,
    ) -> ItemSearchResult:
        n = n_candidates_for(k, self.candidates_per_item)
        if self.use_summary_tree or self.use_question_tree:
            return beam_search(
                tree,
                query,
                query_embedding,
                beam_width=self.beam_width,
                n_candidates=n,
                use_summary_tree=self.use_summary_tree,
                use_question_tree=self.use_question_tree,
                allowed_leaf_ids=allowed,
                n_flat=self.flat_candidates_per_item,
                query_terms=query_terms,
            )
        return flat_search(tree, query, query_embedding, n, allowed, note="trees off", query_terms=query_terms)

    def _add_statement_blocks(
        self,
        query: str,
        filings: dict[str, _CachedFiling],
        wanted: dict[tuple[str, str | None], int],
        leaf_filter: dict[str, Any] | None,
        scored: dict[str, tuple[float, Document]],
        statements: dict[str, float] | None = None,
    ) -> schema.StatementTrace:
        """Add the blocks of the statements the question is about (see ``statement_candidates``) to ``scored``;
        ``statements`` are the question's (from an analysis), None reads them from ``query`` with the lexicon.

        An added block keeps its Item's budget when the budgets name the Item, else gets one slot per statement
        asked for; its retrieval score is 0 (the ranker scores it), its ``retrieval`` meta says why it came.
        """
        if not self.statement_candidates:
            return {}
        if statements is None:
            if self._lexicon is None:
                return {}
            statements = statements_in_query(query, self._lexicon)
        if not statements:
            return {}
        added: list[str] = []
        for fid, filing in filings.items():
            # Filing order (ids are "<filing_id>#chunk-00012", zero-padded).
            for doc_id in sorted(i for kind in statements for i in filing.statement_ids.get(kind, ())):
                doc = filing.chunks[doc_id]
                kind = str(doc.meta[schema.STATEMENT])
                if doc.id in scored:
                    continue
                if leaf_filter and not document_matches_filter(leaf_filter, doc):
                    continue
                item = _item_key(doc.meta.get(schema.ITEM))
                k = wanted.get((fid, item)) or wanted.get((fid, None)) or len(statements)
                tree = filing.trees.get(item)
                vector = tree.leaf_embeddings[tree.leaf_index[doc.id]] if tree and doc.id in tree.leaf_index else None
                retrieval = {"mode": "statement", "statement": kind, "weight": statements[kind]}
                out = replace(
                    doc,
                    score=0.0,
                    embedding=vector.tolist() if vector is not None and vector.any() else None,
                    meta={**doc.meta, schema.RETRIEVAL: retrieval, schema.BUDGET_K: k},
                )
                scored[doc.id] = (0.0, out)
                added.append(doc.id)
        return schema.StatementTrace(asked=statements, added=added)

    def _section_titles(self, query: str, analysed: Any) -> dict[str, str]:
        """The heading titles of the question's concepts: from the analysis, else read with this retriever's
        lexicon."""
        if not self.section_candidates:
            return {}
        if analysed is not None:
            return question_sections(analysed.clusters)
        if self._lexicon is None:
            return {}
        return sections_in_query(query, self._lexicon)

    def _add_section_chunks(
        self,
        query_embedding: list[float],
        titles: Mapping[str, str],
        filings: dict[str, _CachedFiling],
        wanted: dict[tuple[str, str | None], int],
        leaf_filter: dict[str, Any] | None,
        scored: dict[str, tuple[float, Document]],
        routed: Mapping[str, list[tuple[str, Mapping[str, Any]]]] | None = None,
    ) -> schema.SectionTrace:
        """Add the chunks under the question's headings (see ``section_candidates``) to ``scored``: per filing and
        title the ``section_candidates`` closest to the question. An added chunk keeps its Item's budget when the
        budgets name the Item, else gets one slot per title matched in its filing; its retrieval score is 0.

        ``routed``: per filing the ``(item, section)`` pairs FLAM routed to (budgets' ``sections``): the chunks of
        that Item under that exact heading, the section's ``k`` closest to the question, join the same way."""
        lexicon_titles = titles if self.section_candidates else {}
        if not lexicon_titles and not routed:
            return {}
        query = np.asarray(query_embedding, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        query = query / norm if norm > 0 else query

        def closest(filing: _CachedFiling, chunk_ids: Any, item: str | None = None) -> list[tuple[float, str, Any]]:
            rows: list[tuple[float, str, Any]] = []
            for chunk_id in chunk_ids:
                doc = filing.chunks[chunk_id]
                if chunk_id in scored or (leaf_filter and not document_matches_filter(leaf_filter, doc)):
                    continue
                chunk_item = _item_key(doc.meta.get(schema.ITEM))
                if item is not None and chunk_item != item:
                    continue
                tree = filing.trees.get(chunk_item)
                row = tree.leaf_index.get(chunk_id) if tree is not None else None
                vector = tree.leaf_embeddings[row] if tree is not None and row is not None else None
                cosine = float(vector @ query) if vector is not None and vector.shape == query.shape else 0.0
                rows.append((cosine, chunk_id, vector))
            return sorted(rows, key=lambda row: (-row[0], row[1]))

        def add(fid: str, filing: _CachedFiling, row: tuple[float, str, Any], retrieval: dict[str, Any], slots: int):
            cosine, chunk_id, vector = row
            doc = filing.chunks[chunk_id]
            k = wanted.get((fid, _item_key(doc.meta.get(schema.ITEM)))) or wanted.get((fid, None)) or slots
            out = replace(
                doc,
                score=0.0,
                embedding=vector.tolist() if vector is not None and vector.any() else None,
                meta={**doc.meta, schema.RETRIEVAL: {**retrieval, "dense": cosine}, schema.BUDGET_K: k},
            )
            scored[chunk_id] = (0.0, out)

        added: list[str] = []
        for fid, filing in filings.items() if lexicon_titles else ():
            by_title: dict[str, list[str]] = {}
            for chunk_id, title in filing.sections.chunks_under(lexicon_titles).items():
                by_title.setdefault(title, []).append(chunk_id)
            for title, chunk_ids in by_title.items():
                retrieval = {"mode": "section", "section": title, "cluster": titles[title]}
                for row in closest(filing, chunk_ids)[: self.section_candidates]:
                    add(fid, filing, row, retrieval, len(by_title))
                    added.append(row[1])
        trace = schema.SectionTrace(asked=dict(lexicon_titles), added=added)

        routed_trace: list[dict[str, Any]] = []
        for fid, sections in (routed or {}).items():
            filing = filings.get(fid)
            if filing is None:
                continue
            for item, section in sections:
                heading = str(section.get("section") or "")
                title = normalize_heading(heading)
                k = int(section.get("k") or 0)
                if not title or k < 1:
                    continue
                chunk_ids = filing.sections.chunks_under({title: heading}, whole_only=True)
                score = float(section.get("score") or 0.0)
                retrieval = {"mode": "section", "section": heading, "item": item, "flam_score": score}
                ids = []
                for row in closest(filing, chunk_ids, item)[:k]:
                    add(fid, filing, row, retrieval, k)
                    ids.append(row[1])
                routed_trace.append(
                    {"filing_id": fid, "item": item, "section": heading, "score": score, "k": k, "added": ids}
                )
        if routed_trace:
            trace["routed"] = routed_trace
        return trace

    @component.output_types(documents=list[Document], trace=dict)
    def run(
        self,
        query: str,
        query_embedding: list[float],
        budgets: list[dict] | None = None,
        filters: dict | None = None,
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
        :param analysis: ``QueryAnalyzer``'s analysis of ``query``: its BM25 terms and the statements it names or
            implies are taken from it instead of being read from the question (with this retriever's lexicon).
        :returns: ``documents``: candidates of all Items, best fused score first (at most
            max(candidates_per_item, 3 * k) per Item, plus statement blocks); ``trace``: ``{"items": [per-Item mode,
            nodes kept per level, leaves reached, candidate ids], "statements": {asked, added}, "cache": {hits,
            loaded, stale}, "seconds": ...}``.
        """
        self.warm_up()
        start = time.perf_counter()
        k_default = top_k if top_k is not None else self.top_k
        if k_default < 1:
            raise ValueError(f"top_k must be at least 1, got {k_default}")
        analysed = analysis_for(query, analysis)
        query_terms = analysed.content_terms if analysed is not None else None

        # (filing_id, item or None for all Items) -> k; duplicates keep the larger budget.
        wanted: dict[tuple[str, str | None], int] = {}
        hints: dict[str, str] = {}
        if budgets:
            for entry in budgets:
                if "filing_id" not in entry:
                    raise ValueError(f"budget entry without filing_id: {entry!r}")
                fid = str(entry["filing_id"])
                item = entry.get("item")
                key = (fid, None if item is None else str(item))
                k = int(entry.get("k") if entry.get("k") is not None else k_default)
                if k > 0:
                    wanted[key] = max(k, wanted.get(key, 0))
                if entry.get(schema.INDEX_RUN):
                    hints[fid] = str(entry[schema.INDEX_RUN])
        elif budgets is None or filters:
            for fid in self._filings_from_filters(filters):
                wanted[(fid, None)] = k_default
        # else: the router's budgets are an empty list (it had no filing to route, e.g. FilingScope found that no
        # indexed filing matches the question): nothing is searched, rather than every filing.
        leaf_filter = filters if filters and not _is_only_filing_filter(filters) else None

        cache_trace: dict[str, Any] = {}
        filing_ids = list(dict.fromkeys(fid for fid, _ in wanted))
        filings = self._load(filing_ids, hints, cache_trace) if filing_ids else {}

        item_traces: list[dict[str, Any]] = []
        scored: dict[str, tuple[float, Document]] = {}
        for (fid, item), k in wanted.items():
            filing = filings.get(fid)
            if filing is None:
                item_traces.append({"filing_id": fid, "item": item, "k": k, "mode": "missing", "candidates": []})
                continue
            allowed = (
                {cid for cid, doc in filing.chunks.items() if document_matches_filter(leaf_filter, doc)}
                if leaf_filter
                else None
            )
            items = list(filing.trees) if item is None else [item]
            for it in items:
                tree = filing.trees.get(it)
                if tree is None:
                    logger.info("filing {filing_id} has no chunks for item {item!r}", filing_id=fid, item=it)
                    item_traces.append({"filing_id": fid, "item": it, "k": k, "mode": "missing", "candidates": []})
                    continue
                if allowed is not None and not allowed.intersection(tree.leaf_ids):
                    continue
                result = self._search_item(tree, query, query_embedding, k, allowed, query_terms)
                item_traces.append({**result.trace(), "k": k})
                for cand in result.candidates:
                    doc = filing.chunks[cand.leaf_id]
                    retrieval = {
                        "bm25": cand.bm25_score,
                        "dense": cand.dense_score,
                        "trees": list(cand.trees),
                        "tree_paths": cand.tree_paths,
                        "mode": result.mode,
                    }
                    previous = scored.get(doc.id)
                    if previous is None or cand.score > previous[0]:
                        # The ranker's no-cross-encoder fallback scores by cosine, so the vector goes along
                        # (unit length, as Qdrant returns it for cosine collections).
                        vector = tree.leaf_embeddings[tree.leaf_index[cand.leaf_id]]
                        out = replace(
                            doc,
                            score=cand.score,
                            embedding=vector.tolist() if vector.any() else None,
                            meta={**doc.meta, schema.RETRIEVAL: retrieval, schema.BUDGET_K: k},
                        )
                        scored[doc.id] = (cand.score, out)

        statement_trace = self._add_statement_blocks(
            query, filings, wanted, leaf_filter, scored, dict(analysed.statements) if analysed is not None else None
        )
        # Sections FLAM routed to (a budget entry's "sections"), per filing in budget order.
        routed: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
        for entry in budgets or ():
            if entry.get("item") is not None and entry.get("sections"):
                pairs = routed.setdefault(str(entry["filing_id"]), [])
                pairs.extend((str(entry["item"]), section) for section in entry["sections"])
        section_trace = self._add_section_chunks(
            query_embedding, self._section_titles(query, analysed), filings, wanted, leaf_filter, scored, routed
        )
        documents = [doc for _, doc in sorted(scored.values(), key=lambda pair: -pair[0])]
        trace = schema.RetrieverTrace(
            items=item_traces,
            statements=statement_trace,
            sections=section_trace,
            cache=cache_trace,
            seconds=round(time.perf_counter() - start, 4),
        )
        return {"documents": documents, "trace": trace}
