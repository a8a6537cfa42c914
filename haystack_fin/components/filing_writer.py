import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.document_stores.types import DocumentStore, DuplicatePolicy

from haystack_fin.core import schema
from haystack_fin.core.retrieval.filing_vectors import filing_vector

logger = logging.getLogger(__name__)

_IN_BATCH = 256  # values per "in" condition of a lookup


@component
class FilingWriter:
    """Writes a filing's nodes so that re-indexing replaces them, and so that a write killed at any moment leaves
    either the previous version or the new one complete and searchable.

    Expects chunks (and optionally summary/question nodes) and filing nodes produced by ``FilingSplitter``: every
    node carries ``filing_id`` and ``index_run``, and every node but the filing node carries its run in its id
    (``<filing_id>#<run>/chunk-00012``). Per filing, in this order:

    1. a ``pending`` marker node is written (``<filing_id>#pending``), naming the run about to be written;
    2. the run's nodes are written: new ids, next to the previous run's nodes, which stay untouched. Readers keep
       to the run their filing node names (``store_registry.FilingCache``, ``PassageWindow``), so this partial run
       is invisible to them;
    3. the filing node is written: one point, overwritten in place, which switches readers to the new run;
    4. the nodes of every other run of the filing are deleted, then the marker.

    A marker left in the store means that a write was interrupted: ``warm_up`` (and a later write of the same
    filing) finishes it by deleting every node of the filing that is not of the run its filing node names (all of
    them when the filing node was never written: an interrupted first index). Re-indexing the same filing with the
    same run rewrites the same ids with the same content. Works with any Haystack document store that implements
    ``delete_by_filter`` (Qdrant, InMemory, ...).

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
        self._recovered = False
        self.recovered: dict[str, int] = {}  # what ``warm_up`` cleaned up: filing id -> nodes deleted

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

    def warm_up(self) -> None:
        """Finish the writes an earlier process left unfinished (``recover``), once per writer."""
        if not self._recovered:
            self._recovered = True
            self.recovered = self.recover()

    def close(self) -> None:
        """Release the store's client (frees an embedded Qdrant folder); Pipeline.close() calls this."""
        if hasattr(self.document_store, "close"):
            self.document_store.close()

    def recover(self) -> dict[str, int]:
        """Delete the leftovers of every interrupted write (a ``pending`` marker in the store): the nodes of the
        filing that are not of the run its filing node names, all of its nodes when it has none, then the marker.

        :returns: filing id -> nodes deleted.
        """
        done: dict[str, int] = {}
        for write in pending_writes(self.document_store):
            done[write.filing_id] = self._finish(write.filing_id, write.current_run)
        if done:
            logger.warning(
                "Removed {n} node(s) left by interrupted indexing runs of {filing_ids}",
                n=sum(done.values()),
                filing_ids=", ".join(done),
            )
        return done

    def _finish(self, filing_id: str, keep_run: str | None) -> int:
        deleted = delete_other_runs(self.document_store, filing_id, keep_run)
        self.document_store.delete_documents([schema.pending_node_id(filing_id)])
        return deleted

    def _stored(self, filing_ids: list[str]) -> tuple[dict[str, str | None], set[str]]:
        """The ``index_run`` of each filing's stored filing node (None: not indexed yet) and the filings with a
        pending marker, where the store can look nodes up by id; filings it cannot tell about are left out of the
        runs, so their other runs are always searched for."""
        if not hasattr(self.document_store, "get_documents_by_id"):
            return {}, set()
        ids = [schema.filing_node_id(fid) for fid in filing_ids] + [schema.pending_node_id(fid) for fid in filing_ids]
        runs: dict[str, str | None] = dict.fromkeys(filing_ids)
        pending: set[str] = set()
        for node in self.document_store.get_documents_by_id(ids):
            if node.meta.get(schema.NODE_TYPE) == schema.NodeType.PENDING.value:
                pending.add(str(node.meta.get(schema.FILING_ID) or schema.filing_id_of(node.id)))
                continue
            filing = schema.FilingNode.from_meta(node.meta)
            if filing.filing_id in runs:
                runs[filing.filing_id] = filing.index_run or None
        return runs, pending

    def _write(self, nodes: list[Document]) -> int:
        return int(self.document_store.write_documents(nodes, policy=self.policy)) if nodes else 0

    @component.output_types(documents_written=int, stale_deleted=int, filing_ids=list[str])
    def run(self, documents: list[Document], filing_nodes: list[Document] | None = None) -> dict[str, Any]:
        """
        Write nodes and remove the nodes of earlier runs of each filing written.

        :param documents: chunk (and tree) nodes.
        :param filing_nodes: filing nodes.
        :returns: ``documents_written``, ``stale_deleted`` (nodes of earlier runs removed) and ``filing_ids``.
        """
        self.warm_up()
        filing_nodes = list(filing_nodes or [])
        if self.filing_vectors:
            filing_nodes = with_filing_vectors(filing_nodes, documents)
        runs: dict[str, str] = {}
        nodes_of: dict[str, list[Document]] = {}
        heads_of: dict[str, list[Document]] = {}
        for node in [*documents, *filing_nodes]:
            fid, run = node.meta.get(schema.FILING_ID), node.meta.get(schema.INDEX_RUN)
            if not fid or not run:
                raise ValueError(
                    f"node {node.id} lacks {schema.FILING_ID} or {schema.INDEX_RUN}: was it made by FilingSplitter?"
                )
            if runs.setdefault(fid, run) != run:
                raise ValueError(f"filing {fid} has nodes from two indexing runs in one write")
        for node in documents:
            nodes_of.setdefault(str(node.meta[schema.FILING_ID]), []).append(node)
        for node in filing_nodes:
            heads_of.setdefault(str(node.meta[schema.FILING_ID]), []).append(node)
        previous, pending = self._stored(list(runs))
        written = deleted = 0
        for fid, run in runs.items():
            if fid in pending:  # an interrupted write of this filing: its leftovers go first
                deleted += self._finish(fid, previous.get(fid))
            same_run = fid in previous and previous[fid] == run
            marked = bool(heads_of.get(fid)) and not same_run
            if marked:
                marker = Document(
                    id=schema.pending_node_id(fid),
                    content="",
                    meta={
                        schema.NODE_TYPE: schema.NodeType.PENDING.value,
                        schema.FILING_ID: fid,
                        schema.INDEX_RUN: run,
                    },
                )
                self.document_store.write_documents([marker], policy=DuplicatePolicy.OVERWRITE)
            written += self._write(nodes_of.get(fid, []))
            # The switch: readers take a filing's run from its filing node (see the class docstring).
            written += self._write(heads_of.get(fid, []))
            if fid not in previous or previous[fid] not in (None, run):
                # A filing seen for the first time has no other run (an interrupted first write left a marker,
                # handled above); skipping the delete avoids a filter that some stores answer by a scan.
                deleted += delete_other_runs(self.document_store, fid, run)
            if marked:
                self.document_store.delete_documents([schema.pending_node_id(fid)])
        if deleted:
            logger.info("Deleted {deleted} stale nodes of {filing_ids}", deleted=deleted, filing_ids=", ".join(runs))
        return {"documents_written": written, "stale_deleted": deleted, "filing_ids": list(runs)}


@dataclass
class PendingWrite:
    """A write of one filing that has not finished (its ``pending`` marker is in the store)."""

    filing_id: str
    run: str  # the run that was being written
    current_run: str | None  # the run the filing node names (None: no filing node)
    leftover_nodes: int  # nodes of the filing that are not of ``current_run``

    @property
    def switched(self) -> bool:
        """Whether the filing node already names the new run (only the old run's deletion was cut short)."""
        return self.current_run == self.run


def _other_runs_filter(filing_id: str, keep_run: str | None, markers: bool = True) -> dict[str, Any]:
    conditions: list[dict[str, Any]] = [schema.filing_filter(filing_id)]
    if keep_run is not None:
        conditions.append({"field": f"meta.{schema.INDEX_RUN}", "operator": "!=", "value": keep_run})
    if not markers:
        conditions.append(
            {"field": f"meta.{schema.NODE_TYPE}", "operator": "!=", "value": schema.NodeType.PENDING.value}
        )
    return conditions[0] if len(conditions) == 1 else {"operator": "AND", "conditions": conditions}


def delete_other_runs(store: Any, filing_id: str, keep_run: str | None) -> int:
    """Delete the nodes of ``filing_id`` not of run ``keep_run`` (every node of the filing when None); returns how
    many."""
    return int(store.delete_by_filter(_other_runs_filter(filing_id, keep_run)))


def pending_writes(store: Any) -> list[PendingWrite]:
    """The interrupted writes recorded in ``store`` (its ``pending`` markers), with what they left behind."""
    markers = store.filter_documents(filters=schema.node_type_filter(schema.NodeType.PENDING))
    if not markers:
        return []
    runs = {
        str(m.meta.get(schema.FILING_ID) or schema.filing_id_of(m.id)): str(m.meta.get(schema.INDEX_RUN) or "")
        for m in markers
    }
    fids = sorted(runs)
    heads = store.filter_documents(
        filters={
            "operator": "AND",
            "conditions": [
                schema.node_type_filter(schema.NodeType.FILING),
                schema.filing_filter(fids),
            ],
        }
    )
    current = {str(h.meta.get(schema.FILING_ID)): str(h.meta.get(schema.INDEX_RUN) or "") or None for h in heads}
    out = []
    for fid in fids:
        flt = _other_runs_filter(fid, current.get(fid), markers=False)
        counter = getattr(store, "count_documents_by_filter", None)
        n = int(counter(flt)) if callable(counter) else len(store.filter_documents(filters=flt))
        out.append(PendingWrite(fid, runs[fid], current.get(fid), n))
    return out


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


def stored_filings(
    store: Any,
    filing_ids: Iterable[str] = (),
    source_paths: Iterable[str] = (),
    source_sha256s: Iterable[str] = (),
) -> list[schema.FilingNode]:
    """The filing nodes in ``store`` with one of these filing ids, source paths (also matched as absolute and
    real paths) or source hashes, without their term statistics (their large fields)."""
    from haystack_fin.store_registry import filter_documents_without

    paths = {p for raw in source_paths if raw for p in (raw, os.path.abspath(raw), os.path.realpath(raw))}
    conditions: list[dict[str, Any]] = []
    for name, values in (
        (schema.FILING_ID, set(filing_ids)),
        (schema.SOURCE_PATH, paths),
        (schema.SOURCE_SHA256, set(source_sha256s)),
    ):
        ordered = sorted(v for v in values if v)
        for start in range(0, len(ordered), _IN_BATCH):
            conditions.append({"field": f"meta.{name}", "operator": "in", "value": ordered[start : start + _IN_BATCH]})
    if not conditions:
        return []
    flt = {
        "operator": "AND",
        "conditions": [schema.node_type_filter(schema.NodeType.FILING), {"operator": "OR", "conditions": conditions}],
    }
    return [schema.FilingNode.from_meta(d.meta) for d in filter_documents_without(store, flt, schema.FLAM_STATISTICS)]
