"""FinDocumentEmbedder: the bundled alias, serialization, and token-length batching that keeps results and order."""

import numpy as np
import pytest
from haystack import Document

from haystack_fin.components.document_embedder import FinDocumentEmbedder


def _docs() -> list[Document]:
    # Prose next to number-dense table rows: similar character lengths, very different token lengths.
    prose = "Net revenues increased due to growth in streaming memberships and higher average pricing. "
    table = "| Total revenues | 11,692,713 | 8,830,669 | 6,779,511 |\n"
    return [
        Document(id=f"d{i}", content=(prose * (1 + i % 4)) if i % 2 else (table * (1 + i % 5)), meta={"i": i})
        for i in range(11)
    ]


def test_to_dict_round_trip_keeps_alias_and_batching_flag():
    embedder = FinDocumentEmbedder(length_sorted_batches=False, batch_size=4, compute_dtype="bfloat16")
    data = embedder.to_dict()
    assert data["init_parameters"]["model"] == "all-MiniLM-L6-v2"
    assert data["init_parameters"]["length_sorted_batches"] is False
    assert data["init_parameters"]["compute_dtype"] == "bfloat16"
    restored = FinDocumentEmbedder.from_dict(data)
    assert restored.length_sorted_batches is False and restored.batch_size == 4
    assert restored.compute_dtype == "bfloat16"
    assert FinDocumentEmbedder().compute_dtype == "auto"


def test_unknown_compute_dtype_is_rejected_at_construction():
    with pytest.raises(ValueError, match="compute_dtype must be one of"):
        FinDocumentEmbedder(compute_dtype="float16")  # type: ignore[arg-type]  # the invalid value under test


@pytest.mark.integration
@pytest.mark.parametrize("native_bf16", [True, False])
def test_auto_uses_bf16_autocast_only_on_a_cpu_with_native_bf16(monkeypatch, native_bf16):
    import haystack_fin.components.document_embedder as module

    monkeypatch.setattr(module, "cpu_has_native_bf16", lambda: native_bf16)
    embedder = FinDocumentEmbedder()
    embedder.warm_up()
    assert embedder._autocast_device == ("cpu" if native_bf16 else None)


@pytest.mark.integration
def test_bf16_vectors_stay_within_rounding_of_float32():
    docs = _docs()
    exact = FinDocumentEmbedder(batch_size=4, compute_dtype="float32")
    fast = FinDocumentEmbedder(batch_size=4, compute_dtype="bfloat16")
    exact.warm_up()
    fast.warm_up()
    assert exact._autocast_device is None and fast._autocast_device == "cpu"
    a = np.array([d.embedding for d in exact.run(docs)["documents"]])
    b = np.array([d.embedding for d in fast.run(docs)["documents"]])
    assert a.dtype == b.dtype and a.shape == b.shape
    cosines = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert cosines.min() > 0.999
    assert not np.array_equal(a, b)  # the autocast really ran: bf16 rounding shows in the last digits


@pytest.mark.integration
def test_length_sorted_batches_match_the_parent_embeddings_in_input_order():
    docs = _docs()
    # float32: bf16 rounding depends on the batch's shape, and this test is about the batching alone.
    sorted_batches = FinDocumentEmbedder(batch_size=3, compute_dtype="float32")
    parent = FinDocumentEmbedder(batch_size=3, length_sorted_batches=False, compute_dtype="float32")
    sorted_batches.warm_up()
    parent.warm_up()
    a = sorted_batches.run(docs)["documents"]
    b = parent.run(docs)["documents"]
    assert [d.id for d in a] == [d.id for d in docs]
    assert [d.meta for d in a] == [d.meta for d in docs]
    np.testing.assert_allclose(np.array([d.embedding for d in a]), np.array([d.embedding for d in b]), atol=1e-5)
    lengths = sorted_batches._token_lengths([d.content for d in docs])
    assert len(set(lengths)) > 3  # the fixture really mixes lengths, so the order is really permuted


def test_unknown_model_error_names_the_model():
    e = FinDocumentEmbedder(model="haystack-fin-tests/no-such-model")
    with pytest.raises(OSError, match=r"no-such-model.*models are not downloaded here"):
        e.warm_up()
    assert e.model == "haystack-fin-tests/no-such-model" and e.embedding_backend is None
