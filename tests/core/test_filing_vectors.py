import math

import pytest

from haystack_fin.core.retrieval.filing_vectors import filing_vector


def test_the_filing_vector_is_the_unit_mean_of_unit_chunk_vectors():
    vector = filing_vector([[10.0, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 0.0]])
    assert vector == pytest.approx([2**-0.5, 2**-0.5, 0.0])
    assert math.isclose(sum(x * x for x in vector), 1.0)


def test_no_vector_without_chunks_or_when_they_cancel_out():
    assert filing_vector([]) is None
    assert filing_vector([[1.0, 0.0], [-1.0, 0.0]]) is None
