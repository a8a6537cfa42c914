"""What the splitter makes of a filing Document: its layout and provenance, each chunk's meta, the indexing run's id,
and the filing node.

- ``parsed_filing``, ``filing_provenance``: the Document read as a ``ParsedFiling`` (the converter's layout
  elements, else its text's lines) and its filing fields and registrant identity (detected where missing).

- ``chunk_meta``: the provenance contract of one chunk record (filing fields, Item, section path, pages, modality,
  table) plus its OCR flags, figure box, parsed table block and primary-statement tag.
- ``indexing_run_id``: a hash of the filing's content and the splitting parameters. Identical re-indexing rewrites
  the same nodes; a changed filing or changed parameters give a new run, which ``FilingWriter`` switches to.
- ``build_filing_node``: the filing node (``schema.FilingNode``): Items with their pages and chunk counts, chunks per
  modality, the registrant's identity, the source's hash and skipped pages, and FLAM's term statistics per Item (and
  per section below the Item when asked) counted with the lexicon.

No Haystack import: ``FilingSplitter`` wraps the results into Documents.
"""

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from haystack_fin.core import schema
from haystack_fin.core.ingest.filing_meta import detect_filing_meta
from haystack_fin.core.ingest.layout import Element, ParsedFiling
from haystack_fin.core.ingest.structure import SECTION_DEPTH, ChunkRecord, FilingStructure
from haystack_fin.core.lexicon import Lexicon
from haystack_fin.core.statements import classify_statement_table, statement_section_path
from haystack_fin.core.text import normalize_line

# Sections whose term statistics are kept per Item (``section_term_counts``). The filing node is read on every
# routed query, so its size is bounded; a 10-K's Item 8 has 20-30 notes plus their first sub-headings. Beyond the
# cap the sections with the fewest lexicon terms go: smoothing shrinks their relative frequency the most.
MAX_SECTIONS_PER_ITEM = 64
# Node ids carry the run: a run id of a store written before they did must never come back, or a re-index would add
# run-scoped ids next to the old ones under the same run instead of replacing them.
_RUN_SALT = b"run-scoped-ids/"


def elements_from_text(content: str) -> list[Element]:
    """Layout elements for a Document that came from another converter: pages split on form feeds, one element
    per non-empty line, short all-caps lines marked as headings."""
    elements: list[Element] = []
    for page_no, page in enumerate(content.split("\f"), start=1):
        for raw in page.split("\n"):
            line = normalize_line(raw)
            if not line:
                continue
            letters = [c for c in line if c.isalpha()]
            caps = len(letters) >= 4 and sum(c.isupper() for c in letters) >= 0.8 * len(letters)
            elements.append(Element("text", line, page_no, is_heading=caps and len(line.split()) <= 14))
    return elements


def parsed_filing(content: str | None, meta: Mapping[str, Any], doc_id: str) -> ParsedFiling:
    """A filing Document (its text, meta and id) as the splitter reads it: the converter's layout elements from
    ``meta["elements"]``, else ``elements_from_text``; the page count and the source path."""
    raw_elements = meta.get(schema.ELEMENTS)
    elements = (
        [Element.from_dict(e) for e in raw_elements] if raw_elements is not None else elements_from_text(content or "")
    )
    pages = content.split("\f") if content else []
    n_pages = int(meta.get(schema.N_PAGES) or max((e.pages[-1] for e in elements), default=len(pages)))
    source_path = str(meta.get(schema.SOURCE_PATH) or meta.get("file_path") or doc_id)
    return ParsedFiling(source_path, n_pages, elements, page_texts=pages)


def filing_provenance(
    meta: Mapping[str, Any], doc_id: str, parsed: ParsedFiling
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The filing's provenance (copied to every chunk) and its registrant identity (filing node only): the
    Document's own fields, completed by ``detect_filing_meta`` when company, form, period or identity are
    missing."""
    provenance = {k: meta[k] for k in schema.FILING_FIELDS if meta.get(k) not in (None, "")}
    identity = {k: meta[k] for k in schema.IDENTITY_FIELDS if meta.get(k)}
    if not {schema.COMPANY, schema.FORM, schema.PERIOD} <= provenance.keys() or not identity:
        detected = detect_filing_meta(parsed.page_texts, Path(parsed.source_path).name).to_dict()
        for key, value in detected.items():
            if key in schema.FILING_FIELDS and value not in (None, "") and key not in provenance:
                provenance[key] = value
            elif key in schema.IDENTITY_FIELDS and value and key not in identity:
                identity[key] = value
    provenance.setdefault(schema.FILING_ID, doc_id)
    provenance.setdefault(schema.SOURCE_PATH, parsed.source_path)
    for key in (schema.COMPANY, schema.FORM, schema.PERIOD):
        provenance.setdefault(key, "")
    return provenance, identity


def drop_chunks(structure: FilingStructure, drop: Callable[[ChunkRecord], bool]) -> None:
    """Remove the chunk records ``drop`` selects from ``structure``, keeping each section's ``n_chunks`` right."""
    # Chunks come in Item order, n_chunks per section. Counting per section, not per item code, keeps a code that
    # occurs twice right (a 10-K's Item 8 both in the index and again on its F-pages after Item 15).
    kept: list[ChunkRecord] = []
    start = 0
    for item in structure.items:
        section = structure.chunks[start : start + item.n_chunks]
        start += item.n_chunks
        survivors = [c for c in section if not drop(c)]
        item.n_chunks = len(survivors)
        kept.extend(survivors)
    structure.chunks = kept


def indexing_run_id(meta: Mapping[str, Any], structure: FilingStructure, parameters: Sequence[str]) -> str:
    """The run id of one indexing of a filing: its provenance, the splitting ``parameters`` (every setting that
    changes the stored nodes, as strings) and every chunk's text."""
    h = hashlib.sha256()
    h.update(_RUN_SALT)
    h.update(json.dumps(sorted((k, str(v)) for k, v in meta.items())).encode())
    h.update("/".join(parameters).encode())
    for c in structure.chunks:
        h.update(c.content.encode("utf-8", "replace"))
    return h.hexdigest()[:16]


def chunk_context(meta: Mapping[str, Any], section_path: Sequence[str]) -> str:
    """ "company form period | section path": what ``meta_fields_to_embed=["context"]`` embeds with a chunk."""
    head = " ".join(str(meta.get(k) or "") for k in (schema.COMPANY, schema.FORM, schema.PERIOD)).strip()
    return f"{head} | {' > '.join(section_path)}"[:300]


def _statement_of(meta: Mapping[str, Any], rec: ChunkRecord, statements: Lexicon) -> tuple[str, str] | None:
    """The primary statement a table block is, with the caption naming it: its title, else the nearest line above it
    on its page (a statement's heading when the title the layout found is a column header); None for other blocks."""
    if rec.table is None:
        return None
    form = str(meta[schema.FORM])
    captions = dict.fromkeys([rec.table_title, *reversed(rec.table_captions)])  # the title is often one
    return next(
        (
            (kind, c)
            for c in captions
            if (kind := classify_statement_table(c, rec.table_rows, rec.item, form, statements))
        ),
        None,
    )


def chunk_meta(
    meta: Mapping[str, Any], rec: ChunkRecord, index: int, run_id: str, statements: Lexicon | None = None
) -> dict[str, Any]:
    """The meta of chunk ``index`` of a filing: ``meta`` (the filing's provenance) and the record's own fields; a
    table block of a primary statement gets its ``statement`` kind when ``statements`` (a lexicon) is given
    (``_statement_of``), and its section path ends in the caption naming it (``statement_section_path``)."""
    section_path = list(rec.section_path)
    statement = None
    if statements is not None and (statement := _statement_of(meta, rec, statements)):
        section_path = statement_section_path(section_path, statement[1], statements)
    out: dict[str, Any] = {
        **meta,
        schema.NODE_TYPE: schema.NodeType.CHUNK.value,
        schema.ITEM: rec.item,
        schema.ITEM_TITLE: rec.item_title,
        schema.PART: rec.part,
        schema.SECTION_PATH: section_path,
        schema.PAGE_NUMBERS: list(rec.page_numbers),
        schema.MODALITY: rec.modality,
        schema.TABLE_ID: rec.table_id or None,
        schema.CHUNK_INDEX: index,
        schema.INDEX_RUN: run_id,
        schema.CONTEXT: chunk_context(meta, section_path),
    }
    if rec.ocr:
        out[schema.OCR] = True
        out[schema.OCR_CONFIDENCE] = rec.ocr_confidence
        key = schema.OCR_SUSPECT_CELLS if rec.table is not None else schema.OCR_SUSPECT_NUMBERS
        out[key] = [list(s) for s in rec.ocr_suspects]
    if rec.bbox is not None:
        out[schema.BBOX] = list(rec.bbox)
    if rec.image is not None:
        out[schema.IMAGE] = rec.image
    if rec.table is not None:
        out[schema.TABLE_JSON] = rec.table
        out[schema.TABLE_BLOCK] = rec.table_block
        out[schema.TABLE_SUMMARY] = rec.table_summary
    if statement is not None:
        out[schema.STATEMENT] = statement[0]
    return out


def item_term_counts(structure: FilingStructure, lexicon: Lexicon) -> dict[str, dict[str, int]]:
    """``{item: {cluster: count}}`` over each Item's text; an Item split in two (Item 8 on F-pages) sums its parts."""
    counts: dict[str, dict[str, int]] = {}
    for it in structure.items:
        item_counts = counts.setdefault(it.item, {})
        for cluster, n in lexicon.count_cluster_terms(it.text).items():
            item_counts[cluster] = item_counts.get(cluster, 0) + n
    return counts


def section_term_counts(
    structure: FilingStructure, lexicon: Lexicon, max_sections: int = MAX_SECTIONS_PER_ITEM
) -> dict[str, dict[str, dict[str, int]]]:
    """``{item: {heading: {cluster: count}}}`` for the headings of the first two levels under each Item title
    (``ItemSummary.sections``), counted like the Items; only sections with chunks under them (in their section
    path) and at least one counted term, at most ``max_sections`` per Item."""
    # Headings some chunk carries in its section path: a heading directly followed by another one, or whose text
    # went into a chunk that started under the previous heading, has nothing to retrieve under it.
    reachable = {(c.item, h) for c in structure.chunks for h in c.section_path[1 : 1 + SECTION_DEPTH]}
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for it in structure.items:
        by_heading = counts.setdefault(it.item, {})
        for heading, text in it.sections.items():
            if (it.item, heading) not in reachable:
                continue
            section_counts = by_heading.setdefault(heading, {})
            for cluster, n in lexicon.count_cluster_terms(text).items():
                section_counts[cluster] = section_counts.get(cluster, 0) + n
    capped: dict[str, dict[str, dict[str, int]]] = {}
    for item, by_heading in counts.items():
        counted = [(heading, c) for heading, c in by_heading.items() if c]
        if len(counted) > max_sections:
            # Keep the sections with the most lexicon terms (filing order among them): see MAX_SECTIONS_PER_ITEM.
            keep = sorted(range(len(counted)), key=lambda i: -sum(counted[i][1].values()))[:max_sections]
            counted = [counted[i] for i in sorted(keep)]
        if counted:
            capped[item] = dict(counted)
    return capped


def build_filing_node(
    meta: Mapping[str, Any],
    structure: FilingStructure,
    n_pages: int,
    run_id: str,
    source: Mapping[str, Any],
    identity: Mapping[str, Any] | None = None,
    term_lexicon: Lexicon | None = None,
    section_stats: bool = False,
) -> schema.FilingNode:
    """The filing node of one indexing run. ``source``: the converter's meta (the file's hash, skipped pages);
    ``identity``: the registrant's fields (``schema.IDENTITY_FIELDS``); with ``term_lexicon`` FLAM's term counts per
    Item, and per section below the Item when ``section_stats``."""
    by_modality = {m.value: 0 for m in schema.Modality}
    for c in structure.chunks:
        by_modality[c.modality] += 1
    items = [
        schema.FilingItem(
            item=it.item,
            title=it.title,
            part=it.part,
            start_page=it.start_page,
            end_page=it.end_page,
            n_chunks=it.n_chunks,
        )
        for it in structure.items
    ]
    # Provenance values pass through as the chunks carry them (a caller's --meta value is not re-typed here).
    node = schema.FilingNode(
        filing_id=meta[schema.FILING_ID],
        company=meta[schema.COMPANY],
        form=meta[schema.FORM],
        period=meta[schema.PERIOD],
        source_path=meta[schema.SOURCE_PATH],
        fiscal_year=meta.get(schema.FISCAL_YEAR),
        fiscal_quarter=meta.get(schema.FISCAL_QUARTER),
        period_end=meta.get(schema.PERIOD_END, ""),
        ticker=meta.get(schema.TICKER, ""),
        n_pages=n_pages,
        items=items,
        n_chunks_by_modality=by_modality,
        index_run=run_id,
        source_sha256=str(source.get(schema.SOURCE_SHA256) or ""),
        skipped_pages=[int(p) for p in source.get(schema.SKIPPED_PAGES) or ()],
    )
    # The registrant's identity through the node's own reader, which types each field.
    known = schema.FilingNode.from_meta({**(identity or {}), schema.FILING_ID: node.filing_id})
    for key in schema.IDENTITY_FIELDS:
        setattr(node, key, getattr(known, key))
    if term_lexicon is not None:
        node.item_term_counts = item_term_counts(structure, term_lexicon)
        node.item_term_totals = {item: sum(c.values()) for item, c in node.item_term_counts.items()}
        if section_stats:
            node.section_term_counts = section_term_counts(structure, term_lexicon)
            node.section_term_totals = {
                item: {heading: sum(c.values()) for heading, c in by_heading.items()}
                for item, by_heading in node.section_term_counts.items()
            }
    return node


def filing_node_text(node: schema.FilingNode) -> str:
    """The filing node's content: "company form period" and one line per Item with its pages."""
    lines = [f"{node.company} {node.form} {node.period}".strip()]
    lines += [f"Item {it['item']}: {it['title']} (pages {it['start_page']}-{it['end_page']})" for it in node.items]
    return "\n".join(lines)
