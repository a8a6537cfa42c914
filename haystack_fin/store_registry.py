"""One document store instance per store configuration and process.

Qdrant's embedded mode allows a single client per folder and process, but every component of a YAML pipeline
deserializes its own ``QdrantDocumentStore``. Components that read the index call ``shared_store(self.document_store)``
in ``warm_up`` and use the returned instance, so a query pipeline with several store-holding components opens the
folder once.
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
