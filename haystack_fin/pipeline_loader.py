"""Load the shipped YAML pipelines with the store pointed where the user wants it.

The YAML files in ``pipelines/`` are plain Haystack YAML (``Pipeline.load`` works on them with
``allowed_modules=["haystack_fin"]``). The CLI only rewrites the document store's location: a local path
(embedded Qdrant, the default) or a Qdrant server URL. Nothing else differs between one machine and a cluster.
"""

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from haystack import Pipeline

from haystack_fin.store_check import store_nodes

ALLOWED_MODULES = ["haystack_fin"]


def pipelines_dir() -> Path:
    """The folder holding the shipped YAML: inside the wheel, or the repository's ``pipelines/``."""
    packaged = Path(__file__).parent / "pipelines"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "pipelines"


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


def _rewrite_stores(data: dict[str, Any], params: dict[str, Any]) -> None:
    for node in store_nodes(data):
        init = node.setdefault("init_parameters", {})
        init.update({k: v for k, v in params.items() if v is not None})
        for key in ("path", "url", "location"):
            if key in params and params[key] is None:
                init.pop(key, None)


def pipeline_dict(
    name_or_path: str, store_path: str | None = None, qdrant_url: str | None = None, index: str | None = None
) -> dict[str, Any]:
    """The pipeline's dict form with every QdrantDocumentStore pointed at ``store_path`` or ``qdrant_url``."""
    path = Path(name_or_path)
    if not path.suffix:
        path = pipelines_dir() / f"{name_or_path}.yaml"
    data = yaml.safe_load(path.read_text())
    params = _store_params(store_path, qdrant_url, index)
    if params:
        _rewrite_stores(data, params)
    return data


def indexing_store(store_path: str | None = None, qdrant_url: str | None = None, index: str | None = None) -> Any:
    """The document store the shipped indexing pipeline writes to, with the location overridden (unconnected)."""
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    data = pipeline_dict("indexing", store_path, qdrant_url, index)
    return QdrantDocumentStore.from_dict(data["components"]["writer"]["init_parameters"]["document_store"])


GENERATION_COMPONENTS = ("prompt_builder", "llm", "answer_builder")


def strip_generation(data: dict[str, Any]) -> dict[str, Any]:
    """The query pipeline without its prompt, LLM and answer components: retrieval only (no Ollama needed)."""
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
) -> Pipeline:
    """Load a shipped pipeline ("indexing", "query") or a YAML file, with the store location overridden and an
    optional ``transform`` of its dict form (e.g. ``strip_generation``)."""
    data = pipeline_dict(name_or_path, store_path, qdrant_url, index)
    return Pipeline.from_dict(transform(data) if transform else data, allowed_modules=ALLOWED_MODULES)
