"""Semantic chunking (core/ingest/semantic.py and FilingSplitter(chunking="semantic")) with a stand-in embedder.

The stand-in maps a sentence to the topic its words name, so where the cuts must fall is known; the real embedder
is only loaded by the integration test.
"""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.components.filing_splitter import FilingSplitter
from haystack_fin.core.ingest.chunking import Paragraph
from haystack_fin.core.ingest.semantic import breakpoints, semantic_chunks

TOPICS = ("revenue", "litigation", "pension")
FIXTURES = Path(__file__).parent.parent / "fixtures"


def topic_embed(texts: list[str]) -> list[list[float]]:
    rng = np.random.default_rng(0)
    out = []
    for text in texts:
        vec = np.array([text.lower().count(t) for t in TOPICS], dtype=float) + 0.05 * rng.random(len(TOPICS))
        out.append(list(vec))
    return out


def _para(topic: str, n: int, k: int = 0) -> Paragraph:
    text = " ".join(f"Sentence {k + i} is about {topic} in the year." for i in range(n))
    return Paragraph(text, [1], ["Item 7. MD&A"])


def test_cut_falls_at_the_topic_shift() -> None:
    paras = [_para("revenue", 4), _para("revenue", 3, 4), _para("litigation", 4)]
    chunks = semantic_chunks(paras, embed=topic_embed, chunk_tokens=400, overlap_tokens=0, merge_threshold=0.99)
    assert len(chunks) == 2
    assert "litigation" not in chunks[0].text and "revenue" not in chunks[1].text


def test_merge_pass_joins_same_topic_segments_up_to_the_budget() -> None:
    # Each sentence its own topic flip would cut everywhere; similar neighbours merge back while they fit.
    paras = [_para("revenue", 2), _para("pension", 1), _para("revenue", 2, 3), _para("litigation", 6)]
    loose = semantic_chunks(
        paras, embed=topic_embed, chunk_tokens=400, overlap_tokens=0, percentile=0.0, merge_threshold=2
    )
    merged = semantic_chunks(paras, embed=topic_embed, chunk_tokens=400, overlap_tokens=0, percentile=0.0)
    assert len(merged) < len(loose)
    small = semantic_chunks(paras, embed=topic_embed, chunk_tokens=30, overlap_tokens=0, percentile=0.0)
    assert all(c.n_tokens <= 30 for c in small)


def test_headings_are_always_cuts_and_provenance_is_kept() -> None:
    heading = Paragraph("Legal Proceedings", [2], ["Item 3. Legal Proceedings"], is_heading=True)
    paras = [_para("revenue", 3), heading, Paragraph("Revenue revenue revenue grew.", [2], ["Item 3"])]
    chunks = semantic_chunks(paras, embed=topic_embed, chunk_tokens=400, overlap_tokens=0, merge_threshold=0.0)
    assert chunks[-1].text.startswith("Legal Proceedings") and chunks[-1].pages == [2]
    assert chunks[0].pages == [1] and chunks[0].section_path == ["Item 7. MD&A"]


def test_breakpoints_use_the_percentile_of_consecutive_distances() -> None:
    vectors = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [1, 0]], dtype=float)
    assert breakpoints(vectors, 0.5) == [2, 4]
    assert breakpoints(vectors, 1.0) == []


class _StandInEmbedder:
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        vectors = topic_embed([d.content or "" for d in documents])
        return {"documents": [replace(d, embedding=v) for d, v in zip(documents, vectors, strict=True)]}


def test_filing_splitter_semantic_mode_round_trips_and_chunks_the_filing() -> None:
    splitter = FilingSplitter(chunking="semantic", semantic_percentile=0.9, term_stats=False, tag_statements=False)
    restored = FilingSplitter.from_dict(splitter.to_dict())
    assert (restored.chunking, restored.semantic_percentile) == ("semantic", 0.9)
    with pytest.raises(ValueError, match="chunking"):
        FilingSplitter(chunking="paragraph")  # type: ignore[arg-type]
    splitter._embedder = _StandInEmbedder()  # the real model is exercised by the integration test
    docs = FilingConverter(ocr=False).run(sources=[FIXTURES / "pepsico-8k-2023-05-05.pdf"])["documents"]
    semantic = splitter.run(documents=docs)["documents"]
    default = FilingSplitter(term_stats=False, tag_statements=False).run(documents=docs)["documents"]
    text = [d for d in semantic if d.meta["modality"] == "text"]
    assert text and all(d.meta["item"] for d in text)
    # Same tables either way; only the text chunking differs.
    assert [d.content for d in semantic if d.meta["modality"] == "table"] == [
        d.content for d in default if d.meta["modality"] == "table"
    ]


@pytest.mark.integration
def test_semantic_mode_with_the_bundled_embedder() -> None:
    docs = FilingConverter(ocr=False).run(sources=[FIXTURES / "pepsico-8k-2023-05-05.pdf"])["documents"]
    splitter = FilingSplitter(chunking="semantic", term_stats=False, tag_statements=False)
    splitter.warm_up()
    chunks = splitter.run(documents=docs)["documents"]
    assert any(d.meta["modality"] == "text" for d in chunks)
    assert all(len(d.content.split()) <= 400 for d in chunks if d.meta["modality"] == "text")
