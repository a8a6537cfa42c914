"""The one place that names the index's meta fields, node types and modalities.

Everything that writes or reads the index (splitter, writer, retrievers, CLI, evaluation) takes field names from
here, so the provenance contract of design.md lives in a single module.
"""

from enum import StrEnum


class NodeType(StrEnum):
    CHUNK = "chunk"
    SUMMARY = "summary"
    QUESTION = "question"
    FILING = "filing"


class Modality(StrEnum):
    TEXT = "text"
    TABLE = "table"
    IMAGE = "image"


# Provenance carried by every chunk (design.md contract).
FILING_ID = "filing_id"
COMPANY = "company"
FORM = "form"
PERIOD = "period"
ITEM = "item"
ITEM_TITLE = "item_title"
SECTION_PATH = "section_path"
PAGE_NUMBERS = "page_numbers"
MODALITY = "modality"
TABLE_ID = "table_id"
SOURCE_PATH = "source_path"

PROVENANCE_FIELDS: tuple[str, ...] = (
    FILING_ID,
    COMPANY,
    FORM,
    PERIOD,
    ITEM,
    ITEM_TITLE,
    SECTION_PATH,
    PAGE_NUMBERS,
    MODALITY,
    TABLE_ID,
    SOURCE_PATH,
)

# Further meta.
NODE_TYPE = "node_type"
PART = "part"
FISCAL_YEAR = "fiscal_year"
FISCAL_QUARTER = "fiscal_quarter"
PERIOD_END = "period_end"
TICKER = "ticker"
CHUNK_INDEX = "chunk_index"
TABLE_JSON = "table"
STATEMENT = "statement"  # a primary-statement table's kind ("balance_sheet", ...; core/statements.py)
INDEX_RUN = "index_run"
# Chunks read by OCR from scanned pages (core/ingest/ocr.py): the flag, the mean recognition confidence (0-1), and the
# numbers that fail the plausibility check, as [token, reason] (text) or [row, col, text, reason] (table blocks,
# row indexing meta["table"]["rows"]).
OCR = "ocr"
OCR_CONFIDENCE = "ocr_confidence"
OCR_SUSPECT_NUMBERS = "ocr_suspect_numbers"
OCR_SUSPECT_CELLS = "ocr_suspect_cells"
N_PAGES = "n_pages"
ITEMS = "items"
N_CHUNKS_BY_MODALITY = "n_chunks_by_modality"
ITEM_TERM_COUNTS = "item_term_counts"
ITEM_TERM_TOTALS = "item_term_totals"

# Key under which converters hand parsed layout elements to FilingSplitter (never stored in the index).
ELEMENTS = "filing_elements"

# Tree meta mirrors Haystack's HierarchicalDocumentSplitter so AutoMergingRetriever interoperates.
TREE_LEVEL = "__level"
TREE_PARENT_ID = "__parent_id"
TREE_CHILDREN_IDS = "__children_ids"
# AutoMergingRetriever requires __block_size on the leaves it merges (here: estimated word pieces covered).
TREE_BLOCK_SIZE = "__block_size"
TWIN_ID = "twin_id"  # a summary node's question twin and back
LEAF_IDS = "leaf_ids"  # every chunk below a tree node
TREE_PARENT_IDS = "tree_parent_ids"  # a chunk's parents (soft clustering: more than one)
GENERATED_BY = "generated_by"  # "extractive" | "template" | "llm"

# Text embedded with a chunk when meta_fields_to_embed=["context"]: "company form period | section path".
CONTEXT = "context"

# Query-time meta added to returned Documents (explainability).
BUDGET_K = "budget_k"  # the FLAM budget k_i of the chunk's Item
RETRIEVAL = "retrieval"  # DualTreeRetriever: bm25/dense scores, trees and tree paths
RERANK = "rerank"  # TwoStageRanker: stage scores and ranks
WINDOW = "window"  # PassageWindow: chunk ids merged into the passage
CHUNK_TEXT = "chunk_text"  # PassageWindow: the hit's own text

# Filing metadata a caller may override (CLI --meta key=value, converter meta=...).
OVERRIDABLE_FILING_FIELDS: tuple[str, ...] = (
    FILING_ID,
    COMPANY,
    FORM,
    PERIOD,
    FISCAL_YEAR,
    FISCAL_QUARTER,
    PERIOD_END,
    TICKER,
)
