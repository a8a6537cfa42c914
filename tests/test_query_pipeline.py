import pytest
from haystack import Pipeline
from haystack.components.generators.chat import MockChatGenerator

from haystack_fin.pipeline_loader import ALLOWED_MODULES, drop_components, load_pipeline, pipeline_dict, pipelines_dir
from haystack_fin.store_registry import release_store

QUERY_YAML = pipelines_dir() / "query.yaml"


def test_query_yaml_loads_and_round_trips():
    with open(QUERY_YAML) as fp:
        pipe = Pipeline.load(fp, allowed_modules=ALLOWED_MODULES)
    names = set(pipe.to_dict()["components"])
    assert {"scope", "router", "retriever", "ranker", "window", "prompt_builder", "llm", "answer_builder"} <= names
    assert {"gate", "checker"} <= names
    again = Pipeline.loads(pipe.dumps(), allowed_modules=ALLOWED_MODULES).to_dict()
    assert again["components"] == pipe.to_dict()["components"]
    for name in ("scope", "router", "retriever", "window"):
        store = pipe.to_dict()["components"][name]["init_parameters"]["document_store"]["init_parameters"]
        assert store["recreate_index"] is False and store["return_embedding"] is True


@pytest.mark.integration
def test_query_pipeline_answers_with_citations(tmp_path, fixtures):
    store = str(tmp_path / "idx")
    indexing = load_pipeline("indexing", store_path=store)
    indexing.run({"converter": {"sources": [str(fixtures / "bestbuy-10q-2023-07-29.pdf")]}})
    indexing.close()

    def with_mock_llm(data):
        data = drop_components(data, ("llm",))
        data["components"]["llm"] = MockChatGenerator(responses="Revenue was $9,583 million [1].").to_dict()
        data["connections"] += [
            {"sender": "prompt_builder.prompt", "receiver": "llm.messages"},
            {"sender": "llm.replies", "receiver": "answer_builder.replies"},
        ]
        return data

    pipe = load_pipeline("query", store_path=store, transform=with_mock_llm)
    q = "What was Best Buy's revenue in the second quarter of fiscal 2024?"
    try:
        result = pipe.run(
            {
                "analyzer": {"query": q},
                "embedder": {"text": q},
                "scope": {"query": q},
                "router": {"query": q},
                "retriever": {"query": q},
                "ranker": {"query": q},
                "fallback": {"query": q},
                "prompt_builder": {"query": q},
                "answer_builder": {"query": q},
            },
            include_outputs_from={"router", "window"},
        )
    finally:
        release_store(pipe.get_component("retriever").document_store)
    answer = result["checker"]["answers"][0]  # the number check comes last
    assert answer.data.startswith("Revenue was")
    assert answer.meta["citations"][0]["ref"] == 1 and "unsupported_numbers" in answer.meta
    assert len(answer.documents) == 1  # the [1] citation resolved to a passage
    cited = answer.documents[0]
    for field in ("filing_id", "company", "form", "period", "item", "page_numbers", "modality"):
        assert cited.meta[field] not in (None, "", [])
    passages = result["window"]["documents"]
    assert 1 <= len(passages) <= 5
    assert result["router"]["routing"]["budgets"]
    assert pipeline_dict("query")["components"]["ranker"]["init_parameters"]["top_k"] == 20
