"""Semantic chunking of narrative text: cut where the topic moves, then merge neighbours that stay on one topic.

The MultiFinRAG recipe, inside one run of paragraphs of one Item (``structure.py`` calls it where the default
packer ``chunk_paragraphs`` would run, so chunks never cross an Item, a table or a heading):

1. sentences are embedded; a cut falls after sentence *i* when the cosine distance between sentences *i* and *i+1*
   is above the ``percentile`` (0.95) of the run's distances (Haystack's ``EmbeddingBasedDocumentSplitter`` rule;
   that component needs NLTK's punkt model, which cannot be downloaded here, so the rule is applied to the
   project's own sentence splitter); headings are always cuts;
2. merge pass: adjacent segments whose mean sentence embeddings have cosine similarity >= ``merge_threshold`` are
   merged while the result fits ``chunk_tokens``;
3. each segment is packed by ``chunk_paragraphs`` (a segment over the budget is cut on sentence boundaries).

``embed`` is any function from texts to vectors (the component passes its sentence-transformers embedder).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from haystack_fin.core.ingest.chunking import Paragraph, TextChunk, chunk_paragraphs
from haystack_fin.core.text import estimate_tokens, split_sentences

Embed = Callable[[list[str]], Sequence[Sequence[float]]]


@dataclass
class _Unit:
    text: str
    para: int  # index of the paragraph it comes from
    heading: bool


def _units(paragraphs: list[Paragraph]) -> list[_Unit]:
    out: list[_Unit] = []
    for k, para in enumerate(paragraphs):
        sentences = [para.text] if para.is_heading else split_sentences(para.text) or [para.text]
        out.extend(_Unit(s, k, para.is_heading) for s in sentences if s.strip())
    return out


def _normalized(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    arr = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.asarray(arr / norms)


def breakpoints(vectors: np.ndarray, percentile: float = 0.95) -> list[int]:
    """Indices *i* (1..n-1) where a new segment starts: the distance between units i-1 and i is above the
    ``percentile`` of all consecutive distances. ``vectors`` are unit-normalized rows."""
    if len(vectors) < 3:
        return []
    distances = 1.0 - np.einsum("ij,ij->i", vectors[:-1], vectors[1:])
    threshold = float(np.percentile(distances, percentile * 100))
    return [i + 1 for i, d in enumerate(distances) if d > threshold]


def semantic_chunks(
    paragraphs: list[Paragraph],
    chunk_tokens: int = 200,
    overlap_tokens: int = 20,
    *,
    embed: Embed,
    percentile: float = 0.95,
    merge_threshold: float = 0.75,
) -> list[TextChunk]:
    """Chunks of one run of paragraphs cut at topic shifts (see the module docstring).

    :param paragraphs: the run's paragraphs and headings in reading order (one Item, between tables).
    :param embed: texts -> vectors.
    :param chunk_tokens: token budget per chunk (estimated word pieces), as for ``chunk_paragraphs``.
    :param overlap_tokens: overlap used only where a segment over the budget is cut.
    :param percentile: breakpoint percentile of consecutive cosine distances (0-1).
    :param merge_threshold: adjacent segments at least this similar are merged up to ``chunk_tokens``.
    """
    if not 0.0 <= percentile <= 1.0:
        raise ValueError(f"percentile must be in [0, 1], got {percentile}")
    units = _units(paragraphs)
    if len(units) < 3:
        return chunk_paragraphs(paragraphs, chunk_tokens, overlap_tokens)
    vectors = _normalized(embed([u.text for u in units]))
    cuts = set(breakpoints(vectors, percentile))
    cuts.update(i for i, u in enumerate(units) if u.heading and i > 0)
    segments: list[list[int]] = [[]]
    for i in range(len(units)):
        if i in cuts and segments[-1]:
            segments.append([])
        segments[-1].append(i)
    # Merge pass: neighbours on one topic (mean vectors close) merge while they fit; never across a heading.
    merged: list[list[int]] = [segments[0]]
    tokens = [sum(estimate_tokens(units[i].text) for i in segments[0])]
    for seg in segments[1:]:
        size = sum(estimate_tokens(units[i].text) for i in seg)
        prev = merged[-1]
        a, b = vectors[prev].mean(axis=0), vectors[seg].mean(axis=0)
        similarity = float(a @ b / ((np.linalg.norm(a) * np.linalg.norm(b)) or 1.0))
        if not units[seg[0]].heading and similarity >= merge_threshold and tokens[-1] + size <= chunk_tokens:
            prev.extend(seg)
            tokens[-1] += size
        else:
            merged.append(list(seg))
            tokens.append(size)
    chunks: list[TextChunk] = []
    for seg in merged:
        chunks.extend(chunk_paragraphs(_segment_paragraphs(seg, units, paragraphs), chunk_tokens, overlap_tokens))
    return chunks


def _segment_paragraphs(seg: list[int], units: list[_Unit], paragraphs: list[Paragraph]) -> list[Paragraph]:
    """The segment's sentences regrouped into (parts of) their paragraphs, with those paragraphs' provenance."""
    out: list[Paragraph] = []
    last = -1
    for i in seg:
        unit = units[i]
        src = paragraphs[unit.para]
        if unit.para == last:
            out[-1].text += " " + unit.text
        else:
            out.append(Paragraph(unit.text, src.pages, src.section_path, src.is_heading, src.ocr, src.ocr_confidence))
        last = unit.para
    return out
