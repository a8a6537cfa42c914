from typing import Any

import qdrant_edge as qe
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy
from haystack.document_stores.types.filter_policy import apply_filter_policy

from haystack_fin.core.validation import check_int
from haystack_fin.document_stores.qdrant_edge.document_store import QdrantEdgeDocumentStore

_MERGE_NATIVE_ERROR = (
    "Native qdrant_edge.Filter objects cannot be used with filter_policy='merge': use Haystack filters, or "
    "filter_policy='replace'"
)


@component
class QdrantEdgeEmbeddingRetriever:
    """Dense k-NN retrieval from a ``QdrantEdgeDocumentStore``, with the conventions of qdrant-haystack's
    ``QdrantEmbeddingRetriever`` (filters, top_k, filter_policy, return_embedding, scale_score, score_threshold).

    Usage example:
    ```python
    from haystack_fin.components.qdrant_edge_retriever import QdrantEdgeEmbeddingRetriever
    from haystack_fin.document_stores.qdrant_edge.document_store import QdrantEdgeDocumentStore

    store = QdrantEdgeDocumentStore(path="./fin-index", embedding_dim=384)
    retriever = QdrantEdgeEmbeddingRetriever(document_store=store, top_k=5)
    result = retriever.run(
        query_embedding=[0.1] * 384, filters={"field": "meta.filing_id", "operator": "==", "value": "BBY_2023_10Q"}
    )
    ```
    """

    def __init__(
        self,
        document_store: QdrantEdgeDocumentStore,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: str | FilterPolicy = FilterPolicy.REPLACE,
        return_embedding: bool = False,
        scale_score: bool = False,
        score_threshold: float | None = None,
    ) -> None:
        """
        :param document_store: the store to search.
        :param filters: Haystack filters applied to every query (see ``filter_policy`` for runtime filters).
        :param top_k: documents returned per query.
        :param filter_policy: ``replace`` (runtime filters replace these) or ``merge`` (AND-combined).
        :param return_embedding: return the documents' vectors (cosine stores: unit-normalized).
        :param scale_score: map scores to [0, 1] ((cos + 1) / 2 for cosine, a sigmoid otherwise).
        :param score_threshold: minimum similarity (``l2`` stores: maximum distance).
        """
        if not isinstance(document_store, QdrantEdgeDocumentStore):
            raise ValueError(f"document_store must be a QdrantEdgeDocumentStore, got {type(document_store).__name__}")
        check_int("top_k", top_k)
        self.document_store = document_store
        self.filters = filters
        self.top_k = top_k
        self.filter_policy = (
            filter_policy if isinstance(filter_policy, FilterPolicy) else FilterPolicy.from_str(filter_policy)
        )
        self.return_embedding = return_embedding
        self.scale_score = scale_score
        self.score_threshold = score_threshold

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            document_store=self.document_store.to_dict(),
            filters=self.filters,
            top_k=self.top_k,
            filter_policy=self.filter_policy.value,
            return_embedding=self.return_embedding,
            scale_score=self.scale_score,
            score_threshold=self.score_threshold,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "QdrantEdgeEmbeddingRetriever":
        params = data.get("init_parameters", {})
        if isinstance(params.get("document_store"), dict):
            params["document_store"] = QdrantEdgeDocumentStore.from_dict(params["document_store"])
        if params.get("filter_policy"):
            params["filter_policy"] = FilterPolicy.from_str(params["filter_policy"])
        return default_from_dict(cls, data)

    def close(self) -> None:
        """Release the store's shard (and its folder lock); Pipeline.close() calls this."""
        self.document_store.close()

    @component.output_types(documents=list[Document])
    def run(
        self,
        query_embedding: list[float],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        return_embedding: bool | None = None,
        scale_score: bool | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """
        :param query_embedding: the query vector.
        :param filters: runtime filters, combined with the init filters by ``filter_policy``.
        :param top_k: overrides the init ``top_k``.
        :param return_embedding: overrides the init ``return_embedding``.
        :param scale_score: overrides the init ``scale_score``.
        :param score_threshold: overrides the init ``score_threshold``.
        :returns: ``documents``: nearest first, with ``score``.
        """
        if self.filter_policy == FilterPolicy.MERGE and (
            isinstance(self.filters, qe.Filter) or isinstance(filters, qe.Filter)
        ):
            raise ValueError(_MERGE_NATIVE_ERROR)
        applied = apply_filter_policy(self.filter_policy, self.filters, filters)
        docs = self.document_store._query_by_embedding(
            query_embedding=query_embedding,
            filters=applied,
            top_k=top_k if top_k is not None else self.top_k,
            return_embedding=self.return_embedding if return_embedding is None else return_embedding,
            scale_score=self.scale_score if scale_score is None else scale_score,
            score_threshold=self.score_threshold if score_threshold is None else score_threshold,
        )
        return {"documents": docs}
