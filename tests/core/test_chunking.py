import pytest

from haystack_fin.core.ingest.chunking import Paragraph, chunk_paragraphs
from haystack_fin.core.text import estimate_tokens, normalize_whitespace, split_sentences


def _sentence(i: int, words: int = 12) -> str:
    return "Revenue " + " ".join(f"w{i}x{j}" for j in range(words - 2)) + " grew."


def test_normalize_whitespace_handles_nbsp_and_zero_width():
    assert normalize_whitespace("Net\u00a0sales\u2009grew\u200b  5%\u00a0\n  next") == "Net sales grew 5%\nnext"


def test_split_sentences_keeps_abbreviations():
    text = "Best Buy Co., Inc. sells in the U.S. and Canada. Revenue rose 5%. Mr. Barry said so."
    assert split_sentences(text) == [
        "Best Buy Co., Inc. sells in the U.S. and Canada.",
        "Revenue rose 5%.",
        "Mr. Barry said so.",
    ]


def test_chunks_respect_budget_and_sentence_boundaries():
    paragraphs = [Paragraph(" ".join(_sentence(p * 10 + s) for s in range(6)), [p + 1], ["Item 7"]) for p in range(8)]
    chunks = chunk_paragraphs(paragraphs, chunk_tokens=100, overlap_tokens=20)
    assert len(chunks) > 4
    for chunk in chunks:
        assert estimate_tokens(chunk.text) <= 100
        assert chunk.text.endswith("grew.")  # never cut inside a sentence
    # every sentence appears in some chunk, in order
    joined = " ".join(c.text for c in chunks)
    for p in range(8):
        for s in range(6):
            assert _sentence(p * 10 + s) in joined


def test_overlap_repeats_trailing_sentence():
    paragraphs = [Paragraph(" ".join(_sentence(s) for s in range(20)), [3], ["Item 1"])]
    chunks = chunk_paragraphs(paragraphs, chunk_tokens=60, overlap_tokens=20)
    assert len(chunks) >= 2
    last_sentence_of_first = split_sentences(chunks[0].text)[-1]
    assert chunks[1].text.startswith(last_sentence_of_first)


def test_heading_starts_new_chunk_and_path_follows():
    paragraphs = [
        Paragraph(" ".join(_sentence(s) for s in range(5)), [1], ["Item 7"]),
        Paragraph("Liquidity and Capital Resources", [2], ["Item 7", "Liquidity and Capital Resources"], True),
        Paragraph(" ".join(_sentence(s + 50) for s in range(3)), [2], ["Item 7", "Liquidity and Capital Resources"]),
    ]
    chunks = chunk_paragraphs(paragraphs, chunk_tokens=80, overlap_tokens=10)
    assert chunks[-1].text.startswith("Liquidity and Capital Resources")
    assert chunks[-1].section_path == ["Item 7", "Liquidity and Capital Resources"]
    assert chunks[-1].pages == [2]


def test_long_sentence_is_cut_between_words():
    chunks = chunk_paragraphs([Paragraph(" ".join(f"w{i}" for i in range(500)), [1], ["x"])], 64, 0)
    assert all(estimate_tokens(c.text) <= 64 for c in chunks)
    assert " ".join(c.text for c in chunks).split() == [f"w{i}" for i in range(500)]


def test_invalid_sizes_raise():
    with pytest.raises(ValueError, match="overlap_tokens"):
        chunk_paragraphs([], 50, 50)


def test_a_word_longer_than_the_budget_is_cut_between_characters() -> None:
    """A 200,000-character run without spaces (a filler line of an HTML filing) must not become one chunk."""
    para = Paragraph("Intro text. " + "x" * 200_000 + " tail.", [3], ["Item 7"])
    chunks = chunk_paragraphs([para], chunk_tokens=200, overlap_tokens=0)
    assert len(chunks) > 100
    assert max(estimate_tokens(c.text) for c in chunks) <= 200
    assert "".join(c.text for c in chunks).replace(" ", "").replace("\n", "") == para.text.replace(" ", "")


def test_a_heading_longer_than_the_budget_is_cut() -> None:
    para = Paragraph("H" * 50_000, [1], ["Item 1"], is_heading=True)
    chunks = chunk_paragraphs([para], chunk_tokens=200, overlap_tokens=0)
    assert max(estimate_tokens(c.text) for c in chunks) <= 200
