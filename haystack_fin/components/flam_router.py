from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from haystack_fin.core import schema
from haystack_fin.core.retrieval.flam import (
    DEFAULT_SMOOTHING,
    FilingStats,
    ItemBudget,
    WeightMode,
    route,
    validate_weighting,
)
from haystack_fin.core.retrieval.question_analysis import analysis_or_own
from haystack_fin.core.schema import NodeType
from haystack_fin.core.validation import check_int
from haystack_fin.store_registry import SharedStoreClient

logger = logging.getLogger(__name__)


def budget_filters(budgets: list[ItemBudget], filing_ids: list[str] | None = None) -> dict[str, Any] | None:
    """Haystack filter selecting the chunks of the routed (filing, Item) pairs: ``node_type == "chunk"`` AND an OR
    over filings of (``filing_id == f`` AND ``item in [...]``).

    Without budgets it falls back to the chunks of ``filing_ids`` when given (keep the scope, drop the Item
    routing), else ``None`` (no restriction).
    """
    chunk = schema.node_type_filter(schema.NodeType.CHUNK)
    items_by_filing: dict[str, list[str]] = {}
    for budget in budgets:
        items_by_filing.setdefault(budget.filing_id, []).append(budget.item)
    if not items_by_filing:
        if not filing_ids:
            return None
        scope = schema.filing_filter(filing_ids)
        return {"operator": "AND", "conditions": [chunk, scope]}
    pairs = [
        {
            "operator": "AND",
            "conditions": [
                schema.filing_filter(filing_id),
                {"field": f"meta.{schema.ITEM}", "operator": "in", "value": items},
            ],
        }
        for filing_id, items in items_by_filing.items()
    ]
    routed = pairs[0] if len(pairs) == 1 else {"operator": "OR", "conditions": pairs}
    return {"operator": "AND", "conditions": [chunk, routed]}


@component
class FlamRouter(SharedStoreClient):
    """Decides which SEC Items of which filings to search for a question, and how many passages each gets (FLAM).

    FinGEAR's Financial Lexicon-Aware Mapping: the question's financial terms are matched to the lexicon's synonym
    clusters; each Item of a filing is weighted by how often it mentions those clusters relative to all lexicon
    terms it mentions; the retrieval budget ``top_k`` is split across filings (uniformly, ties to the first filing
    given) and then across Items in proportion to the weights, summing to exactly ``top_k``. The rules (smoothing,
    fallbacks, cover page, IDF) are documented in ``haystack_fin.core.retrieval.flam``.

    Reads the store's filing nodes (``meta.node_type == "filing"``), written by ``FilingSplitter``/``FilingWriter``:
    ``filing_id``, ``form``, ``items`` (``[{item, n_chunks, ...}]``), ``item_term_counts`` (``{item: {cluster_id:
    count}}``) and ``item_term_totals`` (``{item: total}``), and per Item the same for its sections
    (``section_term_counts``, ``section_term_totals``), from which a budget entry names the sections of its Item that
    stand out (``sections``; ``route_sections``). Filing nodes without the counts are routed by the
    lexicon's Item priors for the question's concepts. Works with any Haystack document store that supports
    ``filter_documents`` (InMemory, Qdrant, ...). The counts must come from the same lexicon (cluster ids) as the
    question's analysis (``QueryAnalyzer``; the built-in lexicon without one): a FinRAD CSV merged into the
    analyzer's lexicon adds query synonyms to existing clusters, which keeps the ids.

    Outputs ``budgets`` for a budget-aware retriever, ``filters`` for any plain Haystack retriever (the chunks of
    the routed pairs), and ``routing``, a JSON explanation (terms, clusters, weights, budgets).

    Usage example:
    ```python
    from haystack import Document, Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from haystack_fin.components.flam_router import FlamRouter

    store = InMemoryDocumentStore()
    store.write_documents([
        Document(id="acme#filing", content="ACME 10-K 2024", meta={
            "node_type": "filing", "filing_id": "acme", "form": "10-K",
            "items": [{"item": "1A", "n_chunks": 1}, {"item": "8", "n_chunks": 1}],
            "item_term_counts": {"1A": {"inflation": 3}, "8": {"capex": 4, "revenue": 9}},
            "item_term_totals": {"1A": 40, "8": 120}}),
        Document(content="Capex (purchases of property and equipment) was $1.2 billion.",
                 meta={"node_type": "chunk", "filing_id": "acme", "item": "8"}),
        Document(content="Inflation may hurt our margins.",
                 meta={"node_type": "chunk", "filing_id": "acme", "item": "1A"}),
    ])
    pipe = Pipeline()
    pipe.add_component("router", FlamRouter(document_store=store, top_k=3))
    pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store))
    pipe.connect("router.filters", "retriever.filters")
    query = "How much capex did ACME spend?"
    result = pipe.run({"router": {"query": query}, "retriever": {"query": query}})
    print(result["router"]["budgets"])  # [{"filing_id": "acme", "item": "8", "k": 3, "weight": 1.0}]
    print(result["retriever"]["documents"][0].content)  # the Item 8 chunk only
    ```
    """

    def __init__(
        self,
        document_store: Any,
        top_k: int = 5,
        mode: WeightMode = "relative",
        temperature: float = 1.0,
        smoothing: float = DEFAULT_SMOOTHING,
        idf: bool = False,
        route_sections: bool = False,
    ):
        """
        :param document_store: the store holding the filing nodes (and the chunks the filters select).
        :param top_k: total budget split across filings and Items (>= 1).
        :param mode: Item weighting: "relative" (FinGEAR's relative frequency), "log" (damped: spreads the budget
            over more Items), "softmax" (of the relative scores, with ``temperature``) or "uniform" (an equal share
            for every Item with chunks, whatever the question: the FLAM ablation).
        :param temperature: softmax temperature (> 0); ignored by the other modes.
        :param smoothing: pseudo-count added to every Item's term total (0 = FinGEAR's plain ratio).
        :param idf: down-weight clusters mentioned in most Items of a filing by ``log(1 + N / df)``.
        :param route_sections: also route to the sections below each budgeted Item (the notes, MD&A's subsections)
            from the filing node's section statistics (``section_term_counts``): the sections whose relative
            frequency is above their Item's share the Item's budget, and a budget entry lists them under
            ``sections`` (``flam.route_sections``). A filing indexed without section statistics gets none.
        """
        check_int("top_k", top_k)
        validate_weighting(mode, temperature, smoothing)
        self.document_store = document_store
        self.top_k = top_k
        self.mode = mode
        self.temperature = temperature
        self.smoothing = smoothing
        self.idf = idf
        self.route_sections = route_sections
        self._store: Any = None

    def to_dict(self) -> dict[str, Any]:
        # One style across components: every init parameter explicitly; default_to_dict serializes the store.
        return default_to_dict(
            self,
            document_store=self.document_store,
            top_k=self.top_k,
            mode=self.mode,
            temperature=self.temperature,
            smoothing=self.smoothing,
            idf=self.idf,
            route_sections=self.route_sections,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FlamRouter":
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Connect the shared store instance (once; Pipeline calls this on every run)."""
        self._attach_store()

    def _filing_nodes(self, filing_ids: list[str] | None) -> list[Document]:
        # Filing nodes have deterministic ids: a direct lookup avoids a filter, which embedded Qdrant answers by
        # scanning the whole collection in Python (hundreds of ms per query on a 40k-node index).
        if filing_ids is not None and hasattr(self._store, "get_documents_by_id"):
            nodes = self._store.get_documents_by_id([schema.filing_node_id(fid) for fid in dict.fromkeys(filing_ids)])
            return [n for n in nodes if n.meta.get(schema.NODE_TYPE) == NodeType.FILING.value]
        conditions: list[dict[str, Any]] = [schema.node_type_filter(schema.NodeType.FILING)]
        if filing_ids is not None:
            conditions.append(schema.filing_filter(filing_ids))
        return list(self._store.filter_documents(filters={"operator": "AND", "conditions": conditions}))

    def _filing_stats(self, filing_ids: list[str] | None) -> list[FilingStats]:
        nodes = self._filing_nodes(filing_ids)
        stats = {str(node.meta.get(schema.FILING_ID)): FilingStats.from_meta(node.meta) for node in nodes}
        if filing_ids is None:
            return [stats[fid] for fid in sorted(stats)]
        missing = [fid for fid in filing_ids if fid not in stats]
        if missing:
            logger.warning("FlamRouter: no filing node for {missing}; those filings are not routed.", missing=missing)
        # The caller's order is the scope rank: it breaks ties when the budget is split across filings.
        return [stats[fid] for fid in dict.fromkeys(filing_ids) if fid in stats]

    @component.output_types(budgets=list[dict[str, Any]], filters=dict[str, Any] | None, routing=dict[str, Any])
    def run(
        self,
        query: str,
        filing_ids: list[str] | None = None,
        top_k: int | None = None,
        analysis: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """
        Route a question to filings' Items.

        :param query: the question.
        :param filing_ids: the filings in scope, best first; None = every filing in the store.
        :param top_k: total budget; None = the init value.
        :param analysis: ``QueryAnalyzer``'s analysis of ``query``: its lexicon terms, cluster names and Item
            priors; without it the question is analysed with the built-in lexicon.
        :returns: ``budgets``: ``[{filing_id, item, k, weight}]`` (k summing to ``top_k``; ``weight`` is the pair's
            share of the whole budget); ``filters``: a Haystack filter selecting the chunks of those pairs (None
            when nothing could be routed and no scope was given); ``routing``: a JSON-serializable explanation.
        """
        k = self.top_k if top_k is None else top_k
        check_int("top_k", k)
        self.warm_up()  # standalone use without a Pipeline; no-op once warm
        filings = self._filing_stats(filing_ids)
        analysed = analysis_or_own(query, analysis)
        # The question's clusters (names, Item priors) stand in for the lexicon: routing needs no other cluster, and
        # the analyzer's lexicon is the one the pipeline is configured with.
        lexicon = analysed.cluster_lexicon()
        decision = route(
            query,
            filings,
            k,
            mode=self.mode,
            temperature=self.temperature,
            smoothing=self.smoothing,
            idf=self.idf,
            lexicon=lexicon,
            terms=analysed.terms,
            sections=self.route_sections,
        )
        if not decision.budgets:
            logger.warning(
                "FlamRouter routed nothing for {query!r} ({n_nodes} filing nodes found).",
                query=query,
                n_nodes=len(filings),
            )
        return {
            "budgets": [budget.to_dict() for budget in decision.budgets],
            "filters": budget_filters(decision.budgets, filing_ids),
            "routing": decision.explain(lexicon),
        }
