from collections import Counter
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.document_stores.types import DocumentStore

from haystack_fin.core import schema
from haystack_fin.core.validation import check_int
from haystack_fin.store_registry import SharedStoreClient

logger = logging.getLogger(__name__)

_CHUNKS = schema.node_type_filter(schema.NodeType.CHUNK)
_FILINGS = schema.node_type_filter(schema.NodeType.FILING)


def nearest_nodes(store: Any, query_embedding: list[float], filters: dict[str, Any], top_k: int) -> list[Document]:
    """The ``top_k`` nodes matching ``filters`` nearest to ``query_embedding``."""
    # Document stores name their vector search differently; this covers Qdrant (local, server, Edge) and InMemory.
    if hasattr(store, "_query_by_embedding"):
        return list(store._query_by_embedding(query_embedding=query_embedding, filters=filters, top_k=top_k))
    if hasattr(store, "embedding_retrieval"):
        return list(store.embedding_retrieval(query_embedding=query_embedding, filters=filters, top_k=top_k))
    raise TypeError(f"{type(store).__name__} has no embedding search (_query_by_embedding or embedding_retrieval)")


def candidate_filings_of(store: Any, query_embedding: list[float], n_filings: int) -> list[str] | None:
    """The ``n_filings`` filings whose filing vectors (``FilingWriter``) are nearest to ``query_embedding``, or None
    when the store holds fewer filing vectors than that: a small store, or one written before filing nodes had
    vectors, where every chunk is searched."""
    hits = nearest_nodes(store, query_embedding, _FILINGS, n_filings)
    ids = list(dict.fromkeys(str(d.meta[schema.FILING_ID]) for d in hits if d.meta.get(schema.FILING_ID)))
    return ids if len(ids) >= n_filings else None


def nearest_chunks(
    store: Any, query_embedding: list[float], top_k: int, filing_ids: list[str] | None = None
) -> list[Document]:
    """The ``top_k`` chunks nearest to ``query_embedding`` in the whole store, or among ``filing_ids``' chunks."""
    filters: dict[str, Any] = _CHUNKS
    if filing_ids is not None:
        in_filings = schema.filing_filter(filing_ids)
        filters = {"operator": "AND", "conditions": [_CHUNKS, in_filings]}
    return nearest_nodes(store, query_embedding, filters, top_k)


def nearest_filings(
    store: Any, query_embedding: list[float], top_k: int, candidate_filings: int | None = None
) -> tuple[list[str], Counter[str], int, list[str] | None]:
    """The filings of the ``top_k`` chunks nearest to ``query_embedding``, most chunks first (ties: the filing of the
    better-ranked chunk first), with the chunk count per filing, the number of chunks found, and the candidate
    filings whose chunks were searched (None: every chunk was; see ``candidate_filings_of()``)."""
    candidates = candidate_filings_of(store, query_embedding, candidate_filings) if candidate_filings else None
    hits = nearest_chunks(store, query_embedding, top_k, candidates)
    counts: Counter[str] = Counter()
    first_rank: dict[str, int] = {}
    for rank, doc in enumerate(hits):
        fid = doc.meta.get(schema.FILING_ID)
        if fid:
            counts[str(fid)] += 1
            first_rank.setdefault(str(fid), rank)
    return sorted(counts, key=lambda f: (-counts[f], first_rank[f])), counts, len(hits), candidates


@component
class DenseFilingScope(SharedStoreClient):
    """Scopes a question to the filings of its nearest chunks in the whole index, most frequent first (ties: the
    better-ranked chunk first).

    In a store of more than ``candidate_filings`` filings, the chunks searched are those of the ``candidate_filings``
    filings whose filing vectors (the mean direction of their chunks, written by ``FilingWriter``) are nearest to
    the question: a k-NN over one vector per filing and then over a few hundred thousand chunks at most, where a
    k-NN over every chunk would read all of a large store's vectors (or need a global HNSW graph). In a smaller store,
    or one without filing vectors, every chunk is searched.

    This is the scope a flat RAG system has when it reads no filing metadata, which makes it the ablation of
    ``FilingScope`` (``eval --ablate scope``). Its outputs match ``FilingScope``'s, so either feeds
    ``FlamRouter.filing_ids``. Works with Qdrant stores and Haystack's InMemoryDocumentStore.

    Usage example:
    ```python
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack_fin.components.dense_filing_scope import DenseFilingScope

    scope = DenseFilingScope(document_store=InMemoryDocumentStore(), top_k=20, max_filings=3)
    scope.run(query_embedding=[0.1] * 384)["filing_ids"]  # the filings of the 20 nearest chunks
    ```
    """

    def __init__(
        self, document_store: DocumentStore, top_k: int = 20, max_filings: int = 3, candidate_filings: int = 64
    ) -> None:
        """
        :param document_store: the store holding the chunks (``meta.node_type == "chunk"``, ``meta.filing_id``).
        :param top_k: how many nearest chunks vote.
        :param max_filings: at most this many filings.
        :param candidate_filings: in a store with more filing vectors than this, only the chunks of this many
            filings, nearest by filing vector, vote.
        """
        for name, value in (("top_k", top_k), ("max_filings", max_filings), ("candidate_filings", candidate_filings)):
            check_int(name, value)
        self.document_store = document_store
        self.top_k = top_k
        self.max_filings = max_filings
        self.candidate_filings = candidate_filings
        self._store: Any = None

    def to_dict(self) -> dict[str, Any]:
        # One style across components: every init parameter explicitly; default_to_dict serializes the store.
        return default_to_dict(
            self,
            document_store=self.document_store,
            top_k=self.top_k,
            max_filings=self.max_filings,
            candidate_filings=self.candidate_filings,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DenseFilingScope":
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Attach to the shared store instance (embedded Qdrant allows one client per folder)."""
        self._attach_store()

    @component.output_types(filing_ids=list[str], filters=dict[str, Any], scope=dict[str, Any])
    def run(self, query_embedding: list[float], filing_ids: list[str] | None = None) -> dict[str, Any]:
        """
        :param query_embedding: the question's vector (the model that embedded the chunks).
        :param filing_ids: an explicit scope chosen by the caller; it overrides the search when non-empty.
        :returns: ``filing_ids`` (best first), ``filters`` on ``meta.filing_id`` (``{}`` when empty) and ``scope``,
            the explanation (reason and per-filing chunk counts).
        """
        counts: Counter[str] = Counter()
        if filing_ids:
            ids, reason = list(dict.fromkeys(filing_ids)), "explicit filing ids"
        else:
            self.warm_up()
            ranked, counts, n_hits, candidates = nearest_filings(
                self._store, query_embedding, self.top_k, self.candidate_filings
            )
            ids = ranked[: self.max_filings]
            reason = f"filings of the {n_hits} nearest chunks"
            if candidates is not None:
                reason += f" among the {len(candidates)} filings nearest by filing vector"
        filters = schema.filing_filter(ids) if ids else {}
        return {"filing_ids": ids, "filters": filters, "scope": {"reason": reason, "chunks_per_filing": dict(counts)}}
