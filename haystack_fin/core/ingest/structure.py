"""From parsed layout to indexable chunks: page cleanup, Item sections, heading paths, text and table chunks.

This is FilingSplitter's algorithm, kept free of Haystack so it can be tested and reused alone.
"""

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from haystack_fin.core import schema
from haystack_fin.core.ingest.chunking import Paragraph, TextChunk, chunk_paragraphs
from haystack_fin.core.ingest.cleanup import join_page_breaks, remove_page_furniture
from haystack_fin.core.ingest.items import (
    COVER_CODE,
    EXHIBIT_PREFIX,
    Section,
    detect_heading_sections,
    detect_item_sections,
    part_of,
)
from haystack_fin.core.ingest.layout import Element, ParsedFiling, TableData
from haystack_fin.core.ingest.ocr import suspect_numbers, suspect_table_cells
from haystack_fin.core.ingest.table_blocks import block_to_json, block_to_markdown, split_table_blocks, table_summary
from haystack_fin.core.log import get_logger
from haystack_fin.core.retrieval.filing_profile import form_family
from haystack_fin.core.schema import Modality
from haystack_fin.core.table_cells import detect_units

logger = get_logger(__name__)

# (paragraphs of one run, chunk_tokens, overlap_tokens) -> chunks: ``chunk_paragraphs`` or a semantic chunker.
TextChunker = Callable[[list[Paragraph], int, int], list[TextChunk]]

_MAX_HEADING_CHARS = 120
_MIN_CAPTION_WORDS = 3
# A statement's heading sits a few short lines above its table (company name, title, periods, units).
_CAPTIONS = 4
_MAX_CAPTION_WORDS = 20
# Heading levels below the Item title that ItemSummary.sections covers. One level is the note or MD&A subsection
# in most filings; two because many filings put the notes under one "Notes to Consolidated Financial Statements"
# heading (Netflix's 10-K: "NETFLIX, INC. NOTES TO CONSOLIDATED FINANCIAL STATEMENTS" > "10. Income Taxes").
SECTION_DEPTH = 2


# A statement's title set in title case opens with the word filers put before every statement's name; the period
# that follows it in the cell ("Years ended December 31, 2021") is not part of the title.
_STATEMENT_OPENER = re.compile(r"(?:condensed\s+)?(?:consolidated|combined)\b", re.IGNORECASE)
_PERIOD_WORD = re.compile(
    r"(?:years?|for|as|at|three|six|nine|twelve|quarters?|periods?|months?|weeks?|january|february|march|april|"
    r"may|june|july|august|september|october|november|december|\(?\d.*)",
    re.IGNORECASE,
)


def _header_cell_titles(table: TableData) -> list[str]:
    """Titles set in the header cells: a cell's opening capitals, three words or more ("THE COCA-COLA COMPANY AND
    SUBSIDIARIES CONSOLIDATED STATEMENTS OF CASH FLOWS 2017"; "CONSOLIDATED STATEMENT OF INCOME" of "CONSOLIDATED
    STATEMENT OF INCOME Year Ended December 31, 2022"), unlike "Year Ended December 31,"; or a cell opening with
    "Consolidated" and naming a period, up to the period ("Consolidated Statements of Changes in Equity" of
    "Consolidated Statements of Changes in Equity Years ended December 31, 2021, ...")."""
    titles = []
    for cell in (c.strip() for row in table.rows[: table.header_rows] for c in row):
        words = cell.split()
        n = next((i for i, w in enumerate(words) if w != w.upper()), len(words))  # "2017", "&" and "—" are caps
        if sum(any(ch.isalpha() for ch in w) for w in words[:n]) >= 3:
            titles.append(" ".join(words[:n]))
        elif _STATEMENT_OPENER.match(cell):
            # Only with its period after it: "Consolidated Balance Sheet Classification" heads a note's column.
            end = next((i for i, w in enumerate(words) if i and _PERIOD_WORD.fullmatch(w)), None)
            if end is not None:
                titles.append(" ".join(words[:end]))
    return list(dict.fromkeys(titles))


@dataclass
class ChunkRecord:
    """One retrievable passage with its structural provenance (filing-level fields are added by the caller)."""

    content: str
    modality: str
    item: str
    item_title: str
    part: str
    section_path: list[str]
    page_numbers: list[int]
    table_id: str = ""
    table: dict[str, Any] | None = None
    table_block: int | None = None
    table_title: str = ""
    # The short text lines above the table on its page (since the page's previous table), nearest last: where a
    # statement's heading is when the table's own title is a column header ("ASSETS", "Years ended ...").
    table_captions: list[str] = field(default_factory=list)
    table_summary: str = ""  # title, units, columns, row labels: embedded before the block (table_blocks.table_summary)
    table_rows: int = 0  # data rows of the whole table, not of this block
    ocr: bool = False  # read by OCR from a scanned page
    ocr_confidence: float | None = None
    # Implausible OCR'd numbers: [token, reason] (text) or [row, col, text, reason] (table block data rows).
    ocr_suspects: list[list[Any]] = field(default_factory=list)
    bbox: list[float] | None = None  # image chunks: the figure's box on its page
    image: dict[str, Any] | None = None  # image chunks: layout.ImageData as a dict


@dataclass
class ItemSummary:
    item: str
    title: str
    part: str
    start_page: int
    end_page: int
    n_chunks: int = 0
    text: str = field(default="", repr=False)
    # The text under each heading of the first ``SECTION_DEPTH`` levels below the Item title (``section_path[1:3]``:
    # an MD&A subsection, a note, or a note under a "Notes to Consolidated Financial Statements" heading), in order;
    # a heading that occurs twice in the Item sums its texts. Text before the first heading is in none.
    sections: dict[str, str] = field(default_factory=dict, repr=False)


@dataclass
class FilingStructure:
    # chunks come in the order of items, item.n_chunks of them per section (an item code can occur twice)
    chunks: list[ChunkRecord]
    items: list[ItemSummary]


def item_label(section: Section, family: str) -> str:
    """The human label that heads every section path: "Item 7A. Quantitative ...", "Part II, Item 1A. ..."."""
    if section.item == COVER_CODE or section.item.startswith(("S", EXHIBIT_PREFIX)):
        return section.title
    if family == "10-Q":
        part, number = section.item.split("-", 1)
        return f"Part {part}, Item {number}. {section.title}"
    return f"Item {section.item}. {section.title}"


def _heading_rank(el: Element) -> tuple[float, bool, bool]:
    letters = [c for c in el.text if c.isalpha()]
    caps = bool(letters) and sum(c.isupper() for c in letters) >= 0.8 * len(letters)
    return (round(el.font_size), caps, el.bold)


def _section_chunks(
    elements: list[Element],
    section: Section,
    label: str,
    filing_id: str,
    table_counter: list[int],
    chunk_tokens: int,
    overlap_tokens: int,
    max_table_rows: int,
    text_chunker: TextChunker = chunk_paragraphs,
    section_texts: dict[str, list[str]] | None = None,
) -> list[ChunkRecord]:
    """The chunks of one Item; ``section_texts``, when given, receives the text (and table text) of every element
    under each heading of the first ``SECTION_DEPTH`` levels (``path[1:3]``), as the Item's text is joined for
    its term counts."""
    stack: list[tuple[tuple[float, bool, bool], str]] = []
    paragraphs: list[Paragraph] = []
    records: list[ChunkRecord] = []
    last_texts: list[str] = []
    above: list[Element] = []  # text elements of the current page since its last table

    def flush_text() -> None:
        for chunk in text_chunker(list(paragraphs), chunk_tokens, overlap_tokens) if paragraphs else []:
            records.append(
                ChunkRecord(
                    chunk.text,
                    Modality.TEXT.value,
                    section.item,
                    section.title,
                    section.part,
                    chunk.section_path,
                    chunk.pages,
                    ocr=chunk.ocr,
                    ocr_confidence=chunk.ocr_confidence,
                    # Only numbers of OCR'd text are checked: a text layer's numbers are what the filer wrote.
                    ocr_suspects=suspect_numbers(chunk.text) if chunk.ocr else [],
                )
            )
        paragraphs.clear()

    for offset, el in enumerate(elements[section.start : section.end]):
        path = [label, *(text for _, text in stack)]
        above = [a for a in above if a.page == el.page]
        if el.kind == "text":
            is_heading = el.is_heading and len(el.text) <= _MAX_HEADING_CHARS
            if is_heading and offset > 0 and part_of(el.text) is None:
                rank = _heading_rank(el)
                while stack and stack[-1][0] <= rank:
                    stack.pop()
                stack.append((rank, el.text))
                path = [label, *(text for _, text in stack)]
            paragraphs.append(Paragraph(el.text, el.pages, path, is_heading, el.ocr, el.ocr_confidence))
            last_texts = [*last_texts[-2:], el.text]
            above.append(el)
        elif el.kind == "table" and el.table is not None and el.table.rows:
            flush_text()
            table_counter[0] += 1
            table_id = schema.table_id(filing_id, table_counter[0])
            title = el.table.title or (path[-1] if len(path) > 1 else "")
            units_label, multiplier = detect_units(el.table.units, title, *last_texts)
            units_text = el.table.units or (f"(in {units_label})" if units_label else "")
            captions = [a.text for a in above if len(a.text.split()) <= _MAX_CAPTION_WORDS][-_CAPTIONS:]
            # Tried after the lines above: a statement's title that the table finder merged into a header cell.
            captions = [*_header_cell_titles(el.table), *captions]
            above = []
            for block in split_table_blocks(el.table, max_table_rows):
                block_json = block_to_json(block, units_label, multiplier)
                records.append(
                    ChunkRecord(
                        block_to_markdown(block, title=title, units=units_text),
                        Modality.TABLE.value,
                        section.item,
                        section.title,
                        section.part,
                        path,
                        list(el.pages),
                        table_id=table_id,
                        table=block_json,
                        table_block=block.block_index,
                        table_title=title,
                        table_captions=captions,
                        table_summary=table_summary(title, units_text, block_json),
                        table_rows=len(el.table.rows),
                        ocr=el.ocr,
                        ocr_confidence=el.ocr_confidence,
                        ocr_suspects=suspect_table_cells(block.data_rows) if el.ocr else [],
                    )
                )
        elif el.kind == "image" and len(el.text.split()) >= _MIN_CAPTION_WORDS:
            image = el.image
            read = image is not None and bool(image.ocr_text)
            records.append(
                ChunkRecord(
                    f"[{'Chart' if image and image.kind == 'chart' else 'Image'}, page {el.page}] {el.text}",
                    Modality.IMAGE.value,
                    section.item,
                    section.title,
                    section.part,
                    path,
                    list(el.pages),
                    ocr=read,
                    ocr_confidence=image.ocr_confidence if image is not None and read else None,
                    ocr_suspects=suspect_numbers(image.ocr_text) if image is not None and read else [],
                    bbox=[round(v, 1) for v in el.bbox] if el.bbox else None,
                    image=asdict(image) if image is not None else None,
                )
            )
        if section_texts is not None and el.kind != "image":
            for heading in dict.fromkeys(path[1 : 1 + SECTION_DEPTH]):
                section_texts.setdefault(heading, []).append(el.text)
    flush_text()
    return records


def filing_sections(parsed: ParsedFiling, form: str) -> tuple[list[Element], list[Section]]:
    """A parsed filing's elements without page furniture, page breaks joined, and its Item sections (its top-level
    heading sections when it has no Items)."""
    elements = join_page_breaks(remove_page_furniture(parsed.elements))
    return elements, detect_item_sections(elements, form, parsed.elements) or detect_heading_sections(elements)


def structure_filing(
    parsed: ParsedFiling,
    form: str,
    filing_id: str,
    chunk_tokens: int = 200,
    overlap_tokens: int = 20,
    max_table_rows: int = 15,
    text_chunker: TextChunker = chunk_paragraphs,
    section_texts: bool = False,
) -> FilingStructure:
    """Clean pages, find Item (or heading) sections and cut every section into text, table and image chunks.

    :param parsed: the converter's output.
    :param form: the filing's form ("10-K", "10-Q", "8-K", ...); selects the Item catalog.
    :param filing_id: used to build table ids.
    :param text_chunker: packs each run of paragraphs (one Item, between tables) into text chunks; default
        ``chunk_paragraphs``, or ``semantic.semantic_chunks`` bound to an embedder.
    :param section_texts: also keep the text under each heading of the first ``SECTION_DEPTH`` levels of every
        Item (``ItemSummary.sections``, for per-section term counts); off, they stay empty.
    """
    elements, sections = filing_sections(parsed, form)
    family = form_family(form)
    table_counter = [0]
    chunks: list[ChunkRecord] = []
    items: list[ItemSummary] = []
    for section in sections:
        label = item_label(section, family)
        texts: dict[str, list[str]] | None = {} if section_texts else None
        records = _section_chunks(
            elements,
            section,
            label,
            filing_id,
            table_counter,
            chunk_tokens,
            overlap_tokens,
            max_table_rows,
            text_chunker,
            texts,
        )
        text = "\n".join(el.text for el in elements[section.start : section.end] if el.kind != "image")
        items.append(
            ItemSummary(
                section.item,
                section.title,
                section.part,
                section.start_page,
                section.end_page,
                len(records),
                text,
                {heading: "\n".join(parts) for heading, parts in (texts or {}).items()},
            )
        )
        chunks.extend(records)
    logger.debug(
        "{source}: {n_sections} sections, {n_chunks} chunks",
        source=parsed.source_path,
        n_sections=len(sections),
        n_chunks=len(chunks),
    )
    return FilingStructure(chunks, items)
