"""The one place that names the index's meta fields, node types and modalities.

Everything that writes or reads the index (splitter, writer, retrievers, CLI, evaluation) takes field names from
here, so the provenance contract of design.md lives in a single module.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NotRequired, TypedDict


class NodeType(StrEnum):
    CHUNK = "chunk"
    SUMMARY = "summary"
    QUESTION = "question"
    FILING = "filing"
    # A write in progress (FilingWriter): written before a new indexing run's nodes, deleted once the filing node
    # names that run and the previous run is gone; one left in the store marks a write that was interrupted. It
    # has no vector and carries the filing's ``filing_id``, so readers of a filing's nodes must leave it out.
    PENDING = "pending"
    # A filing's small profile for the filing scope (FilingNode.profile_meta): what scope reads at start, without
    # the filing node's Items and FLAM statistics, whose size made reading thousands of filing nodes slow.
    PROFILE = "profile"


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
TABLE_BLOCK = "table_block"  # a table block's position inside its table (core/ingest/structure.py)
STATEMENT = "statement"  # a primary-statement table's kind ("balance_sheet", ...; core/statements.py)
INDEX_RUN = "index_run"
# A filing node's source file: sha256 of its bytes as read (a gzipped file: of the compressed bytes), and the pages
# left out because they have no text layer and OCR is not installed (1-based).
SOURCE_SHA256 = "source_sha256"
SKIPPED_PAGES = "skipped_pages"
# Chunks read by OCR from scanned pages (core/ingest/ocr.py): the flag, the mean recognition confidence (0-1), and the
# numbers that fail the plausibility check, as [token, reason] (text) or [row, col, text, reason] (table blocks,
# row indexing meta["table"]["rows"]).
OCR = "ocr"
OCR_CONFIDENCE = "ocr_confidence"
OCR_SUSPECT_NUMBERS = "ocr_suspect_numbers"
OCR_SUSPECT_CELLS = "ocr_suspect_cells"
# The filing graph (core/graph/): a chunk's entities (compact rows) and outgoing edges, each a JSON string,
# written at indexing (``graph.build.chunk_graph_meta``, FilingSplitter's ``graph_meta``), the extractor version and
# the lexicon fingerprint they were derived with (another version or lexicon is recomputed), and the query-time path
# that pulled a passage in.
GRAPH_ENTITIES = "graph_entities"
GRAPH_EDGES = "graph_edges"
GRAPH_VERSION = "graph_version"
GRAPH_LEXICON = "graph_lexicon"
GRAPH_META_FIELDS = (GRAPH_VERSION, GRAPH_LEXICON, GRAPH_ENTITIES, GRAPH_EDGES)
GRAPH = "graph"  # GraphExpander: {"score", "hops", "path": [edges], "anchors", "reason"}
# Image chunks (charts and images, core/ingest/figures.py): the figure's box on its page [x0, y0, x1, y1] in PDF
# points (PDF only), and {"kind": "raster"|"chart"|"html", "chart", "caption", "context", "labels", "alt",
# "ocr_text"} (layout.ImageData).
BBOX = "bbox"
IMAGE = "image"
N_PAGES = "n_pages"
ITEMS = "items"
N_CHUNKS_BY_MODALITY = "n_chunks_by_modality"
ITEM_TERM_COUNTS = "item_term_counts"
ITEM_TERM_TOTALS = "item_term_totals"
# The same below the Item, per heading of the first two levels under the Item title (``section_path[1:3]``: "NOTE
# 14: INCOME TAXES", "Liquidity and Capital Resources"): {item: {heading: {cluster id: count}}} and {item: {heading:
# total}}. Written only with FilingSplitter(section_term_stats=True).
SECTION_TERM_COUNTS = "section_term_counts"
SECTION_TERM_TOTALS = "section_term_totals"
# A filing node's FLAM term statistics: most of its size, read only by FlamRouter for the filings in scope.
FLAM_STATISTICS = (ITEM_TERM_COUNTS, ITEM_TERM_TOTALS, SECTION_TERM_COUNTS, SECTION_TERM_TOTALS)

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
# A table block's summary for its embedding (FinDocumentEmbedder meta_fields_to_embed=["table_summary"]): title,
# units, column headers and every row label, no numbers (core/ingest/table_blocks.table_summary).
TABLE_SUMMARY = "table_summary"
# A chat model's summary of a table or image chunk (ChunkSummarizer, optional), embedded with it when configured.
LLM_SUMMARY = "llm_summary"

# Query-time meta added to returned Documents (explainability).
BUDGET_K = "budget_k"  # the FLAM budget k_i of the chunk's Item
RETRIEVAL = "retrieval"  # DualTreeRetriever: bm25/dense scores, trees and tree paths
# DualTreeRetriever, GraphExpander: the passage's cosine to the question's vector, which the ranker and the fallback
# read instead of an embedding (candidates travel without their vectors).
QUERY_COSINE = "query_cosine"
RERANK = "rerank"  # TwoStageRanker: stage scores and ranks
WINDOW = "window"  # PassageWindow: chunk ids merged into the passage
CHUNK_TEXT = "chunk_text"  # PassageWindow: the hit's own text
FALLBACK = "fallback"  # ModalityThresholdFallback: {"cosine": the passage's cosine to the query, "tier"}

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

# Filing-level provenance: what a filing node carries and every chunk of the filing copies (FilingSplitter).
FILING_FIELDS: tuple[str, ...] = (*OVERRIDABLE_FILING_FIELDS, SOURCE_PATH)

# Who the registrant is, as the filing states it (core/ingest/registrant.py): on the filing node only, not copied to
# chunks. CIK (10 digits, from inline XBRL dei:EntityCentralIndexKey or an EDGAR header), every trading symbol of
# the cover's Section 12(b) table with its exchange ([[symbol, exchange], ...]), the SEC file numbers ("001-36743"),
# the legal name as printed on the cover and the former names the filing states.
CIK = "cik"
TICKERS = "tickers"
SECURITIES = "securities"
FILE_NUMBERS = "file_numbers"
IRS_NUMBER = "irs_number"
LEGAL_NAME = "legal_name"
FORMER_NAMES = "former_names"
IDENTITY_FIELDS: tuple[str, ...] = (CIK, TICKERS, SECURITIES, FILE_NUMBERS, IRS_NUMBER, LEGAL_NAME, FORMER_NAMES)
# A profile node's Item codes (an 8-K's say which event it reports), in place of the filing node's Item entries.
ITEM_CODES = "item_codes"


def node_type_filter(node_type: NodeType) -> dict[str, Any]:
    """The Haystack filter selecting the nodes of one type (``meta.node_type == node_type``)."""
    return {"field": f"meta.{NODE_TYPE}", "operator": "==", "value": node_type.value}


def query_cosine(meta: Mapping[str, Any]) -> float | None:
    """The cosine to the question a retriever recorded in a passage's meta (``QUERY_COSINE``), None without one."""
    value = meta.get(QUERY_COSINE)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def modality_of(meta: Mapping[str, Any]) -> str:
    """A node's modality (``MODALITY``): text when the meta names none."""
    return str(meta.get(MODALITY) or Modality.TEXT.value)


def filing_filter(filing_ids: str | Sequence[str]) -> dict[str, Any]:
    """The Haystack filter selecting the nodes of one filing (``meta.filing_id == id``) or of several (``in``)."""
    if isinstance(filing_ids, str):
        return {"field": f"meta.{FILING_ID}", "operator": "==", "value": filing_ids}
    return {"field": f"meta.{FILING_ID}", "operator": "in", "value": list(filing_ids)}


# --- node ids -------------------------------------------------------------------------------------------------------
# Ids are deterministic so that re-indexing the same filing with the same run rewrites the same nodes; these builders
# and parsers are the only place that spells them. Every id starts with "<filing_id>#". Nodes written by an indexing
# run carry the run in their id ("<filing_id>#<run>/chunk-00012"): a re-index writes a new run next to the old one
# instead of over it, so that a write killed half-way never leaves a filing with part of its nodes replaced. Ids
# without a run ("<filing_id>#chunk-00012") are those of stores written before, read the same way. The filing node
# has no run in its id: it is the one node a re-index overwrites, last, to switch readers to the new run.

_RUN_PREFIX = r"(?:(?P<run>[^#/]+)/)?"
_CHUNK_ID = re.compile(r"^(?P<filing>.*)#" + _RUN_PREFIX + r"chunk-(?P<index>\d+)$")
_RUN_OF = re.compile(r"#(?P<run>[^#/]+)/[^#/]*$")


def _in_run(run: str) -> str:
    if "/" in run or "#" in run:
        raise ValueError(f"an index run cannot contain '/' or '#', got {run!r}")
    return f"{run}/" if run else ""


def chunk_id(filing_id: str, index: int, run: str = "") -> str:
    """``"<filing_id>#<run>/chunk-00012"``: the ``index``-th chunk of the filing in reading order, in indexing run
    ``run`` (``"<filing_id>#chunk-00012"`` without one)."""
    return f"{filing_id}#{_in_run(run)}chunk-{index:05d}"


def parse_chunk_id(node_id: str) -> tuple[str, int] | None:
    """``(filing_id, index)`` of a chunk id (with or without a run), None for any other id."""
    m = _CHUNK_ID.match(node_id)
    return (m.group("filing"), int(m.group("index"))) if m else None


def sibling_chunk_id(node_id: str, index: int) -> str | None:
    """The id of chunk ``index`` of the same filing and indexing run as chunk id ``node_id`` (None: not a chunk
    id)."""
    m = _CHUNK_ID.match(node_id)
    return chunk_id(m.group("filing"), index, m.group("run") or "") if m else None


def run_of_node_id(node_id: str) -> str:
    """The indexing run a node id carries ("" for ids without one: filing nodes, stores written before)."""
    m = _RUN_OF.search(node_id)
    return m.group("run") if m else ""


def without_run(node_id: str) -> str:
    """The id a node had before ids carried the run (``"<filing_id>#chunk-00012"``); other ids unchanged."""
    m = _RUN_OF.search(node_id)
    return node_id[: m.start("run")] + node_id[m.end("run") + 1 :] if m else node_id


def filing_node_id(filing_id: str) -> str:
    """``"<filing_id>#filing"``: the filing's one filing node."""
    return f"{filing_id}#filing"


def pending_node_id(filing_id: str) -> str:
    """``"<filing_id>#pending"``: the marker of a write of the filing in progress (``NodeType.PENDING``)."""
    return f"{filing_id}#pending"


def profile_node_id(filing_id: str) -> str:
    """``"<filing_id>#profile"``: the filing's profile node (``FilingNode.profile_meta``)."""
    return f"{filing_id}#profile"


def table_id(filing_id: str, number: int) -> str:
    """``"<filing_id>#table-0003"``: the filing's ``number``-th table (shared by all blocks of that table)."""
    return f"{filing_id}#table-{number:04d}"


def fact_node_id(filing_id: str, chunk_index: int, row: int, col: int) -> str:
    """``"<filing_id>#fact-00012-r03-c2"``: the graph node of cell (row, col) of table block chunk ``chunk_index``
    (row indexes ``meta["table"]["rows"]``). Graph-only: facts are not stored as index nodes."""
    return f"{filing_id}#fact-{chunk_index:05d}-r{row:02d}-c{col}"


def entity_node_id(filing_id: str, item: str, key: str) -> str:
    """``"<filing_id>#entity-<item>-<key>"``: the graph node of an entity scoped to one Item (graph-only)."""
    return f"{filing_id}#entity-{item}-{key}"


def tree_node_id(filing_id: str, item: str, kind: str, level: int, index: int, run: str = "") -> str:
    """``"<filing_id>#<run>/tree-<item>-<kind><level>-<index>"``; ``kind`` is "s" (summary tree) or "q" (question
    tree); without ``run``: ``"<filing_id>#tree-..."``."""
    return f"{filing_id}#{_in_run(run)}tree-{item}-{kind}{level}-{index}"


def filing_id_of(node_id: str) -> str:
    """The filing part of any node id (everything before the last "#"); the id itself when it has none."""
    head, sep, _ = node_id.rpartition("#")
    return head if sep else node_id


# --- the filing node ------------------------------------------------------------------------------------------------


class FilingItem(TypedDict):
    """One entry of a filing node's ``items``: an Item (or a second range of one, e.g. Item 8 on F-pages)."""

    item: str
    title: str
    part: str
    start_page: int
    end_page: int
    n_chunks: int


def _as_int(value: Any) -> int | None:
    # Meta passed by callers (CLI --meta, converter meta=) may hold numbers as strings.
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _str_list(value: Any) -> list[str]:
    # A list field a caller may have written as one string.
    if isinstance(value, str):
        return [value] if value else []
    return [str(v) for v in value or () if v not in (None, "")]


def _item_from_meta(entry: Any) -> FilingItem:
    if not isinstance(entry, Mapping):  # hand-made nodes (tests, other writers) may list bare Item codes
        entry = {"item": entry}
    return FilingItem(
        item=str(entry.get("item") or ""),
        title=str(entry.get("title") or ""),
        part=str(entry.get("part") or ""),
        start_page=_as_int(entry.get("start_page")) or 0,
        end_page=_as_int(entry.get("end_page")) or 0,
        n_chunks=_as_int(entry.get("n_chunks")) or 0,
    )


@dataclass
class FilingNode:
    """The ``filing`` node of one indexed filing: its provenance, page count, Items and lexicon statistics.

    FilingSplitter writes it with ``to_meta()``; every reader (filing scope, FLAM routing, ``inspect``, the
    retriever's cache check) goes through ``from_meta()``, so the stored keys are named in this class only.
    ``from_meta`` is tolerant (missing keys get defaults, numbers stored as strings are read as numbers);
    ``to_meta`` writes the optional provenance fields only when set, as the splitter always has.
    """

    filing_id: str
    company: str = ""
    form: str = ""
    period: str = ""
    source_path: str = ""
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    period_end: str = ""
    ticker: str = ""
    n_pages: int = 0
    items: list[FilingItem] = field(default_factory=list)
    n_chunks_by_modality: dict[str, int] = field(default_factory=dict)
    index_run: str = ""
    source_sha256: str = ""  # "" for nodes written before it was recorded
    skipped_pages: list[int] = field(default_factory=list)  # pages without a text layer left out (no OCR)
    # {item: {lexicon cluster id: count}} and {item: total}; None when indexed without term statistics.
    item_term_counts: dict[str, dict[str, int]] | None = None
    item_term_totals: dict[str, int] | None = None
    # {item: {heading: {cluster id: count}}} and {item: {heading: total}}; None when indexed without them.
    section_term_counts: dict[str, dict[str, dict[str, int]]] | None = None
    section_term_totals: dict[str, dict[str, int]] | None = None
    # Registrant identity (IDENTITY_FIELDS); written only when known.
    cik: str = ""
    tickers: list[str] = field(default_factory=list)
    securities: list[list[str]] = field(default_factory=list)
    file_numbers: list[str] = field(default_factory=list)
    irs_number: str = ""
    legal_name: str = ""
    former_names: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return filing_node_id(self.filing_id)

    def to_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            FILING_ID: self.filing_id,
            COMPANY: self.company,
            FORM: self.form,
            PERIOD: self.period,
            SOURCE_PATH: self.source_path,
        }
        optional = (
            (FISCAL_YEAR, self.fiscal_year),
            (FISCAL_QUARTER, self.fiscal_quarter),
            (PERIOD_END, self.period_end),
            (TICKER, self.ticker),
        )
        meta.update({key: value for key, value in optional if value not in (None, "")})
        identity = (
            (CIK, self.cik),
            (TICKERS, list(self.tickers)),
            (SECURITIES, [list(s) for s in self.securities]),
            (FILE_NUMBERS, list(self.file_numbers)),
            (IRS_NUMBER, self.irs_number),
            (LEGAL_NAME, self.legal_name),
            (FORMER_NAMES, list(self.former_names)),
        )
        meta.update({key: value for key, value in identity if value})
        meta[NODE_TYPE] = NodeType.FILING.value
        meta[N_PAGES] = self.n_pages
        meta[ITEMS] = [dict(it) for it in self.items]
        meta[N_CHUNKS_BY_MODALITY] = dict(self.n_chunks_by_modality)
        meta[INDEX_RUN] = self.index_run
        if self.source_sha256:
            meta[SOURCE_SHA256] = self.source_sha256
        if self.skipped_pages:
            meta[SKIPPED_PAGES] = list(self.skipped_pages)
        if self.item_term_counts is not None:
            meta[ITEM_TERM_COUNTS] = self.item_term_counts
        if self.item_term_totals is not None:
            meta[ITEM_TERM_TOTALS] = self.item_term_totals
        if self.section_term_counts is not None:
            meta[SECTION_TERM_COUNTS] = self.section_term_counts
        if self.section_term_totals is not None:
            meta[SECTION_TERM_TOTALS] = self.section_term_totals
        return meta

    def profile_meta(self) -> dict[str, Any]:
        """The meta of the filing's profile node: provenance, period, identity and Item codes; no Items, counts or
        statistics. Its ``node_type`` is ``profile`` and its ``index_run`` the filing node's."""
        meta = {k: v for k, v in self.to_meta().items() if k in (*FILING_FIELDS, *IDENTITY_FIELDS, INDEX_RUN)}
        meta[ITEM_CODES] = [it["item"] for it in self.items if it["item"]]
        meta[NODE_TYPE] = NodeType.PROFILE.value
        return meta

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> "FilingNode":
        counts = meta.get(ITEM_TERM_COUNTS)
        totals = meta.get(ITEM_TERM_TOTALS)
        section_counts = meta.get(SECTION_TERM_COUNTS)
        section_totals = meta.get(SECTION_TERM_TOTALS)
        return cls(
            filing_id=str(meta.get(FILING_ID) or ""),
            company=str(meta.get(COMPANY) or ""),
            form=str(meta.get(FORM) or ""),
            period=str(meta.get(PERIOD) or ""),
            source_path=str(meta.get(SOURCE_PATH) or ""),
            fiscal_year=_as_int(meta.get(FISCAL_YEAR)),
            fiscal_quarter=_as_int(meta.get(FISCAL_QUARTER)),
            period_end=str(meta.get(PERIOD_END) or ""),
            ticker=str(meta.get(TICKER) or ""),
            n_pages=_as_int(meta.get(N_PAGES)) or 0,
            items=[_item_from_meta(it) for it in meta.get(ITEMS) or meta.get(ITEM_CODES) or ()],
            n_chunks_by_modality={str(k): int(v) for k, v in (meta.get(N_CHUNKS_BY_MODALITY) or {}).items()},
            index_run=str(meta.get(INDEX_RUN) or ""),
            source_sha256=str(meta.get(SOURCE_SHA256) or ""),
            skipped_pages=[p for p in (_as_int(v) for v in meta.get(SKIPPED_PAGES) or ()) if p is not None],
            item_term_counts=(
                {str(item): {str(c): int(n) for c, n in by.items()} for item, by in counts.items()}
                if isinstance(counts, Mapping)
                else None
            ),
            item_term_totals=(
                {str(item): int(n) for item, n in totals.items()} if isinstance(totals, Mapping) else None
            ),
            section_term_counts=(
                {
                    str(item): {
                        str(heading): {str(c): int(n) for c, n in by.items()}
                        for heading, by in headings.items()
                        if isinstance(by, Mapping)
                    }
                    for item, headings in section_counts.items()
                    if isinstance(headings, Mapping)
                }
                if isinstance(section_counts, Mapping)
                else None
            ),
            section_term_totals=(
                {
                    str(item): {str(heading): int(n) for heading, n in headings.items()}
                    for item, headings in section_totals.items()
                    if isinstance(headings, Mapping)
                }
                if isinstance(section_totals, Mapping)
                else None
            ),
            cik=str(meta.get(CIK) or ""),
            tickers=_str_list(meta.get(TICKERS)),
            securities=[[str(v) for v in s] for s in meta.get(SECURITIES) or () if isinstance(s, list | tuple)],
            file_numbers=_str_list(meta.get(FILE_NUMBERS)),
            irs_number=str(meta.get(IRS_NUMBER) or ""),
            legal_name=str(meta.get(LEGAL_NAME) or ""),
            former_names=_str_list(meta.get(FORMER_NAMES)),
        )


# --- query-time outputs ---------------------------------------------------------------------------------------------
# Shapes of the JSON the query components emit. The Haystack sockets stay ``dict``/``list[dict]``: Haystack 3.4 does
# not match a TypedDict sender to a ``dict[str, Any]`` receiver, so typing the sockets would break connections to
# plain components.


class SectionBudget(TypedDict):
    """A section below an Item that FLAM routes to (``flam.route_sections``): the heading as in ``section_path``,
    its relative frequency for the question's clusters, the count and total it rests on, and how many of its
    passages join the candidates."""

    section: str
    score: float
    count: int
    total: int
    k: int


class Budget(TypedDict):
    """One FlamRouter ``budgets`` entry: retrieve ``k`` passages from Item ``item`` of ``filing_id``; ``weight`` is
    the pair's share of the whole budget; ``sections``, when the filing has section statistics and some section
    stands out, the sections of the Item routed to."""

    filing_id: str
    item: str
    k: int
    weight: float
    sections: NotRequired[list[SectionBudget]]


class StatementTrace(TypedDict, total=False):
    asked: dict[str, float]  # statement kind -> how strongly the question asks for it
    added: list[str]  # ids of the statement blocks added to the candidates


class SectionTrace(TypedDict, total=False):
    asked: dict[str, str]  # normalized heading title -> the lexicon cluster it comes from
    added: list[str]  # ids of the chunks under those headings added to the candidates
    # FLAM-routed sections (budgets' ``sections``): filing_id, item, section, score, k and the chunk ids added
    routed: list[dict[str, Any]]


class RetrieverTrace(TypedDict):
    """DualTreeRetriever ``trace``: per-Item searches (``TreeSearchResult.trace()`` plus ``k``), statement blocks,
    section chunks, cache use (hits/loaded/stale, load seconds) and wall time."""

    items: list[dict[str, Any]]
    statements: StatementTrace
    sections: SectionTrace
    cache: dict[str, Any]
    seconds: float


class RankerGroupTrace(TypedDict):
    filing_id: str | None  # None: a candidate without the field (the ranker works after any retriever)
    item: str | None
    n_candidates: int
    budget: int
    budget_source: str
    kept_stage1: int
    kept_stage2: int


class RankerTrace(TypedDict, total=False):
    """TwoStageRanker ``trace``; ``fallback`` only when the fallback scorer ran."""

    scorer: str
    model: str | None
    n_input: int
    n_duplicates: int
    top_k: int
    groups: list[RankerGroupTrace]
    n_output: int
    fallback: dict[str, Any]
