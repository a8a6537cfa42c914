"""Pack paragraphs into token-bounded text chunks that respect paragraph and sentence boundaries.

A chunk closes at a paragraph boundary once it is at least half full, otherwise it fills sentence by sentence;
only a single sentence longer than the budget is cut between words (and a single word longer than the budget,
such as a 200,000-character run without spaces, between characters). Overlap repeats the trailing sentences of
the previous chunk (never across a heading), so an answer that straddles a boundary is whole in one chunk.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from haystack_fin.core.text import estimate_tokens, split_sentences
from haystack_fin.core.validation import check_int


@dataclass
class Paragraph:
    """A paragraph (or heading) of one section with the pages it covers and its heading path."""

    text: str
    pages: list[int]
    section_path: list[str]
    is_heading: bool = False
    ocr: bool = False  # read by OCR from a scanned page
    ocr_confidence: float | None = None


@dataclass
class TextChunk:
    text: str
    pages: list[int]
    section_path: list[str]
    n_tokens: int = 0
    ocr: bool = False  # some of its text was read by OCR
    ocr_confidence: float | None = None  # mean over its OCR'd text, weighted by length


@dataclass
class _Piece:
    text: str
    pages: list[int]
    tokens: int
    section_path: list[str]
    para_start: bool = False
    is_heading: bool = False
    overlap: bool = field(default=False)
    ocr: bool = False
    ocr_confidence: float | None = None


def _cut_word(word: str, budget: int, count: Callable[[str], int]) -> list[str]:
    """A single word over the budget (a 200,000-character run without spaces) cut into slices within it."""
    out: list[str] = []
    size = max(1, len(word) * budget // max(count(word), 1))
    start = 0
    while start < len(word):
        piece = word[start : start + size]
        while len(piece) > 1 and count(piece) > budget:  # the proportional guess can be long for uneven words
            piece = piece[: len(piece) // 2]
        out.append(piece)
        start += len(piece)
    return out


def _split_long(text: str, budget: int, count: Callable[[str], int]) -> list[str]:
    words = [piece for word in text.split() for piece in _words_within(word, budget, count)]
    out: list[str] = []
    current: list[str] = []
    # The default counter's pre-tokens never span whitespace, so a run of words costs the sum of its words: a running
    # total replaces re-counting the whole run at every word (O(words x budget), minutes on a 2 MB line of ". . .").
    # Any other counter is asked about the joined run, as before.
    additive = count is estimate_tokens
    costs: dict[str, int] = {}  # words repeat (". . ." runs, numbers, "the"): count each distinct word once
    total = 0
    for word in words:
        cost = 0
        if additive:
            cost = costs.get(word, -1)
            if cost < 0:
                cost = costs[word] = count(word)
        if current and (total + cost if additive else count(" ".join([*current, word]))) > budget:
            out.append(" ".join(current))
            current = []
            total = 0
        current.append(word)
        total += cost
    if current:
        out.append(" ".join(current))
    return out


def _words_within(word: str, budget: int, count: Callable[[str], int]) -> list[str]:
    # Only words long enough to possibly exceed the budget are counted: the default counter's tokens (and a word-piece
    # tokenizer's) have at least one character each.
    return [word] if len(word) <= budget or count(word) <= budget else _cut_word(word, budget, count)


def _pieces(paragraphs: list[Paragraph], budget: int, count: Callable[[str], int]) -> list[_Piece]:
    pieces: list[_Piece] = []
    for para in paragraphs:
        # A heading is kept whole unless it alone is over the budget (a heading of one 100,000-character "word").
        heading = para.is_heading and count(para.text) <= budget
        sentences = [para.text] if heading else split_sentences(para.text)
        first = True
        for sentence in sentences:
            parts = [sentence] if count(sentence) <= budget else _split_long(sentence, budget, count)
            for part in parts:
                pieces.append(
                    _Piece(
                        part,
                        para.pages,
                        count(part),
                        para.section_path,
                        first,
                        heading,  # an over-long heading is cut like text, so its pieces are not headings
                        ocr=para.ocr,
                        ocr_confidence=para.ocr_confidence,
                    )
                )
                first = False
    return pieces


def _ocr_of(pieces: list[_Piece]) -> tuple[bool, float | None]:
    parts = [(p.ocr_confidence, len(p.text)) for p in pieces if p.ocr and p.ocr_confidence is not None]
    total = sum(n for _, n in parts)
    return any(p.ocr for p in pieces), (sum(c * n for c, n in parts) / total if total else None)


def _render(pieces: list[_Piece]) -> str:
    out = ""
    for piece in pieces:
        if not out:
            out = piece.text
        elif piece.para_start or piece.is_heading:
            out += "\n" + piece.text
        else:
            out += " " + piece.text
    return out


def check_chunking(
    chunk_tokens: int, overlap_tokens: int, max_table_rows: int, chunking: str, semantic_percentile: float
) -> None:
    """Validate the splitter's chunking parameters (``FilingSplitter``'s of the same names); ``ValueError`` names
    the first bad one."""
    check_int("chunk_tokens", chunk_tokens, 16)
    if not 0 <= overlap_tokens < chunk_tokens:
        raise ValueError(f"overlap_tokens must be >= 0 and < chunk_tokens ({chunk_tokens}), got {overlap_tokens}")
    check_int("max_table_rows", max_table_rows)
    if chunking not in ("sentence", "semantic"):
        raise ValueError(f"chunking must be 'sentence' or 'semantic', got {chunking!r}")
    if not 0.0 <= semantic_percentile <= 1.0:
        raise ValueError(f"semantic_percentile must be in [0, 1], got {semantic_percentile}")


def chunk_paragraphs(
    paragraphs: list[Paragraph],
    chunk_tokens: int = 200,
    overlap_tokens: int = 20,
    count_tokens: Callable[[str], int] = estimate_tokens,
) -> list[TextChunk]:
    """Pack the paragraphs of one section into chunks of at most ``chunk_tokens`` (estimated) tokens.

    :param paragraphs: the section's paragraphs and headings in reading order.
    :param chunk_tokens: token budget per chunk.
    :param overlap_tokens: at most this many tokens of trailing sentences repeated at the start of the next chunk.
    :param count_tokens: token counter; the default estimates word pieces without loading a tokenizer.
    """
    if chunk_tokens <= 0:
        raise ValueError(f"chunk_tokens must be positive, got {chunk_tokens}")
    if not 0 <= overlap_tokens < chunk_tokens:
        raise ValueError(f"overlap_tokens must be in [0, chunk_tokens), got {overlap_tokens}")
    pieces = _pieces(paragraphs, chunk_tokens, count_tokens)
    chunks: list[TextChunk] = []
    current: list[_Piece] = []
    size = 0
    min_fill = chunk_tokens // 2

    def emit(keep_overlap: bool) -> None:
        nonlocal current, size
        own = [p for p in current if not p.overlap]
        if own and (not all(p.is_heading for p in own) or not chunks):
            pages = sorted({pg for p in current for pg in p.pages})
            ocr, confidence = _ocr_of(current)
            chunks.append(TextChunk(_render(current), pages, own[0].section_path, size, ocr, confidence))
        elif own and chunks:
            # A trailing heading with no text after it is kept with the previous chunk's pages, not dropped.
            last = chunks[-1]
            last.text += "\n" + _render(own)
            if any(p.ocr for p in own) and not last.ocr:
                last.ocr, last.ocr_confidence = _ocr_of(own)
        carry: list[_Piece] = []
        if keep_overlap and overlap_tokens:
            total = 0
            for p in reversed(own):
                if p.is_heading or total + p.tokens > overlap_tokens:
                    break
                carry.insert(
                    0,
                    _Piece(
                        p.text, p.pages, p.tokens, p.section_path, p.para_start, False, True, p.ocr, p.ocr_confidence
                    ),
                )
                total += p.tokens
        current = carry
        size = sum(p.tokens for p in carry)

    for i, piece in enumerate(pieces):
        if piece.is_heading and size >= min_fill:
            emit(keep_overlap=False)
        elif piece.para_start and size >= min_fill:
            para_tokens = piece.tokens
            j = i + 1  # an index, not a slice: copying the rest of ``pieces`` per paragraph was quadratic
            while j < len(pieces) and not pieces[j].para_start:
                para_tokens += pieces[j].tokens
                j += 1
            if size + para_tokens > chunk_tokens:
                emit(keep_overlap=True)
        if size + piece.tokens > chunk_tokens and any(not p.overlap for p in current):
            emit(keep_overlap=True)
            if size + piece.tokens > chunk_tokens:  # the overlap itself leaves no room
                current, size = [], 0
        current.append(piece)
        size += piece.tokens
    emit(keep_overlap=False)
    return chunks
