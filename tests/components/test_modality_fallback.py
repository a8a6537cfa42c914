"""ModalityThresholdFallback: alone after plain Haystack retrievers, serialization, the shipped YAML's wiring,
the ablation and calibration fragments."""

import math

import pytest
from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
from haystack.core.serialization import component_from_dict, component_to_dict
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_fin.calibration import fragment
from haystack_fin.components.modality_fallback import ModalityThresholdFallback
from haystack_fin.components.query_analyzer import QueryAnalyzer
from haystack_fin.pipeline_loader import (
    ALLOWED_MODULES,
    apply_fragment,
    load_fragment,
    pipeline_dict,
    strip_generation,
)
from haystack_fin.query_runner import ablate

QUESTION = "What were capital expenditures in 2023?"


def vec(cos: float) -> list[float]:
    return [cos, math.sqrt(1 - cos * cos)]


def store() -> InMemoryDocumentStore:
    s = InMemoryDocumentStore(embedding_similarity_function="cosine")
    s.write_documents(
        [
            Document(id="t1", content="Capital expenditures were $1.2 billion in 2023.", embedding=vec(0.8)),
            Document(id="t2", content="Capital expenditures rose on new stores.", embedding=vec(0.7)),
            Document(id="t3", content="We face competition.", embedding=vec(0.3)),
            Document(
                id="tb",
                content="| Purchases of property and equipment | (1,200) |",
                embedding=vec(0.6),
                meta={"modality": "table"},
            ),
        ]
    )
    return s


def embedding_pipeline(fallback: ModalityThresholdFallback) -> Pipeline:
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store(), top_k=10, return_embedding=True))
    pipe.add_component("fallback", fallback)
    pipe.connect("retriever.documents", "fallback.documents")
    return pipe


def run(pipe: Pipeline, question: str = QUESTION) -> dict:
    q = [1.0, 0.0]
    return pipe.run({"retriever": {"query_embedding": q}, "fallback": {"query": question, "query_embedding": q}})[
        "fallback"
    ]


def test_alone_after_a_plain_embedding_retriever():
    out = run(embedding_pipeline(ModalityThresholdFallback(thresholds={"text": 0.65}, min_counts={"text": 2})))
    assert [d.id for d in out["documents"]] == ["t1", "t2"]
    assert out["trace"]["tier"] == "text" and out["trace"]["n_input"] == 4
    assert out["documents"][0].meta["fallback"] == {"cosine": pytest.approx(0.8), "tier": "text"}
    # Three text passages needed: the table over its threshold joins (and mentions capex through the lexicon).
    out = run(
        embedding_pipeline(
            ModalityThresholdFallback(thresholds={"text": 0.65, "table": 0.5}, min_counts={"text": 3, "table": 1})
        )
    )
    assert out["trace"]["tier"] == "table" and [d.id for d in out["documents"]] == ["t1", "t2", "tb"]


def test_named_statement_goes_to_the_table_tier_and_disabled_passes_all():
    question = "What were capital expenditures in the cash flow statement?"
    fb = ModalityThresholdFallback(thresholds={"text": 0.65, "table": 0.5}, min_counts={"text": 2})
    out = run(embedding_pipeline(fb), question)
    assert out["trace"]["start_tier"] == "table" and {d.id for d in out["documents"]} == {"t1", "t2", "tb"}
    out = run(embedding_pipeline(ModalityThresholdFallback(enabled=False)))
    assert out["trace"]["tier"] == "off" and len(out["documents"]) == 4


def test_analysis_input_is_used_and_checked():
    fb = ModalityThresholdFallback(thresholds={"text": 0.65}, min_counts={"text": 2})
    docs = store().filter_documents()
    analysis = QueryAnalyzer().run(query=QUESTION)["analysis"]
    out = fb.run(query=QUESTION, documents=docs, query_embedding=[1.0, 0.0], analysis=analysis)
    assert out["trace"]["checks"][0]["covered"] == ["capex"]
    with pytest.raises(ValueError, match="not of the query"):
        fb.run(query="Other question?", documents=docs, query_embedding=[1.0, 0.0], analysis=analysis)


def test_recorded_cosines_stand_for_embeddings():
    # DualTreeRetriever's and GraphExpander's candidates carry meta["query_cosine"] and no vector: the same decision.
    fb = ModalityThresholdFallback(thresholds={"text": 0.65}, min_counts={"text": 2})
    docs = store().filter_documents()
    with_vectors = fb.run(query=QUESTION, documents=docs, query_embedding=[1.0, 0.0])
    recorded = [Document(id=d.id, content=d.content, meta={**d.meta, "query_cosine": d.embedding[0]}) for d in docs]
    out = fb.run(query=QUESTION, documents=recorded)
    assert [d.id for d in out["documents"]] == [d.id for d in with_vectors["documents"]] == ["t1", "t2"]
    assert out["documents"][0].meta["fallback"] == {"cosine": pytest.approx(0.8), "tier": "text"}


def test_after_bm25_without_embeddings_nothing_is_dropped():
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store(), top_k=10))
    pipe.add_component("fallback", ModalityThresholdFallback())
    pipe.connect("retriever.documents", "fallback.documents")
    result = pipe.run(
        {"retriever": {"query": QUESTION}, "fallback": {"query": QUESTION}}, include_outputs_from={"retriever"}
    )
    out, retrieved = result["fallback"], result["retriever"]["documents"]
    assert out["trace"]["tier"] == "all" and [d.id for d in out["documents"]] == [d.id for d in retrieved]
    assert retrieved and out["trace"]["reason"].startswith("no embeddings")


def test_to_dict_from_dict_and_yaml_round_trip():
    fb = ModalityThresholdFallback(thresholds={"text": 0.5}, min_counts={"text": 2}, coverage="all", enabled=False)
    data = component_to_dict(fb, "fallback")
    assert data["init_parameters"]["thresholds"] == {"text": 0.5} and data["init_parameters"]["coverage"] == "all"
    restored = component_from_dict(ModalityThresholdFallback, data, "fallback")
    assert restored.config == fb.config and restored.enabled is False
    pipe = embedding_pipeline(ModalityThresholdFallback(thresholds={"text": 0.65}, min_counts={"text": 2}))
    loaded = Pipeline.loads(pipe.dumps(), allowed_modules=ALLOWED_MODULES)
    assert loaded.get_component("fallback").config.thresholds["text"] == 0.65
    with pytest.raises(ValueError, match="unknown modality"):
        ModalityThresholdFallback(thresholds={"video": 0.5})


def test_query_yaml_wires_the_fallback_between_ranker_and_window():
    data = strip_generation(pipeline_dict("query"))
    connections = data["connections"]
    assert {"sender": "ranker.documents", "receiver": "fallback.documents"} in connections
    assert {"sender": "fallback.documents", "receiver": "window.documents"} in connections
    # Its cosines come from the candidates' meta["query_cosine"] (the retriever's and the graph's), not a vector.
    assert not any(c["receiver"] == "fallback.query_embedding" for c in connections)
    assert not any(c["receiver"] == "ranker.query_embedding" for c in connections)
    Pipeline.from_dict(data, allowed_modules=ALLOWED_MODULES)
    off = ablate(data, {"fallback"})
    assert "fallback" not in off["components"]
    assert {"sender": "ranker.documents", "receiver": "window.documents"} in off["connections"]
    Pipeline.from_dict(off, allowed_modules=ALLOWED_MODULES)


def _calibration_result(chosen: dict | None) -> dict:
    return {
        "config": {"n_questions": 2, "questions": "q.jsonl", "setting": "single", "min_counts": {"text": 2}},
        "baseline": {"page_hit@5": 0.9, "evidence_recall_bigram@5": 0.7, "context_words@5": 1600.0},
        "chosen": chosen,
    }


def test_calibration_fragment_is_loaded_by_the_query_yaml(tmp_path):
    chosen = {
        "thresholds": {"text": 0.45, "table": 0.4, "image": 0.35},
        "overall": {"page_hit@5": 0.9, "evidence_recall_bigram@5": 0.71, "context_words@5": 1200.0},
    }
    path = tmp_path / "fallback.yaml"
    path.write_text(fragment(_calibration_result(chosen)))
    data = apply_fragment(strip_generation(pipeline_dict("query")), load_fragment(path))
    pipe = Pipeline.from_dict(data, allowed_modules=ALLOWED_MODULES)
    fb = pipe.get_component("fallback")
    assert dict(fb.config.thresholds) == {"text": 0.45, "table": 0.4, "image": 0.35}
    assert fb.config.min_counts["text"] == 2 and fb.enabled is True
    # No setting kept the hits: the fragment switches the fallback off.
    path.write_text(fragment(_calibration_result(None)))
    off = apply_fragment(strip_generation(pipeline_dict("query")), load_fragment(path))
    assert Pipeline.from_dict(off, allowed_modules=ALLOWED_MODULES).get_component("fallback").enabled is False


@pytest.mark.parametrize(
    "text, message",
    [
        ("components: [1, 2]", "only 'components'"),
        ("components: {fallback: {type: x}}", "only an init_parameters"),
        ("components: {nosuch: {init_parameters: {a: 1}}}", "no component 'nosuch'"),
        ("{bad yaml", "cannot read"),
    ],
)
def test_bad_fragments_name_the_file(tmp_path, text, message):
    path = tmp_path / "frag.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as err:
        apply_fragment(pipeline_dict("query"), load_fragment(path), str(path))
    assert str(path) in str(err.value)


def test_ask_explain_prints_the_tier(tmp_path, monkeypatch, capsys):
    """The CLI's rendering of what a real fallback decided (the query pipeline itself is replaced: it needs the
    embedding model and an index, tested in the integration tests)."""
    from haystack_fin.cli import main
    from haystack_fin.query_runner import QueryResult

    fb = ModalityThresholdFallback(thresholds={"text": 0.65}, min_counts={"text": 2})
    out = fb.run(query=QUESTION, documents=store().filter_documents(), query_embedding=[1.0, 0.0])

    class Runner:
        def __init__(self, *args, **kwargs) -> None:
            pass

        def run(self, *args, **kwargs) -> QueryResult:
            return QueryResult(
                out["documents"], trace={"scope": {}, "routing": {}, "retrieval": {}, "fallback": out["trace"]}
            )

        def close(self) -> None:
            pass

    monkeypatch.setattr("haystack_fin.query_runner.QueryRunner", Runner)
    assert main(["ask", QUESTION, "--store", str(tmp_path / "idx"), "--create", "--no-llm", "--explain"]) == 0
    assert "Fallback: tier text, 2 passage(s) kept: 2 passage(s) over the text threshold(s)" in capsys.readouterr().out
