"""Haystack DocumentStore over Qdrant Edge (in-process Qdrant engine, on-disk segments and payload indexes)."""

from haystack_fin.document_stores.qdrant_edge.document_store import (
    QdrantEdgeDocumentStore,
    QdrantEdgeStoreError,
    QdrantEdgeStoreLockedError,
)

__all__ = ["QdrantEdgeDocumentStore", "QdrantEdgeStoreError", "QdrantEdgeStoreLockedError"]
