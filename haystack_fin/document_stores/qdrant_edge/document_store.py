"""A Haystack DocumentStore over Qdrant Edge: Qdrant's Rust engine in-process (on-disk segments, payload indexes,
HNSW), no server.

Layout on disk: ``<path>/<index>/`` is one Edge shard (``edge_config.json``, ``segments/``, ``wal/``) plus
``haystack_fin_store.json`` (schema version, vector size, similarity, payload indexes), which is checked on open so
a wrong ``embedding_dim`` or an index written by an older format fails with a message that says how to re-index.

Qdrant Edge verified facts this module relies on (qdrant-edge-py 0.9.0):
- ``EdgeShard.create`` fails on a folder that holds segments; ``EdgeShard.load`` fails on a missing folder.
- An open shard holds a lock on its WAL: a second ``load`` of the same folder, in this process or another, fails
  with ``failed to open WAL ... WouldBlock`` until the first is closed (here: ``QdrantEdgeStoreLockedError``).
- Cosine collections store unit-normalized vectors, so ``return_embedding`` hands back normalized vectors.
- Updates are durable once ``update`` returns (WAL): a process killed without ``flush``/``close`` loses nothing.
- Optimizers run only when ``optimize()`` is called (no background threads): writes land in an appendable segment
  searched by brute force with payload indexes; ``optimize()`` builds HNSW (minutes for 50k x 384 on 2 cores).
- ``HnswIndexConfig(m=0, ...)`` builds no graph: ``optimize()`` of 200k x 384 took 2.5 s against 221 s at Qdrant's
  default m=16. A config given to ``EdgeShard.load`` is persisted in ``edge_config.json`` and used by the next
  ``optimize()``.
- Vectors and payload are memory-mapped. Their default placement, ``Memory.Cached``, reads every page of them into
  the process on open (measured: 1.3 GB resident right after opening a 637k-point, 1.9 GB shard), so memory grows
  with the store; ``Memory.Cold`` maps them without reading, and only the pages a query touches become resident.
  The placement may change when a shard is loaded.
"""

import json
import os
import shutil
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from math import exp
from pathlib import Path
from typing import Any, ClassVar, Literal

import qdrant_edge as qe
from haystack import Document, default_from_dict, default_to_dict, logging
from haystack.document_stores.errors import DocumentStoreError, DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from tqdm import tqdm

import haystack_fin
from haystack_fin.core import schema
from haystack_fin.core.validation import check_int
from haystack_fin.document_stores.qdrant_edge.converters import convert_id, document_to_point, point_to_document
from haystack_fin.document_stores.qdrant_edge.filters import convert_filters, field_key, match_all

logger = logging.getLogger(__name__)

STORE_FILE = "haystack_fin_store.json"
SCHEMA_VERSION = 1
DEFAULT_PAYLOAD_INDEXES: tuple[str, ...] = (schema.FILING_ID, schema.NODE_TYPE, schema.ITEM, schema.MODALITY)
_SCROLL_PAGE = 1024


class QdrantEdgeStoreError(DocumentStoreError):
    """The store folder cannot be used as configured (wrong dimension, old format, foreign folder, ...)."""


class QdrantEdgeStoreLockedError(QdrantEdgeStoreError):
    """Another open store (in this or another process) holds the shard."""


class QdrantEdgeDocumentStore:
    """Haystack DocumentStore on a Qdrant Edge shard in a local folder.

    Same payload, point ids and filter syntax as ``QdrantDocumentStore``; unlike qdrant-client's local mode (pure
    Python, whole collection in memory, filters by scanning) it filters through payload indexes on disk.

    One open store per folder: a second store on the same folder (another process, or another instance here) gets
    ``QdrantEdgeStoreLockedError`` until the first calls ``close()``.

    Usage example:
    ```python
    from haystack import Document
    from haystack_fin.document_stores.qdrant_edge.document_store import QdrantEdgeDocumentStore

    store = QdrantEdgeDocumentStore(path="./fin-index", embedding_dim=384, return_embedding=True)
    doc = Document(content="Revenue grew 4%", meta={"filing_id": "BBY_2023_10Q"}, embedding=[0.1] * 384)
    store.write_documents([doc])
    store.filter_documents({"field": "meta.filing_id", "operator": "==", "value": "BBY_2023_10Q"})
    store.close()
    ```
    """

    MEMORY: ClassVar[dict[str, qe.Memory]] = {"cold": qe.Memory.Cold, "cached": qe.Memory.Cached}
    SIMILARITY: ClassVar[dict[str, qe.Distance]] = {
        "cosine": qe.Distance.Cosine,
        "dot_product": qe.Distance.Dot,
        "l2": qe.Distance.Euclid,
    }

    def __init__(
        self,
        path: str,
        index: str = "haystack_fin",
        embedding_dim: int = 384,
        similarity: Literal["cosine", "dot_product", "l2"] = "cosine",
        payload_indexes: list[str] | None = None,
        return_embedding: bool = False,
        recreate_index: bool = False,
        write_batch_size: int = 256,
        progress_bar: bool = False,
        memory: Literal["cold", "cached"] = "cold",
        hnsw_m: int | None = None,
    ) -> None:
        """
        :param path: folder that holds the store's shards (created on first use).
        :param index: shard name, a sub-folder of ``path`` (Edge has one collection per shard).
        :param embedding_dim: vector size; fixed when the shard is created.
        :param similarity: ``cosine``, ``dot_product`` or ``l2``; fixed when the shard is created.
        :param payload_indexes: meta fields (names without ``meta.``; a leading ``meta.`` is accepted) that get a
            keyword payload index, created with the shard and added on open when missing. Default: filing_id,
            node_type, item, modality.
        :param return_embedding: whether ``filter_documents``/``get_documents_by_id`` return vectors (for cosine:
            unit-normalized). Queries decide per call.
        :param recreate_index: delete and recreate the shard the first time this instance opens it.
        :param write_batch_size: points per Edge update call.
        :param progress_bar: show a progress bar while writing.
        :param memory: placement of the vectors and payload: ``cold`` (memory-mapped, read on first access: memory
            follows what queries touch, not the store's size) or ``cached`` (read into memory when the store opens:
            faster first queries, memory grows with the store). Applied on every open, so it can be changed.
        :param hnsw_m: edges per node of the HNSW graph that ``optimize()`` builds over all vectors; ``0`` builds
            none, so ``optimize()`` only merges segments (seconds where a graph takes hours for millions of
            vectors), filtered searches use the payload indexes as before, and an unfiltered k-NN scans every
            vector. ``None`` keeps the shard's setting (a new shard: Qdrant's default, 16). haystack-fin's own
            pipelines set 0: their only search across filings reads one vector per filing first
            (``FilingScope``'s ``unscoped_candidate_filings``). Recorded in the shard; a change applies to the
            segments built afterwards.
        """
        if memory not in self.MEMORY:
            raise ValueError(f"memory must be one of {sorted(self.MEMORY)}, got {memory!r}")
        if similarity not in self.SIMILARITY:
            raise ValueError(f"similarity must be one of {sorted(self.SIMILARITY)}, got {similarity!r}")
        check_int("embedding_dim", embedding_dim)
        if not isinstance(index, str) or not index or "/" in index or index in (".", ".."):
            raise ValueError(f"index must be a folder name, got {index!r}")
        check_int("write_batch_size", write_batch_size)
        check_int("hnsw_m", hnsw_m, 0, optional=True)
        if not isinstance(payload_indexes, list | None) or not all(
            isinstance(name, str) and name for name in payload_indexes or []
        ):
            raise ValueError(f"payload_indexes must be a list of meta field names, got {payload_indexes!r}")
        self.path = str(path)
        self.index = index
        self.embedding_dim = embedding_dim
        self.similarity = similarity
        self.payload_indexes = list(DEFAULT_PAYLOAD_INDEXES if payload_indexes is None else payload_indexes)
        self.return_embedding = return_embedding
        self.recreate_index = recreate_index
        self.write_batch_size = write_batch_size
        self.progress_bar = progress_bar
        self.memory = memory
        self.hnsw_m = hnsw_m
        # Nothing touches the disk before first use: pipelines deserialize stores they may never open.
        self._shard: qe.EdgeShard | None = None
        self._recreated = False
        self._open_lock = threading.Lock()

    # -- location and lifecycle -------------------------------------------------------------------------------------
    @property
    def shard_path(self) -> Path:
        return Path(self.path) / self.index

    @property
    def _store_file(self) -> Path:
        return self.shard_path / STORE_FILE

    def _index_keys(self) -> list[str]:
        return [name if name.startswith("meta.") else f"meta.{name}" for name in self.payload_indexes]

    def _store_record(self) -> dict[str, Any]:
        # Payload indexes are not recorded: the shard's own payload schema is the truth, and it grows on open.
        return {
            "schema_version": SCHEMA_VERSION,
            "embedding_dim": self.embedding_dim,
            "similarity": self.similarity,
            "created_by": f"haystack-fin {haystack_fin.__version__}",
        }

    def _reindex_hint(self) -> str:
        return (
            f"re-index into a new folder, or delete {self.shard_path} (or open it once with recreate_index=True) "
            "and index again"
        )

    def _shard_or_open(self) -> qe.EdgeShard:
        shard = self._shard
        if shard is not None:
            return shard
        with self._open_lock:
            if self._shard is None:
                self._shard = self._open()
            return self._shard

    def _open(self) -> qe.EdgeShard:
        shard_dir = self.shard_path
        if self.recreate_index and not self._recreated:
            self._delete_shard_folder(shard_dir)
            self._recreated = True
        if (shard_dir / "edge_config.json").exists():
            self._check_store_file()
            shard: qe.EdgeShard = self._edge_call(
                lambda: qe.EdgeShard.load(str(shard_dir), self._edge_config()), "open"
            )
            self._ensure_payload_indexes(shard)
            return shard
        if (Path(self.path) / "meta.json").is_file():
            # qdrant-client local mode's folder (haystack-fin's store before Edge): a shard created inside it would
            # look like an empty index next to the user's data.
            raise QdrantEdgeStoreError(
                f"{self.path}: a qdrant-client local-mode store (written by an older haystack-fin), not a Qdrant "
                "Edge store: re-index into a new folder, or open it with QdrantDocumentStore(path=...)"
            )
        shard_dir.mkdir(parents=True, exist_ok=True)
        config = self._edge_config()
        shard = self._edge_call(lambda: qe.EdgeShard.create(str(shard_dir), config), "create")
        self._ensure_payload_indexes(shard)
        tmp = shard_dir / f".{STORE_FILE}.tmp"
        tmp.write_text(json.dumps(self._store_record(), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self._store_file)  # atomic: a crash never leaves a half-written store file
        logger.info(
            "created Qdrant Edge shard {shard} (dim {dim}, {similarity})",
            shard=shard_dir,
            dim=self.embedding_dim,
            similarity=self.similarity,
        )
        return shard

    def _edge_config(self) -> qe.EdgeConfig:
        memory = self.MEMORY[self.memory]
        vectors = qe.EdgeVectorParams(size=self.embedding_dim, distance=self.SIMILARITY[self.similarity], memory=memory)
        hnsw = None
        if self.hnsw_m is not None:
            # ef_construct and full_scan_threshold are Qdrant's defaults; Edge wants all three together.
            hnsw = qe.HnswIndexConfig(m=self.hnsw_m, ef_construct=100, full_scan_threshold=10_000)
        return qe.EdgeConfig(vectors=vectors, payload_memory=memory, hnsw_config=hnsw)

    def _delete_shard_folder(self, shard_dir: Path) -> None:
        if not shard_dir.exists():
            return
        if not (shard_dir / STORE_FILE).exists() and not (shard_dir / "edge_config.json").exists():
            # Never rmtree a folder this store did not create (a typo in path/index must not wipe user data).
            raise QdrantEdgeStoreError(
                f"{shard_dir}: recreate_index=True, but the folder is not a Qdrant Edge store; not deleting it"
            )
        logger.info("recreate_index=True: deleting {shard}", shard=shard_dir)
        shutil.rmtree(shard_dir)

    def _check_store_file(self) -> None:
        store_file = self._store_file
        if not store_file.exists():
            raise QdrantEdgeStoreError(
                f"{store_file}: missing; {self.shard_path} is a Qdrant Edge shard not written by haystack-fin "
                f"(or its creation was interrupted): {self._reindex_hint()}"
            )
        try:
            stored = json.loads(store_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise QdrantEdgeStoreError(f"{store_file}: unreadable ({exc}): {self._reindex_hint()}") from exc
        version = stored.get("schema_version") if isinstance(stored, dict) else None
        if version != SCHEMA_VERSION:
            raise QdrantEdgeStoreError(
                f"{store_file}: the index was written in store format {version!r}, this haystack-fin reads format "
                f"{SCHEMA_VERSION}: {self._reindex_hint()}"
            )
        for key in ("embedding_dim", "similarity"):
            if stored.get(key) != getattr(self, key):
                raise QdrantEdgeStoreError(
                    f"{store_file}: the index was created with {key}={stored.get(key)!r}, but this store is "
                    f"configured with {key}={getattr(self, key)!r}: configure {key}={stored.get(key)!r} (the "
                    f"embedder that built the index), or {self._reindex_hint()}"
                )

    def _ensure_payload_indexes(self, shard: qe.EdgeShard) -> None:
        existing = set(shard.info().payload_schema)
        for key in self._index_keys():
            if key not in existing:
                shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))

    def _edge_call(self, fn: Any, what: str) -> Any:
        try:
            return fn()
        except Exception as exc:  # qdrant-edge-py raises bare Exception("Service runtime error: ...")
            message = str(exc)
            if "WouldBlock" in message:
                raise QdrantEdgeStoreLockedError(
                    f"{self.shard_path}: already open by another store (this or another process); Qdrant Edge "
                    "allows one open shard per folder: close the other store first (store.close() / "
                    "Pipeline.close()), or share one store instance"
                ) from exc
            raise QdrantEdgeStoreError(f"{self.shard_path}: cannot {what} the Qdrant Edge shard: {message}") from exc

    def close(self) -> None:
        """Flush and release the shard (and its folder lock); the store reopens lazily if used again."""
        with self._open_lock:
            shard, self._shard = self._shard, None
        if shard is not None:
            shard.flush()
            shard.close()

    def optimize(self) -> bool:
        """Merge segments and build the HNSW index (blocking; with ``hnsw_m=0`` no graph is built: seconds for
        200k points on 2 cores, against minutes for 50k with a graph).

        Not called by writes (each write would rebuild); ``indexing_runner.index_filings`` (``haystack-fin index``)
        calls it once after a batch. It turns the appendable segments that writes land in, whose id trackers and
        payload indexes are held in memory, into memory-mapped immutable ones. Filtered retrieval over the payload
        indexes is fast either way. An unfiltered k-NN reads every vector unless a graph was built (measured at
        637,222 nodes: 176-385 ms and +940 MB resident per query without, 43-95 ms and +14 MB with).

        :returns: whether anything was optimized.
        """
        return bool(self._shard_or_open().optimize())

    # -- serialization ----------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            path=self.path,
            index=self.index,
            embedding_dim=self.embedding_dim,
            similarity=self.similarity,
            payload_indexes=list(self.payload_indexes),
            return_embedding=self.return_embedding,
            recreate_index=self.recreate_index,
            write_batch_size=self.write_batch_size,
            progress_bar=self.progress_bar,
            memory=self.memory,
            hnsw_m=self.hnsw_m,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "QdrantEdgeDocumentStore":
        return default_from_dict(cls, data)

    # -- reading ----------------------------------------------------------------------------------------------------
    def count_documents(self) -> int:
        return int(self._shard_or_open().count(qe.CountRequest(exact=True)))

    def count_documents_by_filter(self, filters: dict[str, Any] | qe.Filter) -> int:
        """Number of documents that match ``filters`` (Haystack filter syntax or a native ``qdrant_edge.Filter``)."""
        return int(self._shard_or_open().count(qe.CountRequest(exact=True, filter=convert_filters(filters))))

    def filter_documents(
        self,
        filters: dict[str, Any] | qe.Filter | None = None,
        exclude_meta: Sequence[str] = (),
        include_meta: Sequence[str] = (),
    ) -> list[Document]:
        """Documents matching ``filters`` (all documents for None/{}), ordered by point id.

        Embeddings are included when the store was created with ``return_embedding=True``.

        :param exclude_meta: meta fields not to read (the Documents come back without them): a caller that needs a
            few small fields of many nodes does not read and hold their large ones.
        :param include_meta: only these meta fields are read, and neither content nor embedding (the Documents
            keep their ids): a small profile of many nodes.
        """
        with_payload: Any = True
        with_vector = self.return_embedding
        if include_meta:
            fields = ["id", *(f"meta.{name.removeprefix('meta.')}" for name in include_meta)]
            with_payload, with_vector = qe.PayloadSelector.Include(fields), False
        elif exclude_meta:
            with_payload = qe.PayloadSelector.Exclude([f"meta.{name.removeprefix('meta.')}" for name in exclude_meta])
        return [
            point_to_document(r, with_vector)
            for r in self._scroll(convert_filters(filters), with_payload=with_payload, with_vector=with_vector)
        ]

    def _scroll(self, flt: qe.Filter | None, with_payload: Any, with_vector: bool) -> Iterator[qe.Record]:
        shard = self._shard_or_open()
        offset = None
        while True:
            records, offset = shard.scroll(
                qe.ScrollRequest(
                    offset=offset, limit=_SCROLL_PAGE, filter=flt, with_payload=with_payload, with_vector=with_vector
                )
            )
            yield from records
            if offset is None:
                return

    def get_documents_by_id(self, ids: list[str]) -> list[Document]:
        """The stored Documents with these ids (unknown ids are skipped)."""
        if not ids:
            return []
        records = self._shard_or_open().retrieve(
            [convert_id(i) for i in dict.fromkeys(ids)], with_payload=True, with_vector=self.return_embedding
        )
        return [point_to_document(r, self.return_embedding) for r in records]

    def _query_by_embedding(
        self,
        query_embedding: list[float],
        filters: dict[str, Any] | qe.Filter | None = None,
        top_k: int = 10,
        return_embedding: bool = False,
        scale_score: bool = False,
        score_threshold: float | None = None,
    ) -> list[Document]:
        """The ``top_k`` nearest Documents to ``query_embedding`` among those matching ``filters``.

        Scores are the similarity (cosine, dot product) or the Euclidean distance (``l2``, smaller is nearer).

        :param scale_score: map scores to [0, 1] as qdrant-haystack does ((cos + 1) / 2, else a sigmoid).
        :param score_threshold: minimum similarity (for ``l2``: maximum distance).
        """
        if len(query_embedding) != self.embedding_dim:
            raise ValueError(
                f"query embedding has length {len(query_embedding)}, but {self.shard_path} holds "
                f"{self.embedding_dim}-dimensional vectors: use the embedder the index was built with"
            )
        if top_k < 1:
            return []
        points = self._shard_or_open().query(
            qe.QueryRequest(
                limit=top_k,
                query=qe.Query.Nearest([float(x) for x in query_embedding]),
                filter=convert_filters(filters),
                with_payload=True,
                with_vector=return_embedding,
                score_threshold=score_threshold,
            )
        )
        docs = [point_to_document(p, return_embedding) for p in points]
        if scale_score:
            docs = [_scaled(d, self.similarity) for d in docs]
        return docs

    # -- writing ----------------------------------------------------------------------------------------------------
    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.FAIL) -> int:
        """Write Documents; returns how many were written.

        ``FAIL`` (default) raises ``DuplicateDocumentError`` when an id is already stored, ``SKIP`` leaves stored
        ids alone, ``OVERWRITE`` and ``NONE`` upsert (as ``QdrantDocumentStore`` does). Within one call, FAIL and
        SKIP keep the first of several Documents with the same id.
        """
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise ValueError("write_documents() expects a list of Documents")
        if not documents:
            return 0
        shard = self._shard_or_open()
        if policy in (DuplicatePolicy.FAIL, DuplicatePolicy.SKIP):
            unique = list({d.id: d for d in reversed(documents)}.values())[::-1]  # first occurrence wins
            stored = self._stored_ids([d.id for d in unique])
            if stored and policy == DuplicatePolicy.FAIL:
                shown = ", ".join(sorted(stored)[:5]) + (" ..." if len(stored) > 5 else "")
                raise DuplicateDocumentError(f"{len(stored)} document(s) already exist in {self.shard_path}: {shown}")
            documents = [d for d in unique if d.id not in stored]
        points = [document_to_point(d, self.embedding_dim) for d in documents]  # validates every vector first
        with tqdm(total=len(points), disable=not self.progress_bar, desc="writing") as bar:
            for start in range(0, len(points), self.write_batch_size):
                batch = points[start : start + self.write_batch_size]
                shard.update(qe.UpdateOperation.upsert_points(batch))
                bar.update(len(batch))
        # No flush here: the WAL makes every update durable (a process killed without close() loses nothing,
        # verified), and a flush costs 0.15-0.3 s of fsync on this disk. close() flushes.
        return len(points)

    def _stored_ids(self, ids: list[str]) -> set[str]:
        by_point = {convert_id(i): i for i in ids}
        point_ids: list[int | uuid.UUID | str] = list(by_point)
        stored: set[str] = set()
        for start in range(0, len(point_ids), _SCROLL_PAGE):
            chunk = point_ids[start : start + _SCROLL_PAGE]
            for record in self._shard_or_open().retrieve(chunk, with_payload=False, with_vector=False):
                stored.add(by_point[record.id.hex if isinstance(record.id, uuid.UUID) else str(record.id)])
        return stored

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete the Documents with these ids (unknown ids are ignored)."""
        if not document_ids:
            return
        shard = self._shard_or_open()
        shard.update(qe.UpdateOperation.delete_points([convert_id(i) for i in document_ids]))

    def delete_by_filter(self, filters: dict[str, Any] | qe.Filter) -> int:
        """Delete the Documents matching ``filters``; returns how many were deleted."""
        flt = convert_filters(filters)
        shard = self._shard_or_open()
        count = int(shard.count(qe.CountRequest(exact=True, filter=flt)))
        if count:
            shard.update(qe.UpdateOperation.delete_points_by_filter(flt or match_all()))
        return count

    def delete_all_documents(self, recreate_index: bool = False) -> None:
        """Delete every Document; ``recreate_index=True`` also drops and recreates the shard (fresh segments)."""
        if recreate_index:
            self.close()
            with self._open_lock:
                self._delete_shard_folder(self.shard_path)
                self._shard = self._open()
            return
        shard = self._shard_or_open()
        shard.update(qe.UpdateOperation.delete_points_by_filter(match_all()))

    def update_by_filter(self, filters: dict[str, Any] | qe.Filter, meta: dict[str, Any]) -> int:
        """Merge ``meta`` into the meta of every Document matching ``filters``; returns how many were updated.

        ``Document.id`` is kept (it is not recomputed from the new meta).
        """
        if not isinstance(meta, dict):
            raise ValueError(f"meta must be a dict, got {type(meta).__name__}")
        flt = convert_filters(filters)
        shard = self._shard_or_open()
        count = int(shard.count(qe.CountRequest(exact=True, filter=flt)))
        if count and meta:
            shard.update(qe.UpdateOperation.set_payload_by_filter(flt or match_all(), meta, key="meta"))
        return count

    # -- metadata statistics (payload scans of one field) -----------------------------------------------------------
    def _field_values(self, field: str, filters: dict[str, Any] | qe.Filter | None = None) -> Iterator[Any]:
        """Every value of a meta field over the matching Documents (missing and null skipped)."""
        key = field_key(field if field.startswith("meta.") else f"meta.{field}")
        parts = key.split(".")
        selector = qe.PayloadSelector.Include([key])
        for record in self._scroll(convert_filters(filters), with_payload=selector, with_vector=False):
            value: Any = record.payload or {}
            for part in parts:
                value = value.get(part) if isinstance(value, dict) else None
            if value is not None:
                yield value

    def get_metadata_fields_info(self) -> dict[str, dict[str, str]]:
        """Each top-level meta field found in the store with its type (keyword, long, double, boolean, object,
        list); fields with values of several types report the first seen."""
        info: dict[str, dict[str, str]] = {}
        for record in self._scroll(None, with_payload=qe.PayloadSelector.Include(["meta"]), with_vector=False):
            for name, value in ((record.payload or {}).get("meta") or {}).items():
                if name not in info and value is not None:
                    info[name] = {"type": _value_type(value)}
        return info

    def get_metadata_field_min_max(self, metadata_field: str) -> dict[str, Any]:
        """``{"min", "max"}`` of a numeric (or string) meta field; both None when no Document has it."""
        values = [v for v in self._field_values(metadata_field) if not isinstance(v, dict | list)]
        numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        chosen: list[Any] = numbers or [v for v in values if isinstance(v, str)]
        if not chosen:
            return {"min": None, "max": None}
        return {"min": min(chosen), "max": max(chosen)}

    def get_metadata_field_unique_values(
        self,
        metadata_field: str,
        search_term: str | None = None,
        from_: int = 0,
        size: int = 10,
        filters: dict[str, Any] | qe.Filter | None = None,
    ) -> tuple[list[Any], int]:
        """Distinct values of a meta field, sorted, one page (``from_``, ``size``) plus the total number.

        Values that compare equal in Python but differ in type (1, 1.0, "1", True) stay distinct; list values
        contribute their elements. ``search_term`` keeps values whose text contains it (case-insensitive).
        """
        distinct: dict[tuple[str, str], Any] = {}
        for value in self._field_values(metadata_field, filters):
            for v in value if isinstance(value, list) else [value]:
                if v is None or isinstance(v, dict):
                    continue
                if search_term and search_term.lower() not in str(v).lower():
                    continue
                distinct.setdefault((type(v).__name__, json.dumps(v, sort_keys=True)), v)
        ordered = [distinct[k] for k in sorted(distinct, key=lambda k: (k[0], _sort_key(distinct[k])))]
        return ordered[from_ : from_ + size], len(ordered)

    def count_unique_metadata_by_filter(
        self, filters: dict[str, Any] | qe.Filter | None, metadata_fields: list[str]
    ) -> dict[str, int]:
        """Number of distinct values of each meta field over the Documents matching ``filters``."""
        counts: dict[str, int] = {}
        for field in metadata_fields:
            seen = {
                (type(v).__name__, json.dumps(v, sort_keys=True)) for v in self._field_values(field, filters or None)
            }
            counts[field.removeprefix("meta.")] = len(seen)
        return counts


def _value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    return "keyword"


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, value)
    return (1, str(value))


def _scaled(document: Document, similarity: str) -> Document:
    if document.score is None:
        return document
    if similarity == "cosine":
        return replace(document, score=(document.score + 1) / 2)
    return replace(document, score=float(1 / (1 + exp(-document.score / 100))))
