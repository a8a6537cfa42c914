"""Edges of the filing graph, in the three confidence tiers of the relation-index design:

* ``explicit`` (0.95): a textual reference resolved to its target, "Note 7" -> the first chunk under the heading of
  Note 7, "Item 7A" -> the Item's first chunk, "the following table" -> the next table of the section, "the
  table above" -> the previous one, "on page 45" -> the first chunk of that printed page, "Exhibit 13" -> the
  exhibit's section. Only these cross Items.
* ``table`` (0.85): table structure. A cell (fact) <-> its row's metric and its column's period (``cell_row``,
  ``cell_period``) and its table block (``cell_table``); a table <-> its introducing paragraph, the text chunk
  just before it in the same section (``caption``); a table block -> its continuation block (``continuation``).
* ``inferred`` (0.70): the same metric and period in two chunks of one Item, confirmed by the same value after
  unit scaling (6,779,511 in a "$ in thousands" table and "$6.8 billion" in the text; ``same_value``).

Nothing below 0.70 is made. Mentions (chunk -> entity node) are typed ``mention`` and scoped to the chunk's Item:
"coverage ratio" in Item 7 and in Item 8 are two entity nodes.
"""

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from haystack_fin.core import schema
from haystack_fin.core.graph.entities import REFERENCE, Entity
from haystack_fin.core.graph.facts import UNIT_SCALED, Fact

EXPLICIT = "explicit"
TABLE = "table"
INFERRED = "inferred"
MENTION = "mention"

CONFIDENCE: Mapping[str, float] = {EXPLICIT: 0.95, TABLE: 0.85, INFERRED: 0.70, MENTION: 0.85}
MIN_CONFIDENCE = 0.70

# How far a "following table" / "table above" may sit from the sentence naming it: the chunker flushes the text
# before every table, so the introducing text is the chunk just before; one more chunk allows a long introduction.
_MAX_TEXT_CHUNKS_BETWEEN = 1
# Same-value groups larger than this are chained in filing order instead of linked pairwise (quadratic otherwise).
_MAX_PAIRWISE = 6
_ENTITY_COLUMN = re.compile(r"\b(?:non-?guarantor|guarantors?|eliminations?|parent|issuer|subsidiar(?:y|ies))\b", re.I)
_MIN_SIGNIFICANCE = 20.0  # |value| / precision: 12 (precision 0.5) passes, 1 and 9.5 do not
# "Note 7", "NOTE 7:", "Note A" (a lettered note needs the space: "NOTES TO ..." is no Note S).
_NOTE_HEADING = re.compile(r"^\s*(?:note|NOTE|Note)(?:\s*(?=\d)|\s+(?=[A-Z]\b))(?P<n>\d{1,2}|[A-Z])\b(?!\.\d)")
_NUMBERED_HEADING = re.compile(r"^\s*(?P<n>\d{1,2})\s*[.:\-–—]\s+[A-Z]")
# "7. Income Taxes" alone on a line: a numbered heading inside a chunk's text.
_NUMBERED_LINE = re.compile(
    r"(?m)^[ \t]*(?P<n>\d{1,2})\.[ \t]+[A-Z][a-z]+(?:[ \t,&'’-]{1,3}[A-Za-z][A-Za-z’']*){0,8}[ \t]*$"
)
_MAX_NOTE_GAP = 25  # pages between the headings of two consecutive notes
_NOTE_HEADING_LINE = re.compile(r"(?m)^[ \t]*(?:NOTE|Note)[ \t]+(?P<n>\d{1,2})[ \t]*[—–:.-][ \t]*[A-Z]")
# Up to four words right before "table": "net lease cost table", "Contractual Obligations table".
_EXHIBIT_ITEMS = frozenset({"15", "16", "IV-15", "IV-16"})
_ARTICLES = frozenset({"the", "our", "this", "that", "these", "those", "a", "an", "in", "of"})
_NAMED_TABLE = re.compile(r"(?<![\w’'-])(?P<name>(?:[A-Za-z][\w’'-]{0,30}\s{1,3}){1,4})[\"”]?$")
_NOTES_NAME = re.compile(r"notes\s+to\s+(?:the\s+)?(?:consolidated\s+)?financial\s+statements", re.I)
_CONTENTS_ENTRY = re.compile(r"\b(?:NOTE|Note|ITEM|Item)[ \t]+\d{1,2}[AB]?[ \t]*[—–:.-][ \t]*[A-Z]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
_INTRO = re.compile(r"\b(?:the\s+following|as\s+follows|(?:table|tables|summarized|presented|shown)\s+below)\b", re.I)
_TITLE_AFTER = re.compile(r"[.:,—–-]?\s{0,3}[\"“]?(?P<title>[A-Z][A-Za-z’',&]*(?:\s+[A-Za-z’',&]+){0,5})")
_WORD = re.compile(r"[a-z]{4,}")
# Words every table sentence or Item title has; they say nothing about which table or Item is meant.
_GENERIC_TEXT = (
    "table tables following below above preceding previous summarizes summarize summarized presents present "
    "presented shows provides includes included include excludes information regarding related amounts "
    "millions thousands billions fiscal year years ended ending december june september march period periods "
    "total which that this these those were with from have been their other annual report form item items part "
    "data certain details detail sets forth reflects reflected results consolidated company"
)
_GENERIC_WORDS = frozenset(_GENERIC_TEXT.split())
# Bounded runs of whitespace, and a title that starts with a non-space: no two quantifiers compete for one run of
# spaces or newlines (linear; tests/core/test_linear_parsing.py).
_TOC_LINE = re.compile(
    r"\bItem\s{1,40}(?P<code>\d{1,2}[AB]?)\.?\s{1,40}[^\d|\s][^\d|]{2,159}?\s(?P<page>\d{1,3})(?!\d)", re.IGNORECASE
)


@dataclass
class ChunkInfo:
    """What the graph needs of one chunk (built from its meta by ``build.chunk_info``)."""

    id: str
    index: int
    item: str
    part: str
    section_path: tuple[str, ...]
    pages: tuple[int, ...]
    modality: str
    table_id: str
    table_block: int | None
    statement: str
    content: str
    entities: list[Entity] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)


@dataclass(frozen=True)
class Edge:
    """A directed edge with its tier (``type``), its rule (``kind``) and what it rests on (``evidence``, JSON)."""

    source: str
    target: str
    type: str
    kind: str
    confidence: float
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "type": self.type,
            "kind": self.kind,
            "confidence": self.confidence,
            "evidence": dict(self.evidence),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Edge":
        return cls(
            str(data["source"]),
            str(data["target"]),
            str(data["type"]),
            str(data["kind"]),
            float(data["confidence"]),
            dict(data.get("evidence") or {}),
        )


def _edge(source: str, target: str, tier: str, kind: str, **evidence: Any) -> Edge:
    return Edge(source, target, tier, kind, CONFIDENCE[tier], evidence)


# --- reference resolution ---------------------------------------------------------------------------------------


def _note_number(heading: str) -> str:
    m = _NOTE_HEADING.match(heading) or _NUMBERED_HEADING.match(heading)
    return m.group("n").upper() if m else ""


def note_sections(chunks: Sequence[ChunkInfo]) -> dict[str, str]:
    """Note number -> the first chunk of that note: under a heading "Note 7 ..." / "NOTE 7:" (in the chunk's
    path, else on a line of its text) or "7. Income Taxes".

    A numbered heading without the word "Note" is one only inside a run of them: 1, 2, 3 ... in filing order, each
    within ``_MAX_NOTE_GAP`` pages of the one before, starting at or after the first mention of the notes to the
    financial statements (the first such run of three or more is the notes), or under a "Notes to ... Financial
    Statements" heading; a "1. Overview" list heading or an exhibit's "2. Compensation" are not.
    """
    noted_items = {c.item for c in chunks for h in c.section_path[1:] if _NOTE_HEADING.match(h)}
    notes_start = _notes_start(chunks)
    worded: dict[str, str] = {}
    in_text: dict[str, str] = {}
    numbered: list[tuple[int, int, str]] = []  # (number, page, chunk id) in filing order
    under_notes: dict[str, str] = {}
    for position, chunk in enumerate(chunks):
        contents = is_contents(chunk.content)
        nxt = chunks[position + 1] if position + 1 < len(chunks) else None
        page = min(chunk.pages) if chunk.pages else 0

        # A note's heading may open inside the chunk that ends the section before ("See accompanying notes.\nNOTE
        # 1 — ACCOUNTING POLICIES"): the chunker gives a chunk the path of its first paragraph. Such a chunk is the
        # target only when no chunk has the heading in its path. A contents list of the notes is no heading.
        if not contents:
            for m in _NOTE_HEADING_LINE.finditer(chunk.content):
                in_text.setdefault(m.group("n").upper(), _opened(chunk, nxt, m.start()))
        may_number = (chunk.item in noted_items or chunk.item in ("8", "15")) and page >= notes_start
        for heading in chunk.section_path[1:]:
            if _NOTE_HEADING.match(heading):
                worded.setdefault(_note_number(heading), chunk.id)
            elif may_number and (numbered_heading := _NUMBERED_HEADING.match(heading)):
                if any(_NOTES_NAME.search(h) for h in chunk.section_path):  # under a "Notes to ..." heading
                    under_notes.setdefault(numbered_heading.group("n"), chunk.id)
                numbered.append((int(numbered_heading.group("n")), page, chunk.id))
        if may_number and not contents:
            for line in _NUMBERED_LINE.finditer(chunk.content):
                numbered.append((int(line.group("n")), page, _opened(chunk, nxt, line.start())))
    return {**under_notes, **_numbered_run(numbered), **in_text, **worded}


def _opened(chunk: ChunkInfo, nxt: ChunkInfo | None, start: int) -> str:
    """The chunk a heading at ``start`` of ``chunk``'s text opens: one in the second half opens the next chunk."""
    late = 2 * start > len(chunk.content) and nxt is not None and nxt.item == chunk.item
    return nxt.id if late and nxt is not None else chunk.id


def _numbered_run(numbered: list[tuple[int, int, str]]) -> dict[str, str]:
    """The first run 1, 2, 3, ... (three or more, consecutive numbers, each within ``_MAX_NOTE_GAP`` pages of the
    one before) among numbered headings in filing order, as number -> chunk id."""
    runs: list[dict[int, tuple[int, str]]] = []
    for number, page, chunk_id in numbered:
        if number == 1:
            runs.append({1: (page, chunk_id)})
            continue
        for run in runs:
            last = max(run)
            # One heading the parser missed (a note's title split over two lines) may leave a gap of one number.
            if last < number <= last + 2 and 0 <= page - run[last][0] <= _MAX_NOTE_GAP:
                run[number] = (page, chunk_id)
    for run in runs:
        if len(run) >= 3:
            return {str(n): chunk_id for n, (_, chunk_id) in run.items()}
    return {}


def _notes_start(chunks: Sequence[ChunkInfo]) -> int:
    """The first page naming the notes to the financial statements (0 when none does)."""
    for chunk in chunks:
        if chunk.pages and (
            _NOTES_NAME.search(chunk.content) or any(_NOTES_NAME.search(h) for h in chunk.section_path)
        ):
            return min(chunk.pages)
    return 0


def is_contents(text: str) -> bool:
    """Whether a chunk reads like a table of contents of notes or Items ("Note 1 – Basis of Presentation 66 Note 2 –
    ..."): three or more titled entries."""
    return len(_CONTENTS_ENTRY.findall(text, 0, 20_000)) >= 3


def item_starts(chunks: Sequence[ChunkInfo]) -> dict[str, str]:
    """Item code -> its first chunk (filing order)."""
    out: dict[str, str] = {}
    for chunk in chunks:
        out.setdefault(chunk.item, chunk.id)
    return out


def printed_page_offset(chunks: Sequence[ChunkInfo]) -> int | None:
    """Physical minus printed page number, read from the table of contents: each "Item 7 ... 19" line of the cover
    gives one estimate (the Item's first physical page minus 19). None unless three or more lines agree and make
    at least 60% of the estimates: "on page 45" is only resolved when the offset is sure."""
    first_page: dict[str, int] = {}
    for chunk in chunks:
        if chunk.pages and chunk.item not in first_page:
            first_page[chunk.item] = min(chunk.pages)
    votes: Counter[int] = Counter()
    for chunk in chunks:
        if chunk.item != "cover":
            continue
        for m in _TOC_LINE.finditer(chunk.content):
            code = m.group("code").upper()
            if code in first_page:
                votes[first_page[code] - int(m.group("page"))] += 1
    if not votes:
        return None
    offset, n = votes.most_common(1)[0]
    return offset if n >= 3 and n >= 0.6 * sum(votes.values()) else None


def _item_code(key: str, source: ChunkInfo, items: Mapping[str, str]) -> str | None:
    """The Item code a reference key names in this filing: "item:7" -> "7"; a 10-Q's "item:2" -> the source's
    Part ("I-2"), "item:II-1A" -> "II-1A"."""
    code = key.split(":", 1)[1]
    if code in items:
        return code
    if "-" not in code and source.part and f"{source.part}-{code}" in items:
        return f"{source.part}-{code}"
    return None


def _neighbour_table(chunks: Sequence[ChunkInfo], position: int, step: int) -> ChunkInfo | None:
    """The table block nearest to ``chunks[position]`` in direction ``step`` inside the same Item, with at most
    ``_MAX_TEXT_CHUNKS_BETWEEN`` text chunks between; for "the table above" the nearest block of that table."""
    source = chunks[position]
    between = 0
    i = position + step
    while 0 <= i < len(chunks) and chunks[i].item == source.item:
        if chunks[i].table_id:
            return chunks[i]
        if chunks[i].modality == "text":
            between += 1
            if between > _MAX_TEXT_CHUNKS_BETWEEN:
                return None
        i += step
    return None


def reference_edges(chunks: Sequence[ChunkInfo]) -> list[Edge]:
    """Explicit edges: each resolvable reference of a chunk to its target (unresolved and self references none).

    Tables of contents (the cover) are left out: they name every Item and say nothing about any chunk.
    """
    notes = note_sections(chunks)
    items = item_starts(chunks)
    offset = printed_page_offset(chunks)
    first_on_page: dict[int, str] = {}
    for chunk in chunks:
        for page in chunk.pages:
            first_on_page.setdefault(page, chunk.id)
    exhibits = {code.removeprefix("EX-"): cid for code, cid in items.items() if code.startswith("EX-")}
    by_id = {c.id: c for c in chunks}
    edges: list[Edge] = []
    for position, chunk in enumerate(chunks):
        if chunk.item == "cover" or is_contents(chunk.content):
            continue
        seen: set[str] = set()
        for ref in (e for e in chunk.entities if e.kind == REFERENCE):
            if ref.key in seen:
                continue
            seen.add(ref.key)
            kind, _, value = ref.key.partition(":")
            target: str | None = None
            if kind == "note":
                # Exhibits filed with the 10-K (Items 15 and 16 run to the end) carry their own notes: an
                # employment agreement's or a subsidiary's "See Note 7" is not the registrant's Note 7.
                target = notes.get(value) if chunk.item not in _EXHIBIT_ITEMS else None
                # A reference inside the note it names ("as described in this Note 7") is no link.
                if target is not None and _note_number_of(chunk) == value:
                    target = None
            elif kind == "item":
                code = _item_code(ref.key, chunk, items)
                target = items.get(code) if code is not None and code != chunk.item else None
                # "Item 1: Election of Directors" is a proxy statement's agenda item, not the 10-K's Item 1.
                if target is not None and not _title_agrees(chunk.content, ref, by_id[target]):
                    target = None
            elif kind == "table":
                if chunk.table_id:  # a table's own title ("the following table ...") is its caption, not a reference
                    continue
                found = _neighbour_table(chunks, position, 1 if value == "next" else -1)
                # The nearest table must be about what the sentence names: a table the parser missed leaves the
                # next detected one, about something else ("shares we repurchased" -> a currency table).
                target = found.id if found is not None and _topic_agrees(chunk.content, ref, found) else None
            elif kind == "page" and offset is not None and not value.startswith("F-"):
                target = first_on_page.get(int(value) + offset)
            elif kind == "exhibit":
                target = exhibits.get(value)
            if target is not None and target != chunk.id:
                edges.append(_edge(chunk.id, target, EXPLICIT, kind, text=ref.text, key=ref.key))
    return edges


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _GENERIC_WORDS}


def _title_agrees(text: str, ref: Entity, target: ChunkInfo) -> bool:
    """Whether the title written after "Item 7" (if any) shares a word with the target Item's title."""
    m = _TITLE_AFTER.match(text, ref.start + len(ref.text)) if ref.start >= 0 else None
    if m is None:
        return True
    label = target.section_path[0] if target.section_path else ""
    return bool(_words(m.group("title")) & _words(label))


def _topic_agrees(text: str, ref: Entity, table: ChunkInfo) -> bool:
    """Whether the sentence of a table reference shares a content word with the table (title, headers, labels)."""
    if ref.start < 0:
        return True
    start = max(text.rfind(". ", 0, ref.start) + 1, ref.start - 200)
    end = text.find(". ", ref.start)
    sentence = text[start : end if end >= 0 else min(len(text), ref.start + 300)]
    words = _words(sentence)
    table_words = _words(table.content[:3000])
    if words and not words & table_words:
        return False
    # A named table ("the components of net lease cost table above", "the Contractual Obligations table below")
    # must carry the name's words in its title: the nearest table may be the one after the named one.
    named = _NAMED_TABLE.search(text, max(0, ref.start - 80), ref.start)
    tokens = named.group("name").split() if named is not None else []
    # Only words right before "table" name it: "reported in the table below" names nothing.
    while tokens and tokens[0].lower() not in _ARTICLES:
        tokens.pop(0)
    name = _words(" ".join(tokens[1:])) if tokens else set()
    if name and not name <= _words(table.content[:400]):
        return False
    # "... at the end of fiscal 2017 : U.S. Best Buy Stores U.S. Best Buy Mobile ...": the introduced table's
    # headers follow as text (the parser did not find that table), so the next detected table is another one.
    colon = text.find(":", ref.start, ref.start + 300)
    after = _words(text[colon + 1 : colon + 200]) if colon >= 0 else set()
    return len(after) < 4 or 2 * len(after & table_words) >= len(after)


def _note_number_of(chunk: ChunkInfo) -> str:
    for heading in reversed(chunk.section_path[1:]):
        number = _note_number(heading)
        if number:
            return number
    return ""


# --- table structure --------------------------------------------------------------------------------------------


def table_edges(chunks: Sequence[ChunkInfo], entity_node: Any) -> list[Edge]:
    """Table-structure edges. ``entity_node(chunk, kind, key)`` names the Item-scoped entity node of a metric or
    period (``build`` supplies it, with the node-id scheme of ``schema``)."""
    edges: list[Edge] = []
    for position, chunk in enumerate(chunks):
        if not chunk.table_id:
            continue
        for fact in chunk.facts:
            fid = fact_id(chunk, fact)
            edges.append(_edge(fid, chunk.id, TABLE, "cell_table", row=fact.row, col=fact.col))
            if fact.metric:
                edges.append(_edge(fid, entity_node(chunk, "metric", fact.metric), TABLE, "cell_row", label=fact.label))
            if fact.period:
                edges.append(
                    _edge(fid, entity_node(chunk, "period", fact.period), TABLE, "cell_period", column=fact.column)
                )
        previous = chunks[position - 1] if position else None
        if previous is None or previous.item != chunk.item:
            continue
        if previous.table_id == chunk.table_id:
            edges.append(_edge(previous.id, chunk.id, TABLE, "continuation", table_id=chunk.table_id))
        elif (
            previous.modality == "text"
            and previous.section_path == chunk.section_path
            and not chunk.table_block
            and introduces_table(previous.content)
        ):
            edges.append(_edge(chunk.id, previous.id, TABLE, "caption", table_id=chunk.table_id))
    return edges


def introduces_table(text: str) -> bool:
    """Whether a paragraph's last sentence introduces what follows ("... were as follows:", "The following table
    summarizes ..."). The text chunk before a table is often an unrelated paragraph or the footnotes of the table
    before (the splitter folds an introducing sentence right above a table into the table's title), so adjacency
    alone is no caption."""
    tail = text[-300:].rstrip()
    if tail.endswith(":"):
        return True
    last = _SENTENCE_END.split(tail)[-1]
    return bool(_INTRO.search(last))


def fact_id(chunk: ChunkInfo, fact: Fact) -> str:
    head, _, _ = chunk.id.rpartition("#")
    return schema.fact_node_id(head, chunk.index, fact.row, fact.col)


# --- inferred ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Value:
    chunk_id: str
    value: float
    precision: float
    where: str  # "Revenues | Year Ended December 31, 2015 = 6,779,511" / "$6.8 billion"
    text_index: int  # the chunk index of a text amount, -1 for a table fact


def _same(a: _Value, b: _Value) -> bool:
    # At least two significant digits on both sides: "1" (million) in two tables is a coincidence as often as not.
    if min(abs(a.value) / a.precision, abs(b.value) / b.precision) < _MIN_SIGNIFICANCE:
        return False
    return abs(a.value - b.value) <= max(a.precision, b.precision) + 1e-9 * max(abs(a.value), abs(b.value))


def inferred_edges(chunks: Sequence[ChunkInfo]) -> list[Edge]:
    """Same metric and period in two chunks of one Item, confirmed by the same value after unit scaling.

    Values come from facts (scaled amounts only: a percentage matches a percentage too easily) and from text
    amounts whose sentence names both the metric and one period. Chunks of one table are not linked (they are
    continuation blocks already).
    """
    groups: dict[tuple[str, str, str], list[_Value]] = {}
    table_of: dict[str, str] = {}
    for chunk in chunks:
        table_of[chunk.id] = chunk.table_id
        for fact in chunk.facts:
            # A consolidating statement's Parent / Guarantor / Eliminations columns report parts of the company:
            # equal to a consolidated figure by arithmetic, not the same figure.
            if _ENTITY_COLUMN.search(fact.column) and "consolidated" not in fact.column.lower():
                continue
            if fact.metric and fact.period and fact.unit == UNIT_SCALED:
                groups.setdefault((chunk.item, fact.metric, fact.period), []).append(
                    _Value(chunk.id, fact.value, fact.precision, f"{fact.label} | {fact.column} = {fact.raw}", -1)
                )
        for ent in chunk.entities:
            if ent.kind == "amount" and ent.metric and ent.period and ent.value:
                scale = _scale_of(ent)
                groups.setdefault((chunk.item, ent.metric, ent.period), []).append(
                    _Value(chunk.id, ent.value, 0.5 * scale * 10.0 ** (-ent.decimals), ent.text, chunk.index)
                )
    edges: list[Edge] = []
    made: set[tuple[str, str]] = set()
    for (item, metric, period), values in groups.items():
        values.sort(key=lambda v: v.chunk_id)
        pairs: Iterable[tuple[_Value, _Value]]
        if len(values) <= _MAX_PAIRWISE:
            pairs = ((a, b) for i, a in enumerate(values) for b in values[i + 1 :])
        else:
            pairs = pairwise(values)
        for a, b in pairs:
            if a.chunk_id == b.chunk_id or (table_of[a.chunk_id] and table_of[a.chunk_id] == table_of[b.chunk_id]):
                continue
            if (a.chunk_id, b.chunk_id) in made or not _same(a, b):
                continue
            # Neighbouring text chunks overlap by a few sentences: the same sentence twice is one mention.
            if a.text_index >= 0 and b.text_index >= 0 and abs(a.text_index - b.text_index) <= 1:
                continue
            made.add((a.chunk_id, b.chunk_id))
            edges.append(
                _edge(a.chunk_id, b.chunk_id, INFERRED, "same_value", metric=metric, period=period, item=item,
                      source_value=a.where, target_value=b.where)
            )  # fmt: skip
    return edges


def _scale_of(ent: Entity) -> float:
    lowered = ent.text.lower()
    for word, scale in (("trillion", 1e12), ("billion", 1e9), ("million", 1e6), ("thousand", 1e3)):
        if word in lowered:
            return scale
    return 1.0
