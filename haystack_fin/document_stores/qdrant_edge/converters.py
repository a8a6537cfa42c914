"""Document <-> Qdrant Edge point, in the layout qdrant-haystack uses.

Point id = ``uuid5(UUID_NAMESPACE, Document.id)`` with qdrant-haystack's namespace, so a Document has the same point
id in both stores; the payload is ``Document.to_dict(flatten=False)`` without the embedding (the vector holds it),
so ``Document.id`` (any string) and meta round-trip unchanged.
"""

import uuid
from collections.abc import Sequence
from typing import Any

import qdrant_edge as qe
from haystack import Document

# The namespace of qdrant-haystack's converters.convert_id: the same Document gets the same point id in both stores.
UUID_NAMESPACE = uuid.UUID("3896d314-1e95-4a3a-b45a-945f9f0b541d")


def convert_id(doc_id: str) -> str:
    """The point id of a Document id (Qdrant accepts only unsigned ints and UUIDs as ids)."""
    return uuid.uuid5(UUID_NAMESPACE, doc_id).hex


def document_to_point(document: Document, embedding_dim: int) -> qe.Point:
    """A Document as a point; a Document without an embedding becomes a point without a vector.

    :raises ValueError: the embedding's length is not ``embedding_dim``.
    """
    # What Document.to_dict(flatten=False) returns, minus the embedding, built by hand: to_dict goes through
    # dataclasses.asdict, which deep-copies the 384 floats of every embedding (3 ms a document, most of a write).
    payload = {
        "id": document.id,
        "content": document.content,
        "blob": document.blob.to_dict() if document.blob is not None else None,
        "meta": document.meta,
        "score": document.score,
        "sparse_embedding": document.sparse_embedding.to_dict() if document.sparse_embedding is not None else None,
    }
    embedding = document.embedding
    if embedding is None:
        vector: Any = {}
    else:
        if len(embedding) != embedding_dim:
            raise ValueError(
                f"Document {document.id!r} has an embedding of length {len(embedding)}, but the store was created "
                f"with embedding_dim={embedding_dim}"
            )
        vector = embedding  # handed to Edge as is: it reads ints, floats and numpy arrays as float32
    return qe.Point(id=convert_id(document.id), vector=vector, payload=payload)


def point_to_document(point: qe.Record | qe.ScoredPoint, with_embedding: bool) -> Document:
    """A Record (scroll/retrieve) or ScoredPoint (query) back as a Document; ``score`` is set for ScoredPoints."""
    payload = dict(point.payload or {})
    payload["score"] = point.score if isinstance(point, qe.ScoredPoint) else None
    vector = point.vector if with_embedding else None
    # A point stored without a vector comes back with {} (qdrant-haystack hands that {} on as the embedding).
    payload["embedding"] = list(vector) if isinstance(vector, Sequence) and vector else None
    return Document.from_dict(payload)
