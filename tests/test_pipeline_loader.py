"""pipeline_loader: the shipped YAML with its stores pointed at another folder or a Qdrant server."""

from pathlib import Path

import pytest
import yaml
from haystack import Pipeline
from haystack.utils import Secret
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

from haystack_fin.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from haystack_fin.pipeline_loader import (
    BACKEND_ENV,
    GENERATION_COMPONENTS,
    drop_components,
    indexing_store,
    load_pipeline,
    pipeline_dict,
    pipelines_dir,
    strip_generation,
)
from haystack_fin.store_check import EDGE_STORE_TYPE, QDRANT_STORE_TYPE, store_nodes
from haystack_fin.store_registry import release_store

QUERY_STORE_HOLDERS = ("scope", "router", "retriever", "graph", "window")


def _store_params(data: dict) -> list[dict]:
    return [node["init_parameters"] for node in store_nodes(data)]


def _yaml(name: str) -> dict:
    return yaml.safe_load((pipelines_dir() / f"{name}.yaml").read_text())


def test_pipelines_dir_holds_the_shipped_yaml():
    assert (pipelines_dir() / "indexing.yaml").is_file()
    assert (pipelines_dir() / "query.yaml").is_file()


def test_without_overrides_the_yaml_is_returned_as_shipped():
    for name in ("indexing", "query"):
        assert pipeline_dict(name) == _yaml(name)


def test_store_path_is_resolved_and_replaces_url_and_location(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = pipeline_dict("indexing", store_path="rel/idx")
    (params,) = _store_params(data)
    assert params["path"] == str(tmp_path / "rel" / "idx")  # absolute: the CLI may run components elsewhere
    assert "url" not in params and "location" not in params
    # everything else of the shipped store is kept
    shipped = _store_params(_yaml("indexing"))[0]
    assert {k: v for k, v in params.items() if k != "path"} == {k: v for k, v in shipped.items() if k != "path"}


def test_store_path_expands_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (params,) = _store_params(pipeline_dict("indexing", store_path="~/fin-index"))
    assert params["path"] == str(tmp_path / "fin-index")


def test_qdrant_url_replaces_the_path_in_every_query_store(monkeypatch):
    monkeypatch.delenv("QDRANT_API_KEY", raising=False)
    data = pipeline_dict("query", qdrant_url="http://qdrant:6333")
    stores = [data["components"][name]["init_parameters"]["document_store"] for name in QUERY_STORE_HOLDERS]
    for store in stores:
        params = store["init_parameters"]
        assert params["url"] == "http://qdrant:6333"
        assert "path" not in params and "location" not in params and "api_key" not in params
        assert params["index"] == "haystack_fin" and params["return_embedding"] is True
        # the server collection gets the Edge shard's keyword indexes, so filing loads do not scan it
        indexed = {(p["field_name"], p["field_schema"]) for p in params["payload_fields_to_index"]}
        assert {("meta.filing_id", "keyword"), ("meta.node_type", "keyword")} <= indexed
    # one configuration for all: the store registry then gives the components one client
    assert all(s == stores[0] for s in stores)


def test_qdrant_url_takes_the_api_key_from_the_environment_by_reference(monkeypatch):
    monkeypatch.setenv("QDRANT_API_KEY", "s3cret")
    (params,) = _store_params(pipeline_dict("indexing", qdrant_url="https://q.example:6333"))
    # the key's name, never its value, goes into the dict (it may be dumped to YAML)
    assert params["api_key"] == {"type": "env_var", "env_vars": ["QDRANT_API_KEY"], "strict": True}
    assert "s3cret" not in yaml.safe_dump(params)
    store = indexing_store(qdrant_url="https://q.example:6333")
    assert isinstance(store.api_key, Secret) and store.api_key.resolve_value() == "s3cret"


def test_url_wins_over_path_and_index_is_overridden(tmp_path):
    (params,) = _store_params(
        pipeline_dict("indexing", store_path=str(tmp_path), qdrant_url="http://q:6333", index="x")
    )
    assert params["url"] == "http://q:6333" and "path" not in params
    assert params["index"] == "x"


def test_a_yaml_file_path_is_loaded_and_rewritten(tmp_path):
    custom = tmp_path / "my-indexing.yml"
    custom.write_text((pipelines_dir() / "indexing.yaml").read_text())
    (params,) = _store_params(pipeline_dict(str(custom), store_path=str(tmp_path / "idx")))
    assert params["path"] == str(tmp_path / "idx")


def test_unknown_pipeline_names_the_missing_file():
    with pytest.raises(FileNotFoundError, match=r"no-such-pipeline\.yaml"):
        pipeline_dict("no-such-pipeline")


def test_indexing_store_is_unconnected_and_pointed_at_the_path(tmp_path):
    store = indexing_store(store_path=str(tmp_path / "idx"))
    assert isinstance(store, QdrantEdgeDocumentStore)  # the shipped default
    params = store.to_dict()["init_parameters"]
    assert params["path"] == str(tmp_path / "idx") and "url" not in params
    assert params["index"] == "haystack_fin" and params["embedding_dim"] == 384
    assert not (tmp_path / "idx").exists()  # nothing is opened until the store is used


def test_the_shipped_yaml_uses_qdrant_edge_everywhere():
    for name in ("indexing", "query"):
        nodes = list(store_nodes(_yaml(name)))
        assert nodes and all(n["type"] == EDGE_STORE_TYPE for n in nodes)
        assert all(n["init_parameters"]["path"] == "./fin-index" for n in nodes)


def test_local_backend_swaps_every_store_to_qdrant_client_local_mode(tmp_path):
    data = pipeline_dict("query", store_path=str(tmp_path / "idx"), backend="local")
    nodes = list(store_nodes(data))
    assert len(nodes) == len(QUERY_STORE_HOLDERS) and all(n["type"] == QDRANT_STORE_TYPE for n in nodes)
    params = nodes[0]["init_parameters"]
    assert params["path"] == str(tmp_path / "idx") and params["return_embedding"] is True
    assert "payload_indexes" not in params  # Edge-only: QdrantDocumentStore would reject it
    store = indexing_store(store_path=str(tmp_path / "idx"), backend="local")
    assert isinstance(store, QdrantDocumentStore) and store.to_dict()["init_parameters"]["path"] == str(
        tmp_path / "idx"
    )


def test_backend_from_the_environment_and_back_to_edge(tmp_path, monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "local")
    (node,) = store_nodes(pipeline_dict("indexing", store_path=str(tmp_path)))
    assert node["type"] == QDRANT_STORE_TYPE
    (node,) = store_nodes(pipeline_dict("indexing", store_path=str(tmp_path), backend="edge"))  # argument wins
    assert node["type"] == EDGE_STORE_TYPE
    monkeypatch.setenv(BACKEND_ENV, "nosuch")
    with pytest.raises(ValueError, match="unknown store backend 'nosuch'"):
        pipeline_dict("indexing")


def test_a_local_mode_yaml_is_switched_to_edge_with_only_edge_parameters(tmp_path):
    custom = tmp_path / "local.yaml"
    data = _yaml("indexing")
    (node,) = store_nodes(data)
    node["type"] = QDRANT_STORE_TYPE
    node["init_parameters"].update({"location": None, "wait_result_from_api": True})
    custom.write_text(yaml.safe_dump(data))
    (node,) = store_nodes(pipeline_dict(str(custom), store_path=str(tmp_path / "idx"), backend="edge"))
    assert node["type"] == EDGE_STORE_TYPE
    assert "wait_result_from_api" not in node["init_parameters"] and "location" not in node["init_parameters"]
    assert QdrantEdgeDocumentStore.from_dict(node).path == str(tmp_path / "idx")


def test_load_indexing_pipeline_writes_to_the_given_folder(tmp_path):
    pipe = load_pipeline("indexing", store_path=str(tmp_path / "idx"))
    assert isinstance(pipe, Pipeline)
    store = pipe.get_component("writer").document_store
    assert store.to_dict()["init_parameters"]["path"] == str(tmp_path / "idx")
    assert not (tmp_path / "idx").exists()


def test_load_query_pipeline_against_a_server_url():
    pipe = load_pipeline("query", qdrant_url="http://qdrant.invalid:6333", transform=strip_generation)
    for name in QUERY_STORE_HOLDERS:
        params = pipe.get_component(name).document_store.to_dict()["init_parameters"]
        assert params["url"] == "http://qdrant.invalid:6333" and params["path"] is None
    assert not set(GENERATION_COMPONENTS) & set(pipe.to_dict()["components"])


def test_query_stores_share_one_client_after_warm_up(tmp_path):
    pipe = load_pipeline("query", store_path=str(tmp_path / "idx"), transform=strip_generation)
    holders = [pipe.get_component(name) for name in QUERY_STORE_HOLDERS]
    # each component deserialized its own store object ...
    assert len({id(c.document_store) for c in holders}) == len(holders)
    try:
        for c in holders:
            c.warm_up()
        # ... and warm_up bound them all to one instance, so the embedded folder is opened once
        assert len({id(c._store) for c in holders}) == 1
    finally:
        release_store(holders[0].document_store)


def test_strip_generation_removes_components_and_their_connections():
    data = pipeline_dict("query")
    stripped = strip_generation(data)
    assert not set(GENERATION_COMPONENTS) & set(stripped["components"])
    for c in stripped["connections"]:
        assert c["sender"].split(".")[0] not in GENERATION_COMPONENTS
        assert c["receiver"].split(".")[0] not in GENERATION_COMPONENTS
    assert {"sender": "fallback.documents", "receiver": "window.documents"} in stripped["connections"]
    # the input dict is not modified
    assert set(GENERATION_COMPONENTS) <= set(data["components"])
    assert len(data["connections"]) == len(_yaml("query")["connections"])


def test_drop_components_keeps_unrelated_connections():
    data = {
        "components": {"a": {}, "b": {}, "c": {}},
        "connections": [{"sender": "a.x", "receiver": "b.y"}, {"sender": "b.z", "receiver": "c.w"}],
    }
    out = drop_components(data, ("c",))
    assert set(out["components"]) == {"a", "b"}
    assert out["connections"] == [{"sender": "a.x", "receiver": "b.y"}]


def test_pipelines_dir_is_the_repository_folder_outside_a_wheel():
    here = Path(__file__).resolve().parents[1]
    assert pipelines_dir().resolve() in {here / "pipelines", here / "haystack_fin" / "pipelines"}


def test_the_query_yamls_one_lexicon_reaches_the_analyzer_and_the_graph_which_reads_chunks_with_it(tmp_path):
    text = (pipelines_dir() / "query.yaml").read_text()
    assert text.count("&lexicon null") == 1
    custom = tmp_path / "query.yaml"
    custom.write_text(text.replace("&lexicon null", "&lexicon /lexicons/mine.json"))
    data = pipeline_dict(str(custom))
    paths = {
        name: c["init_parameters"]["lexicon_path"]
        for name, c in data["components"].items()
        if "lexicon_path" in (c.get("init_parameters") or {})
    }
    assert paths == {name: "/lexicons/mine.json" for name in ("analyzer", "graph")}
