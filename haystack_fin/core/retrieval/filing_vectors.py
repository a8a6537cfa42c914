"""One vector per filing: the direction of the mean of its chunks' vectors.

A question that names no company is scoped by the filings of its nearest chunks (``FilingScope``). Searching
every chunk of a store of thousands of filings is a scan of all their vectors (or a global HNSW graph that takes
hours to build on a small machine); the filing vectors let that search first narrow the store to the filings whose
average content is nearest the question, then vote among their chunks only.
"""

from collections.abc import Sequence

import numpy as np


def filing_vector(chunk_vectors: Sequence[Sequence[float]]) -> list[float] | None:
    """The unit-length mean of ``chunk_vectors`` (each normalized first, as cosine stores keep them), or None when
    there are none or they cancel out."""
    if not chunk_vectors:
        return None
    matrix = np.asarray(chunk_vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    mean = (matrix / norms).mean(axis=0)
    length = float(np.linalg.norm(mean))
    if length < 1e-12:
        return None
    return [float(x) for x in mean / length]
