"""TwoStageRanker: fallback scoring, per-Item budgets, serialization, pipelines, and cross-encoder mechanics."""

import inspect
from pathlib import Path

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.utils import ComponentDevice

from haystack_fin.components.two_stage_ranker import TwoStageRanker

QUERY = "What were the capital expenditures in fiscal 2018?"
RERANK_KEYS = {"stage1_score", "stage1_rank_in_item", "stage2_rank", "scorer"}


def doc(doc_id: str, content: str, item: str = "7", filing: str = "acme-10k", **meta: object) -> Document:
    return Document(id=doc_id, content=content, meta={"filing_id": filing, "item": item, **meta})


def item7_heavy() -> list[Document]:
    """Four capex passages in Item 7, two weaker ones in Item 8, one off-topic in Item 1A."""
    return [
        doc("a1", "Capital expenditures in fiscal 2018 were $1.6 billion."),
        doc("a2", "Capital expenditures for 2018 were funded by cash."),
        doc("a3", "Capital expenditures were higher than planned."),
        doc("a4", "Expenditures on marketing were higher."),
        doc("b1", "Cash flows for fiscal 2018 are shown in the statement.", item="8"),
        doc("b2", "Fiscal year cash flows.", item="8"),
        doc("c1", "We face competition from online retailers.", item="1A"),
    ]


class TestTwoStageRanker:
    def test_init_defaults(self) -> None:
        ranker = TwoStageRanker()
        assert ranker.model is None
        assert (ranker.top_k, ranker.stage1_top_k, ranker.scale_score, ranker.batch_size) == (5, None, True, 16)
        assert ranker.fallback_weights is None

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"top_k": 0},
            {"stage1_top_k": 0},
            {"batch_size": 0},
            {"model": " "},
            {"fallback_weights": {"bm25": 1.0}},
            {"fallback_weights": {"dense": -1.0}},
        ],
    )
    def test_init_invalid(self, kwargs: dict) -> None:
        with pytest.raises(ValueError):
            TwoStageRanker(**kwargs)

    def test_warm_up_without_model_loads_nothing(self) -> None:
        ranker = TwoStageRanker()
        ranker.warm_up()
        ranker.warm_up()
        assert ranker._cross_encoder is None

    def test_statement_prior_from_meta(self) -> None:
        rows = "| Total current liabilities | 5,466 | 4,586 |"
        docs = [
            Document(id="note", content=rows, meta={"modality": "table", "item": "8"}),
            Document(id="bs", content=rows, meta={"modality": "table", "item": "8", "statement": "balance_sheet"}),
        ]
        q = "What is Netflix's year end FY2017 total current liabilities? Use the balance sheet."
        out = TwoStageRanker(top_k=2).run(query=q, documents=docs)
        assert [d.id for d in out["documents"]] == ["bs", "note"]
        assert out["trace"]["fallback"]["statements"] == {"balance_sheet": 1.0}
        assert out["documents"][0].meta["rerank"]["signals"]["statement"] == 1.0
        flat = TwoStageRanker(top_k=2, fallback_weights={"statement": 0.0}).run(query=q, documents=docs)
        assert flat["documents"][0].score == pytest.approx(flat["documents"][1].score)

    def test_scoring_model_replaces_the_hand_set_fusion(self, tmp_path: Path) -> None:
        import json

        rows = "| Total current liabilities | 5,466 | 4,586 |"
        docs = [
            Document(id="bs", content=rows, meta={"modality": "table", "item": "8", "statement": "balance_sheet"}),
            Document(id="text", content="Total current liabilities rose.", meta={"modality": "text", "item": "7"}),
        ]
        q = "What is Netflix's year end FY2017 total current liabilities? Use the balance sheet."
        assert TwoStageRanker(top_k=2).run(query=q, documents=docs)["documents"][0].id == "bs"
        # A model that prefers text passages and MD&A turns the order round; its score is a probability.
        model = {"version": 1, "kind": "logistic", "features": ["table", "item_mdna"], "coefficients": [-2.0, 1.0]}
        path = tmp_path / "model.json"
        path.write_text(json.dumps(model))
        ranker = TwoStageRanker(top_k=2, scoring_model=str(path))
        out = ranker.run(query=q, documents=docs)
        assert [d.id for d in out["documents"]] == ["text", "bs"]
        assert out["documents"][0].score == pytest.approx(1 / (1 + np.exp(-1.0)))
        assert out["trace"]["fallback"]["scoring_model"] == str(path)
        assert TwoStageRanker.from_dict(ranker.to_dict()).scoring_model == str(path)
        scored = ranker.score_candidates(q, docs)
        assert scored.features.shape[0] == 2 and scored.hand_scores[0] > scored.hand_scores[1]
        with pytest.raises(FileNotFoundError, match="no-such-model"):
            TwoStageRanker(scoring_model=str(tmp_path / "no-such-model.json")).warm_up()
        with pytest.raises(ValueError, match="scoring_model"):
            TwoStageRanker(scoring_model=" ")

    def test_to_dict(self) -> None:
        ranker = TwoStageRanker(
            top_k=3, stage1_top_k=2, fallback_weights={"table": 0.0}, device=ComponentDevice.from_str("cpu")
        )
        data = ranker.to_dict()
        assert data["type"] == "haystack_fin.components.two_stage_ranker.TwoStageRanker"
        params = data["init_parameters"]
        assert params["top_k"] == 3 and params["stage1_top_k"] == 2
        assert params["fallback_weights"] == {"table": 0.0}
        assert params["device"] == {"type": "single", "device": "cpu"}
        assert params["model"] is None

    def test_to_dict_covers_every_init_parameter(self) -> None:
        params = TwoStageRanker().to_dict()["init_parameters"]
        assert params.keys() == inspect.signature(TwoStageRanker.__init__).parameters.keys() - {"self"}

    def test_from_dict(self) -> None:
        original = TwoStageRanker(model="some/cross-encoder", top_k=7, meta_fields_to_embed=["context"])
        restored = TwoStageRanker.from_dict(original.to_dict())
        assert (restored.model, restored.top_k, restored.meta_fields_to_embed) == ("some/cross-encoder", 7, ["context"])
        assert restored._cross_encoder is None  # no I/O until warm_up

    def test_pipeline_dumps_loads_round_trip(self) -> None:
        pipe = Pipeline()
        pipe.add_component("ranker", TwoStageRanker(top_k=4, stage1_top_k=2, fallback_weights={"dense": 0.7}))
        loaded = Pipeline.loads(pipe.dumps(), allowed_modules=["haystack_fin"])
        assert loaded.to_dict() == pipe.to_dict()
        assert loaded.get_component("ranker").fallback_weights == {"dense": 0.7}

    def test_run_empty(self) -> None:
        result = TwoStageRanker().run(query=QUERY, documents=[])
        assert result["documents"] == []
        assert result["trace"]["n_output"] == 0

    def test_run_fallback_meta_and_order(self) -> None:
        docs = item7_heavy()
        result = TwoStageRanker(top_k=3).run(query=QUERY, documents=docs)
        out = result["documents"]
        assert len(out) == 3
        scores = [d.score for d in out]
        assert scores == sorted(scores, reverse=True)
        assert all(0.0 <= s <= 1.0 for s in scores)
        for rank, d in enumerate(out, start=1):
            assert d.meta["rerank"].keys() >= RERANK_KEYS
            assert d.meta["rerank"]["stage2_rank"] == rank
            assert d.meta["rerank"]["scorer"] == "fallback"
            assert d.meta["rerank"]["stage1_score"] == d.score
        assert out[0].id == "a1"
        assert result["trace"]["scorer"] == "fallback"

    def test_run_does_not_mutate_inputs(self) -> None:
        docs = item7_heavy()
        snapshot = [(d.id, d.score, dict(d.meta)) for d in docs]
        TwoStageRanker().run(query=QUERY, documents=docs)
        assert [(d.id, d.score, dict(d.meta)) for d in docs] == snapshot

    def test_run_deduplicates_by_id(self) -> None:
        docs = item7_heavy()
        result = TwoStageRanker(top_k=10).run(query=QUERY, documents=docs + docs[:2])
        ids = [d.id for d in result["documents"]]
        assert len(ids) == len(set(ids))
        assert result["trace"]["n_duplicates"] == 2

    def test_stage1_budget_then_stage2_cut(self) -> None:
        # Three groups, top_k=3 -> even split ceil(3/3) = 1 per Item: the best of each Item reaches stage 2.
        result = TwoStageRanker(top_k=3).run(query=QUERY, documents=item7_heavy())
        assert [d.meta["item"] for d in result["documents"]] == ["7", "8", "1A"]
        assert all(d.meta["rerank"]["stage1_rank_in_item"] == 1 for d in result["documents"])
        groups = {g["item"]: g for g in result["trace"]["groups"]}
        assert groups["7"]["budget"] == 1 and groups["7"]["budget_source"] == "even_split"
        assert groups["7"]["n_candidates"] == 4 and groups["7"]["kept_stage1"] == 1

    def test_stage1_top_k_overrides(self) -> None:
        result = TwoStageRanker(top_k=3, stage1_top_k=3).run(query=QUERY, documents=item7_heavy())
        assert [d.id for d in result["documents"]] == ["a1", "a2", "a3"]
        assert [d.meta["rerank"]["stage1_rank_in_item"] for d in result["documents"]] == [1, 2, 3]

    def test_budget_k_from_meta(self) -> None:
        docs = [
            Document(id=d.id, content=d.content, meta={**d.meta, "budget_k": {"7": 2, "8": 1, "1A": 1}[d.meta["item"]]})
            for d in item7_heavy()
        ]
        result = TwoStageRanker(top_k=5).run(query=QUERY, documents=docs)
        assert [d.id for d in result["documents"]][:3] == ["a1", "a2", "b1"]
        assert len(result["documents"]) == 4  # budgets 2 + 1 + 1 < top_k: the router's budgets are respected
        assert {g["budget_source"] for g in result["trace"]["groups"]} == {"meta"}

    def test_run_top_k_override(self) -> None:
        ranker = TwoStageRanker(top_k=5, stage1_top_k=5)
        assert len(ranker.run(query=QUERY, documents=item7_heavy(), top_k=2)["documents"]) == 2
        with pytest.raises(ValueError):
            ranker.run(query=QUERY, documents=item7_heavy(), top_k=0)

    def test_query_embedding_enables_dense_signal(self) -> None:
        docs = [
            Document(id="near", content="Outlays for plants.", embedding=[1.0, 0.0], meta={"item": "7"}),
            Document(id="far", content="Outlays for plants.", embedding=[0.0, 1.0], meta={"item": "7"}),
        ]
        result = TwoStageRanker(top_k=2).run(query="plant outlays", documents=docs, query_embedding=[1.0, 0.1])
        assert [d.id for d in result["documents"]] == ["near", "far"]
        assert result["trace"]["fallback"]["n_with_dense"] == 2
        assert result["documents"][0].meta["rerank"]["signals"]["dense"] == 1.0

    def test_recorded_cosine_enables_dense_signal_without_vectors(self) -> None:
        # DualTreeRetriever's candidates: meta["query_cosine"], no embedding, no query_embedding connected.
        docs = [
            Document(id="far", content="Outlays for plants.", meta={"item": "7", "query_cosine": 0.2}),
            Document(id="near", content="Outlays for plants.", meta={"item": "7", "query_cosine": 0.8}),
        ]
        result = TwoStageRanker(top_k=2).run(query="plant outlays", documents=docs)
        assert [d.id for d in result["documents"]] == ["near", "far"]
        assert result["trace"]["fallback"]["n_with_dense"] == 2
        assert [d.meta["rerank"]["signals"]["dense"] for d in result["documents"]] == [1.0, 0.25]

    def test_documents_without_provenance_form_one_group(self) -> None:
        docs = [Document(content=f"capital expenditures {i}") for i in range(4)]
        result = TwoStageRanker(top_k=2).run(query=QUERY, documents=docs)
        assert len(result["documents"]) == 2
        assert result["trace"]["groups"][0]["filing_id"] is None

    def test_in_pipeline_after_bm25_retriever(self) -> None:
        store = InMemoryDocumentStore()
        store.write_documents(item7_heavy())
        pipe = Pipeline()
        pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=10))
        pipe.add_component("ranker", TwoStageRanker(top_k=2))
        pipe.connect("retriever.documents", "ranker.documents")
        result = pipe.run({"retriever": {"query": QUERY}, "ranker": {"query": QUERY}})
        out = result["ranker"]["documents"]
        assert len(out) == 2
        assert out[0].id == "a1"
        assert result["ranker"]["trace"]["n_input"] >= 2


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised 2-layer BERT cross-encoder saved in Hugging Face format (no download)."""
    torch = pytest.importorskip("torch")
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny-cross-encoder")
    words = ["capital", "expenditures", "were", "billion", "revenue", "grew", "risk", "competition"]
    words += ["what", "the", "in", "fiscal", "2018", "cash"]
    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(path / "vocab.txt"))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(words) + 5,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
        initializer_range=0.5,  # spread the random logits so scores are not all equal
    )
    BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.mark.slow
class TestTwoStageRankerCrossEncoder:
    def test_warm_up_and_rank(self, tiny_cross_encoder: Path) -> None:
        ranker = TwoStageRanker(model=str(tiny_cross_encoder), top_k=4, stage1_top_k=3, batch_size=2)
        ranker.warm_up()
        loaded = ranker._cross_encoder
        ranker.warm_up()
        assert loaded is not None and ranker._cross_encoder is loaded  # idempotent

        docs = item7_heavy()
        result = ranker.run(query=QUERY, documents=docs + docs[:1])
        out = result["documents"]
        assert len(out) == 4
        assert len({d.id for d in out}) == 4 and {d.id for d in out} <= {d.id for d in docs}
        scores = [d.score for d in out]
        assert scores == sorted(scores, reverse=True)
        assert all(0.0 <= s <= 1.0 for s in scores)  # scale_score=True: sigmoid
        assert all(d.meta["rerank"]["scorer"] == "cross-encoder" for d in out)
        assert [d.meta["rerank"]["stage2_rank"] for d in out] == [1, 2, 3, 4]
        assert sum(d.meta["item"] == "7" for d in out) <= 3  # stage-1 budget
        assert result["trace"]["scorer"] == "cross-encoder"

    def test_unscaled_scores_and_pipeline(self, tiny_cross_encoder: Path) -> None:
        pipe = Pipeline()
        pipe.add_component("ranker", TwoStageRanker(model=str(tiny_cross_encoder), top_k=3, scale_score=False))
        result = pipe.run({"ranker": {"query": QUERY, "documents": item7_heavy()}})
        out = result["ranker"]["documents"]
        assert len(out) == 3
        assert [d.score for d in out] == sorted((d.score for d in out), reverse=True)


@pytest.mark.parametrize("weights", [None, {"statement": 0.0}, {"table": 0.0}])
@pytest.mark.parametrize(
    "question",
    [
        "What is Netflix's year end FY2017 total current liabilities? Use the balance sheet.",
        QUERY,
        "Describe the competition.",
    ],
)
def test_same_ranking_with_the_query_analyzers_analysis(monkeypatch, weights, question):
    from haystack_fin.components.query_analyzer import QueryAnalyzer
    from haystack_fin.core.retrieval import passage_scoring, question_analysis

    rows = "| Total current liabilities | 5,466 | 4,586 |"
    docs = [
        *item7_heavy(),
        doc("bs", rows, item="8", modality="table", statement="balance_sheet"),
        doc("note", rows, item="8", modality="table", table={"rows": [{"label": "Total current liabilities"}]}),
    ]
    ranker = TwoStageRanker(top_k=5, fallback_weights=weights)
    embedding = [0.1, 0.2, 0.3]

    def run(**extra):
        out = ranker.run(query=question, documents=docs, query_embedding=embedding, **extra)
        return [(d.id, d.score, d.meta["rerank"]) for d in out["documents"]], out["trace"]

    alone = run()
    analysis = QueryAnalyzer().run(query=question)["analysis"]

    def not_again(*_args):
        raise AssertionError("the question was analysed again")

    monkeypatch.setattr(question_analysis, "analyze_question", not_again)
    monkeypatch.setattr(passage_scoring, "asks_for_number", not_again)
    assert run(analysis=analysis) == alone
