"""Store checks run before any parsing or querying, so that a bad ``--store`` fails at once, in one line that names
the store, instead of after a filing was parsed and embedded (and with the filing blamed).

One check function per store kind (``check_qdrant_edge`` for ``QdrantEdgeDocumentStore``, the default;
``check_embedded_qdrant`` for qdrant-client local mode), chosen by the store node's type in ``check_store``. The
checks read the folder without opening a client: an embedded Qdrant client loads every point of every collection
before it even tries its lock, which costs seconds on a large index, and the pipeline opens its own client right
after anyway. ``connect_store`` is the authoritative check on a store
instance: it makes the client connect (and take its lock) before any filing is parsed.

No Haystack import at module level: the CLI imports this module on every command.
"""

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Haystack's keyword logging style without importing Haystack (see above).
from haystack_fin.core.log import get_logger

logger = get_logger(__name__)

QDRANT_STORE_TYPE = "haystack_integrations.document_stores.qdrant.document_store.QdrantDocumentStore"
EDGE_STORE_TYPE = "haystack_fin.document_stores.qdrant_edge.document_store.QdrantEdgeDocumentStore"
STORE_TYPES = (EDGE_STORE_TYPE, QDRANT_STORE_TYPE)
IN_USE = (
    "in use by another process (embedded Qdrant allows one client per folder; use a Qdrant server for "
    "concurrent access)"
)
NO_SUCH_STORE = "no such store"
IS_A_FILE = "is a file"
# qdrant-client's RuntimeError when a second client opens a locked folder (qdrant_client/local/qdrant_local.py)
_QDRANT_LOCKED = "already accessed by another instance of Qdrant client"
_QDRANT_META = "meta.json"  # qdrant-client local mode: collection configs; the points live in collection/<name>/
_QDRANT_DEFAULT_INDEX = "Document"  # QdrantDocumentStore's defaults, for a pipeline dict that leaves them out
_QDRANT_DEFAULT_DIM = 768
# Qdrant Edge store layout (document_stores/qdrant_edge/document_store.py): <path>/<index>/ is one shard.
_EDGE_CONFIG = "edge_config.json"
_EDGE_STORE_FILE = "haystack_fin_store.json"
_EDGE_SCHEMA_VERSION = 1
_EDGE_DEFAULT_INDEX = "haystack_fin"
_EDGE_DEFAULT_DIM = 384
LOCAL_MODE_FOLDER = (
    "not a haystack-fin Edge store (written by qdrant-client local mode or an older haystack-fin): re-index with "
    "`haystack-fin index ... --store NEW`, or pass --store-backend local"
)


class StoreError(Exception):
    """A store that cannot be used; ``str()`` is the one line the CLI prints after ``error: ``."""

    def __init__(self, store: str, problem: str) -> None:
        super().__init__(f"{store}: {problem}")
        self.store = store
        self.problem = problem


def error_line(exc: BaseException) -> str:
    """One line describing an exception: a pipeline error by its cause, the first line of a long message."""
    from_pipeline = type(exc).__name__ == "PipelineRuntimeError" and exc.__cause__ is not None
    cause = exc.__cause__ if from_pipeline else exc
    text = str(cause).strip()
    first = text.splitlines()[0] if text else ""
    if isinstance(cause, StoreError):
        return first
    return f"{type(cause).__name__}: {first}" if first else type(cause).__name__


def store_nodes(pipeline_data: Any, store_types: str | tuple[str, ...] = STORE_TYPES) -> Iterator[dict[str, Any]]:
    """Every ``{"type": <one of store_types>, "init_parameters": ...}`` dict nested in a pipeline dict, as the dict
    itself (so a caller may edit it in place). YAML anchors give one dict in several places; it is yielded each
    time."""
    types = (store_types,) if isinstance(store_types, str) else store_types
    stack = [pipeline_data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") in types:
                yield node
                continue
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def qdrant_store_params(pipeline_data: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(type, init_parameters)`` of every store node in a pipeline dict, each distinct configuration once."""
    seen: set[str] = set()
    for node in store_nodes(pipeline_data):
        params = node.get("init_parameters") or {}
        key = json.dumps([node["type"], params], sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            yield node["type"], params


def check_pipeline_stores(pipeline_data: dict[str, Any], label: str, *, create: bool) -> None:
    """``check_store`` on every store of a pipeline dict; ``label`` is how the user named the store."""
    for store_type, params in qdrant_store_params(pipeline_data):
        check_store(params, label, create=create, store_type=store_type)


def check_store(params: dict[str, Any], label: str, *, create: bool, store_type: str = QDRANT_STORE_TYPE) -> None:
    """Check one store configuration of ``store_type`` (QdrantEdgeDocumentStore or QdrantDocumentStore). A server
    (``url``/``host``) or ``:memory:`` has nothing to check on disk: a server that is down fails at its first
    request with the client's own error.

    :param create: the caller may create the store (indexing); otherwise it must exist and hold the collection.
    :raises StoreError: naming ``label``.
    """
    if store_type == EDGE_STORE_TYPE:
        check_qdrant_edge(
            Path(str(params.get("path") or ".")).expanduser(),
            label,
            index=str(params.get("index") or _EDGE_DEFAULT_INDEX),
            embedding_dim=int(params.get("embedding_dim") or _EDGE_DEFAULT_DIM),
            create=create,
        )
    elif params.get("path"):
        check_embedded_qdrant(
            Path(str(params["path"])).expanduser(),
            label,
            index=str(params.get("index") or _QDRANT_DEFAULT_INDEX),
            embedding_dim=int(params.get("embedding_dim") or _QDRANT_DEFAULT_DIM),
            create=create,
        )


def check_embedded_qdrant(path: Path, label: str, *, index: str, embedding_dim: int, create: bool) -> None:
    """An embedded Qdrant folder (qdrant-client local mode, ``QdrantDocumentStore(path=...)``): is a folder, holds
    qdrant-client's ``meta.json``, is not locked by another client, and its collection ``index`` has vectors of
    ``embedding_dim``. With ``create``, a missing folder, an empty folder or a missing collection is fine (the
    store creates them). Reads only: nothing is created or locked for longer than the probe."""
    if not _check_location(path, label, create=create):
        return
    meta_path = path / _QDRANT_META
    if not meta_path.is_file():
        try:
            empty = not any(path.iterdir())
        except OSError as exc:
            raise StoreError(label, f"cannot be read ({exc.strerror or exc})") from exc
        if empty and create:
            return
        why = "empty folder" if empty else f"no {_QDRANT_META}: not an embedded Qdrant folder"
        raise StoreError(label, f"not a haystack-fin store ({why})")
    try:
        meta = json.loads(meta_path.read_text())
        collections = meta["collections"]
        aliases = meta.get("aliases") or {}
        if not isinstance(collections, dict) or not isinstance(aliases, dict):
            raise TypeError("collections is not a mapping")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StoreError(label, f"not a haystack-fin store (unreadable {_QDRANT_META}: {error_line(exc)})") from exc
    if _locked(path / ".lock"):
        raise StoreError(label, IN_USE)
    name = aliases.get(index, index)
    if name not in collections:
        if create:
            return
        held = ", ".join(repr(c) for c in sorted(collections)) or "none"
        raise StoreError(label, f"not a haystack-fin store (no collection {index!r}; collections: {held})")
    size = _vector_size(collections[name])
    if size != embedding_dim:
        raise StoreError(
            label,
            f"not a haystack-fin store (collection {index!r} has vectors of size {size}, the pipeline's "
            f"embedder makes {embedding_dim})",
        )


def _check_location(path: Path, label: str, *, create: bool) -> bool:
    """The checks every embedded store shares; returns whether ``path`` exists (it is then a folder)."""
    if path.exists() and not path.is_dir():
        raise StoreError(label, IS_A_FILE)
    if path.exists():
        return True
    if not create:
        raise StoreError(label, NO_SUCH_STORE)
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise StoreError(label, f"cannot be created ({parent} is a file)")
            break
    return False


def check_qdrant_edge(path: Path, label: str, *, index: str, embedding_dim: int, create: bool) -> None:
    """A Qdrant Edge store folder (``QdrantEdgeDocumentStore(path=...)``): ``<path>/<index>/`` is a shard with
    haystack-fin's store file of the current format and vectors of ``embedding_dim``, whose WAL no other store
    holds. A folder of qdrant-client local mode (``meta.json``: what haystack-fin wrote before Edge) gets the
    re-index line. With ``create``, a missing or empty folder or a missing shard in a folder of Edge shards is
    fine (the store creates them). Reads only; the lock probe is released at once."""
    if not _check_location(path, label, create=create):
        return
    if (path / _QDRANT_META).is_file() or (path / "collection").is_dir():
        raise StoreError(label, LOCAL_MODE_FOLDER)
    try:
        entries = list(path.iterdir())
    except OSError as exc:
        raise StoreError(label, f"cannot be read ({exc.strerror or exc})") from exc
    shard = path / index
    if not (shard / _EDGE_CONFIG).is_file():
        shards = sorted(p.name for p in entries if (p / _EDGE_CONFIG).is_file())
        if create and (shards or not entries):
            return
        if shards:
            held = ", ".join(repr(s) for s in shards)
            raise StoreError(label, f"not a haystack-fin store (no collection {index!r}; collections: {held})")
        why = "empty folder" if not entries else f"no {index}/{_EDGE_CONFIG}: not a Qdrant Edge folder"
        raise StoreError(label, f"not a haystack-fin store ({why})")
    try:
        record = json.loads((shard / _EDGE_STORE_FILE).read_text(encoding="utf-8"))
        if not isinstance(record, dict):
            raise TypeError("not a JSON object")
    except FileNotFoundError as exc:
        raise StoreError(label, f"not a haystack-fin store (a Qdrant Edge shard without {_EDGE_STORE_FILE})") from exc
    except (OSError, ValueError, TypeError) as exc:
        raise StoreError(label, f"not a haystack-fin store (unreadable {_EDGE_STORE_FILE}: {error_line(exc)})") from exc
    version = record.get("schema_version")
    if version != _EDGE_SCHEMA_VERSION:
        raise StoreError(
            label,
            f"written in store format {version!r} by {record.get('created_by') or 'an unknown writer'}, this "
            f"haystack-fin reads format {_EDGE_SCHEMA_VERSION}: re-index with `haystack-fin index ... --store NEW`",
        )
    if _wal_locked(shard / "wal"):
        raise StoreError(label, IN_USE)
    size = record.get("embedding_dim")
    if size != embedding_dim:
        raise StoreError(
            label,
            f"not a haystack-fin store (collection {index!r} has vectors of size {size}, the pipeline's "
            f"embedder makes {embedding_dim})",
        )


def _wal_locked(wal_dir: Path) -> bool:
    """Whether an open Qdrant Edge shard holds ``wal_dir``: an open shard keeps an exclusive flock on its WAL
    folder (seen in /proc/locks with qdrant-edge-py 0.9.0). Probe with a non-blocking flock and release it at once;
    as with ``_locked``, a store of this same process counts as a holder."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): the store's own open reports the lock
        return False
    try:
        fd = os.open(wal_dir, os.O_RDONLY)
    except OSError as exc:
        logger.debug("cannot open {path} to probe its lock: {error}", path=wal_dir, error=exc)
        return False  # a shard without a WAL folder fails at its own open with a clear message
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _vector_size(config: Any) -> int | None:
    """The dense vector size of a collection config as qdrant-client writes it to meta.json: ``vectors`` is one
    VectorParams (``{"size": ...}``) or named ones (``{"text-dense": {"size": ...}}`` with sparse embeddings)."""
    vectors = config.get("vectors") if isinstance(config, dict) else None
    if isinstance(vectors, dict) and "size" in vectors:
        return int(vectors["size"])
    if isinstance(vectors, dict):
        sizes = [int(v["size"]) for v in vectors.values() if isinstance(v, dict) and "size" in v]
        if sizes:
            return sizes[0]
    return None


def _locked(lock_path: Path) -> bool:
    """Whether another client holds the folder: try qdrant-client's own lock (portalocker, exclusive,
    non-blocking) and release it at once. An flock conflicts across open files, so a client of this same process
    counts as a holder too, as it would for the pipeline's client."""
    if not lock_path.exists():
        return False  # qdrant-client creates .lock when it takes the lock; nobody holds it yet
    import portalocker

    try:
        fp = open(lock_path, "rb")  # noqa: SIM115 - closed in the finally below, after the unlock
    except OSError as exc:
        logger.debug("cannot open {path} to probe its lock: {error}", path=lock_path, error=exc)
        return False  # the client's own open will fail with a clear OSError
    try:
        portalocker.lock(fp, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
    except portalocker.exceptions.LockException:
        return True
    else:
        portalocker.unlock(fp)
        return False
    finally:
        fp.close()


def store_label(store: Any) -> str:
    """How to name a store instance in an error: its folder or URL."""
    try:
        params = store.to_dict().get("init_parameters", {})
    except Exception:
        return type(store).__name__
    return str(params.get("path") or params.get("url") or params.get("location") or type(store).__name__)


def connect_store(store: Any, label: str | None = None) -> None:
    """Make a store connect now: an embedded store opens its client or shard (and takes its folder lock) lazily at
    the first operation, which would otherwise be the first write, after a whole filing was parsed and embedded.

    :raises StoreError: the folder is held by another client, or its collection has another vector size.
    """
    if store is None or not hasattr(store, "count_documents"):
        return
    try:
        store.count_documents()
    except Exception as exc:
        problem = _connect_problem(exc)
        if problem is None:
            raise
        raise StoreError(label or store_label(store), problem) from exc


def _connect_problem(exc: Exception) -> str | None:
    """The StoreError problem for a store's error on first use, None for an error that is not about the store.
    Matched by class name and text: this module imports neither qdrant-client nor the Edge store."""
    name, text = type(exc).__name__, str(exc)
    if name == "QdrantEdgeStoreLockedError" or (isinstance(exc, RuntimeError) and _QDRANT_LOCKED in text):
        return IN_USE
    if name == "QdrantEdgeStoreError":  # wrong dimension, old format: its message says how to re-index
        return f"not a haystack-fin store ({error_line(exc)})"
    if isinstance(exc, ValueError) and "vector size" in text:  # QdrantDocumentStore: "... vector size '4' ..."
        return f"not a haystack-fin store ({error_line(exc)})"
    return None
