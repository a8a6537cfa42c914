"""One document store instance, and one filing cache, per store configuration and process.

Both embedded stores allow a single open store per folder (Qdrant Edge: the shard's WAL lock, also within one
process; qdrant-client local mode: its ``.lock``), but every component of a YAML pipeline deserializes its own
``QdrantEdgeDocumentStore`` / ``QdrantDocumentStore``. Components that read the index call
``shared_store(self.document_store)`` in ``warm_up`` and use the returned instance, so a query pipeline with several
store-holding components opens the folder once.

The key is the whole configuration, not the folder: two configurations of one folder (say, one with
``return_embedding=False``) must not silently share an instance that returns what only one of them asked for; the
second one's open fails with the store's one-line "in use" error instead.

``FilingCache`` (``shared_filing_cache``) is the filings those components read, by the same key: the retriever and
the graph expander of one pipeline read a cold filing from the store once and build their views (Item trees, the
entity graph) from the same entry.
"""

import inspect
import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from haystack import logging

from haystack_fin.core import schema

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_stores: dict[str, Any] = {}


def _key(store: Any) -> str:
    try:
        return json.dumps(store.to_dict(), sort_keys=True, default=str)
    except Exception:  # a store without to_dict cannot be shared by configuration
        return f"id:{id(store)}"


def shared_store(store: Any) -> Any:
    """Return the process-wide instance for ``store``'s configuration (``store`` itself the first time)."""
    key = _key(store)
    with _lock:
        return _stores.setdefault(key, store)


def release_store(store: Any) -> None:
    """Forget and close the shared instance for ``store``'s configuration (frees an embedded Qdrant folder)."""
    key = _key(store)
    with _lock:
        shared = _stores.pop(key, None)
        _caches.pop(key, None)  # the filings read through it go too (memory back; a reopened store reloads)
    if shared is not None and hasattr(shared, "close"):
        shared.close()


def filter_documents_without(store: Any, filters: dict[str, Any], exclude_meta: Sequence[str]) -> list[Any]:
    """``store.filter_documents(filters)``, leaving out the ``exclude_meta`` fields where the store can (Qdrant
    Edge); other stores return whole Documents."""
    try:
        can_exclude = "exclude_meta" in inspect.signature(store.filter_documents).parameters
    except (TypeError, ValueError):
        can_exclude = False
    if can_exclude:
        return list(store.filter_documents(filters=filters, exclude_meta=list(exclude_meta)))
    return list(store.filter_documents(filters=filters))


class SharedStoreClient:
    """Base of the components that read through the shared instance of ``self.document_store``.

    ``_attach_store()`` (in ``warm_up``) binds the instance once; ``close()``, which ``Pipeline.close()`` calls,
    releases it, and a later run attaches again.
    """

    document_store: Any
    _store: Any = None
    _filings: "FilingCache | None" = None

    def _attach_store(self) -> Any:
        if self._store is None:
            self._store = shared_store(self.document_store)
        return self._store

    def _attach_filings(self, max_filings: int) -> "FilingCache":
        """Bind the process-wide filing cache of this store configuration (bounded to at least ``max_filings``)."""
        if self._filings is None:
            self._filings = shared_filing_cache(self.document_store, max_filings)
        return self._filings

    def clear_cache(self) -> None:
        """Forget all cached filings of this store configuration, for every component sharing them (e.g. after
        re-indexing into a store without ``get_documents_by_id``)."""
        if self._filings is not None:
            self._filings.clear()

    def close(self) -> None:
        """Release the shared store instance (an embedded folder admits one open store) and its filing cache;
        ``Pipeline.close()`` calls this. A later run attaches again."""
        if self._store is not None:
            release_store(self.document_store)
            self._store = None
        self._filings = None


# -- one filing cache per store configuration ---------------------------------------------------------------------

_FILING_NODE = schema.NodeType.FILING.value
_PENDING = schema.NodeType.PENDING.value


@dataclass
class FilingEntry:
    """Every node of one filing as the store returned it, vectors apart, plus the views components built from it.

    ``docs`` are the store's Documents without ``embedding`` (384 Python floats cost ~12 KB a node); ``vectors``
    holds them as float32 rows by node id. ``views`` are what each reader derives (the retriever's Item trees, the
    expander's graph), built once per entry through ``view`` and dropped with it.
    """

    filing_id: str
    index_run: str  # the filing node's, else the first node's; "" when the index records none
    docs: list[Any]
    vectors: dict[str, np.ndarray]
    views: dict[str, Any] = field(default_factory=dict)
    # Every index_run its nodes carry: a hint from a chunk (the graph expander's) matches the entry it came from
    # even where the filing node says otherwise, so such a filing is not reloaded on every query.
    runs: frozenset[str] = frozenset()

    def view(self, key: str, build: Callable[["FilingEntry"], Any]) -> Any:
        """The view ``key`` of this filing, built by ``build(entry)`` on first use. Two threads may build it once
        each; the first stored wins."""
        found = self.views.get(key)
        if found is None:
            found = self.views.setdefault(key, build(self))
        return found


def _index_run_of(docs: list[Any]) -> str:
    for doc in docs:
        if (doc.meta or {}).get(schema.NODE_TYPE) == _FILING_NODE:
            return str(doc.meta.get(schema.INDEX_RUN) or "")
    return str((docs[0].meta or {}).get(schema.INDEX_RUN) or "") if docs else ""


def one_run(filing_id: str, docs: list[Any]) -> list[Any]:
    """The nodes of the filing node's ``index_run`` only. While a filing is re-indexed the store holds nodes of two
    runs; FilingWriter writes the filing node last, so the old run is read until the new one is complete, never a
    mix. Without a filing node (or a run on it) every node is kept, unless FilingWriter's pending marker is there:
    then the nodes are a first write that has not finished (or was interrupted), and none is kept. The marker
    itself is never kept."""
    if any((d.meta or {}).get(schema.NODE_TYPE) == _PENDING for d in docs):
        if not any((d.meta or {}).get(schema.NODE_TYPE) == _FILING_NODE for d in docs):
            logger.info("filing {filing_id}: a first write not finished, left out", filing_id=filing_id)
            return []
        docs = [d for d in docs if (d.meta or {}).get(schema.NODE_TYPE) != _PENDING]
    run = next(
        (str(d.meta.get(schema.INDEX_RUN) or "") for d in docs if (d.meta or {}).get(schema.NODE_TYPE) == _FILING_NODE),
        "",
    )
    if not run:
        return docs
    kept = [d for d in docs if (d.meta or {}).get(schema.INDEX_RUN) in (None, "", run)]
    if len(kept) < len(docs):
        logger.info(
            "filing {filing_id}: {n} nodes of another indexing run than {run} left out",
            filing_id=filing_id,
            n=len(docs) - len(kept),
            run=run,
        )
    return kept


# qdrant-haystack's point-id namespace (document_stores/qdrant_edge/converters.py, not imported: this module serves
# any store).
_POINT_ID_NAMESPACE = uuid.UUID("3896d314-1e95-4a3a-b45a-945f9f0b541d")


def _node_order(doc: Any) -> bytes:
    """A filing's nodes in one order whatever the store: that of the uuid5 point ids of their ids without the run,
    which is how the Qdrant stores returned them before ids carried the run. Readers break score ties by this
    order, so a re-indexed filing ranks as it did."""
    return uuid.uuid5(_POINT_ID_NAMESPACE, schema.without_run(str(doc.id))).bytes


class FilingCache:
    """A bounded LRU of filings loaded from one store configuration, shared by every component that reads it.

    A cold filing is read once, with one ``filter_documents`` on ``meta.filing_id`` for all the filings a call
    misses, whichever component asks first; the others find it cached. An entry is reloaded when the caller knows
    a newer ``index_run`` (a hint, or ``probe=True``: the filing nodes fetched by id, a point lookup). The bound is
    the largest ``max_filings`` any reader asked for (``resize``); views go with their entry.
    """

    def __init__(self, max_filings: int) -> None:
        self.max_filings = max_filings
        self._entries: OrderedDict[str, FilingEntry] = OrderedDict()
        self._lock = threading.Lock()

    def resize(self, max_filings: int) -> None:
        """Grow the bound to ``max_filings`` (never shrinks: another reader asked for the larger one)."""
        with self._lock:
            self.max_filings = max(self.max_filings, max_filings)

    def __contains__(self, filing_id: str) -> bool:
        with self._lock:
            return filing_id in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def cached(self, filing_id: str) -> FilingEntry | None:
        """The cached entry of ``filing_id`` without touching the store or the LRU order (None when not cached)."""
        with self._lock:
            return self._entries.get(filing_id)

    def get(
        self,
        store: Any,
        filing_ids: list[str],
        runs: dict[str, str] | None = None,
        probe: bool = False,
        trace: dict[str, Any] | None = None,
    ) -> dict[str, FilingEntry]:
        """The entries of ``filing_ids`` (filings the store does not have are left out).

        :param store: the shared store instance to read misses from.
        :param runs: filing id -> the ``index_run`` the caller knows is current; a cached entry of another run is
            reloaded.
        :param probe: for cached filings without a hint, read the filing nodes' ``index_run`` by id (stores with
            ``get_documents_by_id``) and reload the ones that changed.
        :param trace: filled with ``hits``, ``loaded``, ``stale`` (sorted ids) and ``load_seconds`` on a load.
        """
        known = {fid: run for fid, run in (runs or {}).items() if run}
        with self._lock:
            cached = {fid: self._entries[fid] for fid in filing_ids if fid in self._entries}
        # Store I/O outside the lock: a cold filing must not stall readers of cached ones. Two threads may then
        # fetch the same filing once each; the later insert wins, harmlessly.
        to_probe = [fid for fid in cached if fid not in known]
        if probe and to_probe and hasattr(store, "get_documents_by_id"):
            # Filing nodes have deterministic ids ("<filing_id>#filing"): a point lookup, not a scan.
            for node in store.get_documents_by_id([f"{fid}#filing" for fid in to_probe]):
                meta = node.meta or {}
                if meta.get(schema.FILING_ID) and meta.get(schema.INDEX_RUN):
                    known[str(meta[schema.FILING_ID])] = str(meta[schema.INDEX_RUN])
        stale = sorted(
            fid for fid, entry in cached.items() if fid in known and known[fid] not in {entry.index_run, *entry.runs}
        )
        for fid in stale:
            del cached[fid]
        missing = list(dict.fromkeys(fid for fid in filing_ids if fid not in cached))
        loaded: dict[str, FilingEntry] = {}
        if missing:
            start = time.perf_counter()
            loaded = self._fetch(store, missing)
            if trace is not None:
                trace["load_seconds"] = round(time.perf_counter() - start, 4)
        with self._lock:
            for fid in cached:
                if fid in self._entries:
                    self._entries.move_to_end(fid)
            for fid, entry in loaded.items():
                self._entries[fid] = entry
                self._entries.move_to_end(fid)
            while len(self._entries) > self.max_filings:
                self._entries.popitem(last=False)
        if trace is not None:
            trace.update(hits=sorted(cached), loaded=sorted(loaded), stale=stale)
        return {**cached, **loaded}

    @staticmethod
    def _fetch(store: Any, filing_ids: list[str]) -> dict[str, FilingEntry]:
        flt = schema.filing_filter(filing_ids[0] if len(filing_ids) == 1 else filing_ids)
        docs: dict[str, list[Any]] = {fid: [] for fid in filing_ids}
        vectors: dict[str, dict[str, np.ndarray]] = {fid: {} for fid in filing_ids}
        for doc in store.filter_documents(filters=flt):
            fid = str((doc.meta or {}).get(schema.FILING_ID))
            if doc.embedding:  # Qdrant returns {} / [] for a point stored without a vector
                vectors.setdefault(fid, {})[doc.id] = np.asarray(doc.embedding, dtype=np.float32)
            docs.setdefault(fid, []).append(replace(doc, embedding=None))
        for fid in filing_ids:
            docs[fid] = sorted(one_run(fid, docs[fid]), key=_node_order)
        return {
            fid: FilingEntry(
                fid,
                _index_run_of(docs[fid]),
                docs[fid],
                {i: v for i, v in vectors.get(fid, {}).items() if i in {d.id for d in docs[fid]}},
                runs=frozenset(
                    str(d.meta[schema.INDEX_RUN]) for d in docs[fid] if (d.meta or {}).get(schema.INDEX_RUN)
                ),
            )
            for fid in filing_ids
            if docs[fid]
        }


_caches: dict[str, FilingCache] = {}


def shared_filing_cache(store: Any, max_filings: int) -> FilingCache:
    """The process-wide filing cache of ``store``'s configuration, bounded to at least ``max_filings``."""
    key = _key(store)
    with _lock:
        cache = _caches.get(key)
        if cache is None:
            cache = _caches[key] = FilingCache(max_filings)
    cache.resize(max_filings)
    return cache
