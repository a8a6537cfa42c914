"""Load the shipped YAML pipelines with the store pointed where the user wants it.

The YAML files in ``pipelines/`` are plain Haystack YAML (``Pipeline.load`` works on them with
``allowed_modules=["haystack_fin"]``). The CLI only rewrites the document store's location and kind: a local
folder (``QdrantEdgeDocumentStore``, the shipped default; or qdrant-client local mode with ``backend="local"``) or a
Qdrant server URL (``QdrantDocumentStore(url=...)``). Nothing else differs between one machine and a cluster.
"""

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml
from haystack import Pipeline

from haystack_fin import pipelines_dir
from haystack_fin.document_stores.qdrant_edge.document_store import DEFAULT_PAYLOAD_INDEXES
from haystack_fin.store_check import EDGE_STORE_TYPE, QDRANT_STORE_TYPE, store_nodes

ALLOWED_MODULES = ["haystack_fin"]
_C = TypeVar("_C")
# "edge": QdrantEdgeDocumentStore, "local": qdrant-client local mode (QdrantDocumentStore(path=...)); None keeps
# the YAML's store type. The environment variable lets the CLI's --store-backend reach indexing worker processes
# and the evaluation runner without threading a parameter through every call.
BACKEND_ENV = "HAYSTACK_FIN_STORE_BACKEND"
BACKENDS = {"edge": EDGE_STORE_TYPE, "local": QDRANT_STORE_TYPE}
# Init parameters each store type accepts beyond the location; the others are dropped when a node changes type
# (QdrantDocumentStore's payload_fields_to_index has another shape than Edge's payload_indexes).
_EDGE_PARAMS = frozenset(
    {
        "path",
        "index",
        "embedding_dim",
        "similarity",
        "payload_indexes",
        "return_embedding",
        "recreate_index",
        "write_batch_size",
        "progress_bar",
        "memory",
        "hnsw_m",
    }
)
# A Qdrant server keeps its default HNSW (built in the background; scale-out settings: docs/design.md).
_EDGE_ONLY_PARAMS = frozenset({"payload_indexes", "memory", "hnsw_m"})
# A Qdrant server gets the payload indexes the Edge store creates with its shard (``DEFAULT_PAYLOAD_INDEXES``): the
# retriever loads a filing by ``filing_id`` and scope reads the ``node_type == "filing"`` nodes, and without a
# keyword index each of those filters scans the whole collection. Created with the collection (qdrant-haystack
# only creates them then), so an older server collection needs re-indexing or ``create_payload_index`` by hand.
SERVER_PAYLOAD_INDEXES: list[dict[str, str]] = [
    {"field_name": f"meta.{name}", "field_schema": "keyword"} for name in DEFAULT_PAYLOAD_INDEXES
]


def _store_params(store_path: str | None, qdrant_url: str | None, index: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if qdrant_url:
        params.update({"url": qdrant_url, "path": None, "location": None})
        if os.environ.get("QDRANT_API_KEY"):
            params["api_key"] = {"type": "env_var", "env_vars": ["QDRANT_API_KEY"], "strict": True}
    elif store_path:
        params.update({"path": str(Path(store_path).expanduser().resolve()), "url": None, "location": None})
    if index:
        params["index"] = index
    return params


def store_backend(backend: str | None = None) -> str | None:
    """``backend``, else the environment's ``HAYSTACK_FIN_STORE_BACKEND``; None keeps the YAML's store type.

    :raises ValueError: an unknown backend name.
    """
    chosen = backend or os.environ.get(BACKEND_ENV) or None
    if chosen is not None and chosen not in BACKENDS:
        raise ValueError(f"unknown store backend {chosen!r} (expected one of: {', '.join(BACKENDS)})")
    return chosen


def _target_type(node_type: str, qdrant_url: str | None, backend: str | None) -> str:
    if qdrant_url:
        return QDRANT_STORE_TYPE  # a server is always qdrant-client's store
    return BACKENDS[backend] if backend else node_type


def _rewrite_stores(data: dict[str, Any], params: dict[str, Any], qdrant_url: str | None, backend: str | None) -> None:
    for node in store_nodes(data):
        init = node.setdefault("init_parameters", {})
        target = _target_type(node["type"], qdrant_url, backend)
        if target != node["type"]:
            node["type"] = target
            keep = _EDGE_PARAMS if target == EDGE_STORE_TYPE else None
            for key in list(init):
                if (keep is not None and key not in keep) or (keep is None and key in _EDGE_ONLY_PARAMS):
                    init.pop(key)
        init.update({k: v for k, v in params.items() if v is not None})
        for key in ("path", "url", "location"):
            if key in params and params[key] is None:
                init.pop(key, None)
        if qdrant_url and not init.get("payload_fields_to_index"):
            init["payload_fields_to_index"] = [dict(index) for index in SERVER_PAYLOAD_INDEXES]


def pipeline_dict(
    name_or_path: str,
    store_path: str | None = None,
    qdrant_url: str | None = None,
    index: str | None = None,
    backend: str | None = None,
) -> dict[str, Any]:
    """The pipeline's dict form with every store node pointed at ``store_path`` (an Edge or local-mode folder, by
    ``backend``; see ``store_backend``) or at the server ``qdrant_url`` (a QdrantDocumentStore)."""
    path = Path(name_or_path)
    if not path.suffix:
        path = pipelines_dir() / f"{name_or_path}.yaml"
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    chosen = store_backend(backend)
    params = _store_params(store_path, qdrant_url, index)
    if params or chosen:
        _rewrite_stores(data, params, qdrant_url, chosen)
    return data


def indexing_store(
    store_path: str | None = None, qdrant_url: str | None = None, index: str | None = None, backend: str | None = None
) -> Any:
    """The document store the shipped indexing pipeline writes to, with the location overridden (unconnected)."""
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    from haystack_fin.document_stores.qdrant_edge import QdrantEdgeDocumentStore

    data = pipeline_dict("indexing", store_path, qdrant_url, index, backend)
    node = data["components"]["writer"]["init_parameters"]["document_store"]
    # An explicit map, not an import by type name: the node comes from a YAML file (Haystack's allowlist rule).
    classes: dict[str, Any] = {EDGE_STORE_TYPE: QdrantEdgeDocumentStore, QDRANT_STORE_TYPE: QdrantDocumentStore}
    if node["type"] not in classes:
        raise ValueError(f"unsupported document store type {node['type']!r} in the indexing pipeline")
    return classes[node["type"]].from_dict(node)


def load_fragment(path: str | Path) -> dict[str, Any]:
    """A pipeline fragment (YAML ``{components: {name: {init_parameters: {...}}}}``, e.g. what ``haystack-fin
    calibrate`` writes), checked for shape.

    :raises ValueError: naming the file, when it is no such mapping.
    """
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"{path}: cannot read the pipeline fragment: {err}") from None
    components = data.get("components") if isinstance(data, dict) else None
    if not isinstance(components, dict) or set(data) - {"components"}:
        raise ValueError(f"{path}: a pipeline fragment is a mapping with only 'components' (name -> init_parameters)")
    for name, node in components.items():
        if (
            not isinstance(node, dict)
            or set(node) - {"init_parameters"}
            or not isinstance(node.get("init_parameters"), dict)
        ):
            raise ValueError(f"{path}: component {name!r} of the fragment must hold only an init_parameters mapping")
    return dict(data)


def apply_fragment(data: dict[str, Any], fragment: dict[str, Any], source: str = "fragment") -> dict[str, Any]:
    """``data`` with the fragment's init parameters set on its components (a copy; ``data`` is not changed).

    :raises ValueError: the fragment names a component the pipeline lacks.
    """
    out = copy.deepcopy(data)
    for name, node in fragment["components"].items():
        if name not in out["components"]:
            raise ValueError(
                f"{source}: the pipeline has no component {name!r} (it has {', '.join(out['components'])})"
            )
        out["components"][name].setdefault("init_parameters", {}).update(copy.deepcopy(node["init_parameters"]))
    return out


GENERATION_COMPONENTS = ("gate", "prompt_builder", "llm", "answer_builder", "checker")


def strip_generation(data: dict[str, Any]) -> dict[str, Any]:
    """The query pipeline without its gate, prompt, LLM, answer and checker components: retrieval only (no Ollama
    needed)."""
    return drop_components(data, GENERATION_COMPONENTS)


def drop_components(data: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """Remove components and every connection that touches them from a pipeline dict."""
    data = dict(data)
    data["components"] = {k: v for k, v in data["components"].items() if k not in names}
    data["connections"] = [
        c
        for c in data.get("connections", [])
        if c["sender"].split(".")[0] not in names and c["receiver"].split(".")[0] not in names
    ]
    return data


def load_pipeline(
    name_or_path: str,
    store_path: str | None = None,
    qdrant_url: str | None = None,
    index: str | None = None,
    transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    backend: str | None = None,
) -> Pipeline:
    """Load a shipped pipeline ("indexing", "query") or a YAML file, with the store location (and kind, see
    ``pipeline_dict``) overridden and an optional ``transform`` of its dict form (e.g. ``strip_generation``)."""
    data = pipeline_dict(name_or_path, store_path, qdrant_url, index, backend)
    return Pipeline.from_dict(transform(data) if transform else data, allowed_modules=ALLOWED_MODULES)


def component_as(pipe: Pipeline, name: str, kind: type[_C]) -> _C:
    """``pipe.get_component(name)`` as the class the YAML names: Haystack returns its ``Component`` protocol, which
    has none of our components' own methods (``preload``, ``score_candidates``, ...). ``kind`` only types the result;
    nothing is checked at run time."""
    return cast(_C, pipe.get_component(name))
