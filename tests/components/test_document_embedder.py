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
    embedder = FinDocumentEmbedder(length_sorted_batches=False, batch_size=4)
    data = embedder.to_dict()
    assert data["init_parameters"]["model"] == "all-MiniLM-L6-v2"
    assert data["init_parameters"]["length_sorted_batches"] is False
    restored = FinDocumentEmbedder.from_dict(data)
    assert restored.length_sorted_batches is False and restored.batch_size == 4


@pytest.mark.integration
def test_length_sorted_batches_match_the_parent_embeddings_in_input_order():
    docs = _docs()
    sorted_batches = FinDocumentEmbedder(batch_size=3)
    parent = FinDocumentEmbedder(batch_size=3, length_sorted_batches=False)
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
