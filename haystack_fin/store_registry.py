"""One document store instance per store configuration and process.

Both embedded stores allow a single open store per folder (Qdrant Edge: the shard's WAL lock, also within one
process; qdrant-client local mode: its ``.lock``), but every component of a YAML pipeline deserializes its own
``QdrantEdgeDocumentStore`` / ``QdrantDocumentStore``. Components that read the index call
``shared_store(self.document_store)`` in ``warm_up`` and use the returned instance, so a query pipeline with several
store-holding components opens the folder once.

The key is the whole configuration, not the folder: two configurations of one folder (say, one with
``return_embedding=False``) must not silently share an instance that returns what only one of them asked for; the
second one's open fails with the store's one-line "in use" error instead.
"""

import json
import threading
from typing import Any

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
    if shared is not None and hasattr(shared, "close"):
        shared.close()


class SharedStoreClient:
    """Base of the components that read through the shared instance of ``self.document_store``.

    ``_attach_store()`` (in ``warm_up``) binds the instance once; ``close()``, which ``Pipeline.close()`` calls,
    releases it, and a later run attaches again.
    """

    document_store: Any
    _store: Any = None

    def _attach_store(self) -> Any:
        if self._store is None:
            self._store = shared_store(self.document_store)
        return self._store

    def close(self) -> None:
        """Release the shared store instance (an embedded folder admits one open store); ``Pipeline.close()``
        calls this. A later run attaches again."""
        if self._store is not None:
            release_store(self.document_store)
            self._store = None
