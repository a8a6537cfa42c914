from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.document_stores.types import DocumentStore, DuplicatePolicy

from haystack_fin.core import schema
from haystack_fin.core.retrieval.filing_vectors import filing_vector

logger = logging.getLogger(__name__)


@component
class FilingWriter:
    """Writes a filing's nodes so that re-indexing replaces them: upsert by deterministic id, then delete the
    filing's nodes left over from an earlier indexing run.

    Expects chunks (and optionally summary/question nodes) and filing nodes produced by ``FilingSplitter``: every
    node carries ``filing_id`` and ``index_run``. New nodes are written first and stale ones deleted after, so a
    failure while writing leaves the previous version searchable rather than an empty filing. The filing nodes are
    written last: a filing node names its ``index_run`` only once every node of that run is in the store, and
    readers that keep to the filing node's run (DualTreeRetriever, GraphExpander, PassageWindow) never mix nodes
    of two runs while a re-index is under way. Works with any
    Haystack document store that implements ``delete_by_filter`` (Qdrant, InMemory, ...).

    Each filing node is written with a vector, the unit-length mean of its chunks' vectors in the same write
    (``filing_vectors``): ``FilingScope`` and ``DenseFilingScope`` search these before they search chunks, so a
    question that names no company never reads every chunk vector of a large store.

    Usage example:
    ```python
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack_fin.components.filing_writer import FilingWriter

    writer = FilingWriter(document_store=InMemoryDocumentStore())
    writer.run(documents=chunks, filing_nodes=filing_nodes)  # from FilingSplitter (after an embedder)
    ```
    """

    def __init__(
        self,
        document_store: DocumentStore,
        policy: DuplicatePolicy = DuplicatePolicy.OVERWRITE,
        filing_vectors: bool = True,
    ):
        """
        :param document_store: where to write.
        :param policy: duplicate policy for the upsert; OVERWRITE (default) is what makes re-indexing replace.
        :param filing_vectors: give each filing node that has no embedding the unit-length mean of its chunks'
            embeddings in this write (a filing without embedded chunks keeps none).
        """
        self.document_store = document_store
        self.policy = policy
        self.filing_vectors = filing_vectors

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self, document_store=self.document_store, policy=self.policy.name, filing_vectors=self.filing_vectors
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FilingWriter":
        params = data.get("init_parameters", {})
        if "policy" in params:
            params["policy"] = DuplicatePolicy[params["policy"]]
        return default_from_dict(cls, data)

    def close(self) -> None:
        """Release the store's client (frees an embedded Qdrant folder); Pipeline.close() calls this."""
        if hasattr(self.document_store, "close"):
            self.document_store.close()

    def _previous_runs(self, filing_ids: list[str]) -> dict[str, str | None]:
        """The ``index_run`` of each filing's stored filing node (None: not indexed yet), where the store can look
        nodes up by id; filings it cannot tell about are left out, so their stale nodes are always searched for."""
        if not hasattr(self.document_store, "get_documents_by_id"):
            return {}
        found = self.document_store.get_documents_by_id([schema.filing_node_id(fid) for fid in filing_ids])
        runs: dict[str, str | None] = dict.fromkeys(filing_ids)
        for node in (schema.FilingNode.from_meta(n.meta) for n in found):
            if node.filing_id in runs:
                runs[node.filing_id] = node.index_run or None
        return runs

    @component.output_types(documents_written=int, stale_deleted=int, filing_ids=list[str])
    def run(self, documents: list[Document], filing_nodes: list[Document] | None = None) -> dict[str, Any]:
        """
        Write nodes and remove the stale nodes of each filing written.

        :param documents: chunk (and tree) nodes.
        :param filing_nodes: filing nodes.
        :returns: ``documents_written``, ``stale_deleted`` (nodes of earlier runs removed) and ``filing_ids``.
        """
        filing_nodes = list(filing_nodes or [])
        if self.filing_vectors:
            filing_nodes = with_filing_vectors(filing_nodes, documents)
        # Filing nodes last (see the class docstring): readers take a filing's run from its filing node.
        nodes = [*documents, *filing_nodes]
        runs: dict[str, str] = {}
        for node in nodes:
            fid, run = node.meta.get(schema.FILING_ID), node.meta.get(schema.INDEX_RUN)
            if not fid or not run:
                raise ValueError(
                    f"node {node.id} lacks {schema.FILING_ID} or {schema.INDEX_RUN}: was it made by FilingSplitter?"
                )
            if runs.setdefault(fid, run) != run:
                raise ValueError(f"filing {fid} has nodes from two indexing runs in one write")
        previous = self._previous_runs(list(runs))
        written = self.document_store.write_documents(nodes, policy=self.policy) if nodes else 0
        deleted = 0
        for fid, run in runs.items():
            if fid in previous and previous[fid] in (None, run):
                # A filing seen for the first time, or re-indexed into the same ids, has nothing stale; skipping the
                # delete avoids a filter that embedded Qdrant answers by scanning the whole collection.
                continue
            stale = {
                "operator": "AND",
                "conditions": [
                    {"field": f"meta.{schema.FILING_ID}", "operator": "==", "value": fid},
                    {"field": f"meta.{schema.INDEX_RUN}", "operator": "!=", "value": run},
                ],
            }
            deleted += self.document_store.delete_by_filter(stale)  # type: ignore[attr-defined]  # beyond the DocumentStore protocol
        if deleted:
            logger.info("Deleted {deleted} stale nodes of {filing_ids}", deleted=deleted, filing_ids=", ".join(runs))
        return {"documents_written": written, "stale_deleted": deleted, "filing_ids": list(runs)}


def with_filing_vectors(filing_nodes: list[Document], documents: list[Document]) -> list[Document]:
    """``filing_nodes`` (copies where changed), each without an embedding given the filing vector of its chunks
    among ``documents`` (``core.retrieval.filing_vectors``)."""
    vectors: dict[str, list[list[float]]] = {}
    for doc in documents:
        if doc.embedding is not None and doc.meta.get(schema.NODE_TYPE) == schema.NodeType.CHUNK.value:
            vectors.setdefault(str(doc.meta.get(schema.FILING_ID)), []).append(doc.embedding)
    out = []
    for node in filing_nodes:
        vector = (
            None if node.embedding is not None else filing_vector(vectors.get(str(node.meta.get(schema.FILING_ID)), []))
        )
        out.append(node if vector is None else replace(node, embedding=vector))
    return out
