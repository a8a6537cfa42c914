"""Small-to-big passages: grow a retrieved chunk into a window of its neighbours in the same Item.

Chunks are cut small (~200 word pieces) so that a 256-token embedder reads all of each; an analyst, an LLM and
the evidence-recall metric need more context than that. A window adds the chunks before and after the hit, in
reading order, while they belong to the same Item (and, for a table block, to the same table) and the window stays
within a word budget.
"""

import re
from dataclasses import dataclass

from haystack_fin.core.schema import parse_chunk_id, sibling_chunk_id

_TABLE_RULE = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+$")  # markdown's header separator "| --- | --- |"


@dataclass
class WindowPart:
    """One chunk as the window logic sees it."""

    id: str
    text: str
    item: str
    table_id: str | None
    pages: list[int]


def chunk_index(chunk_id: str) -> int | None:
    """Position of a chunk from its deterministic id ("<filing_id>#<run>/chunk-00012" -> 12)."""
    parsed = parse_chunk_id(chunk_id)
    return parsed[1] if parsed else None


def neighbour_ids(chunk_id: str, radius: int) -> list[str]:
    """Ids of the ``radius`` chunks before and after ``chunk_id`` in its filing and indexing run (not checked for
    existence)."""
    parsed = parse_chunk_id(chunk_id)
    if parsed is None:
        return []
    idx = parsed[1]
    return [str(sibling_chunk_id(chunk_id, i)) for i in range(max(0, idx - radius), idx + radius + 1) if i != idx]


def table_body(text: str) -> str:
    """A markdown table block without what every block of its table repeats (title, units, header, rule)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if _TABLE_RULE.match(line.strip()):
            return "\n".join(lines[i + 1 :])
    return text


def _continues_table(part: WindowPart, previous: WindowPart | None) -> bool:
    return bool(part.table_id) and previous is not None and previous.table_id == part.table_id


def _compatible(core: WindowPart, other: WindowPart) -> bool:
    if other.item != core.item:
        return False
    if core.table_id:  # a table grows only with the other blocks of the same table
        return other.table_id == core.table_id
    return not other.table_id


def build_window(core: WindowPart, neighbours: dict[str, WindowPart], radius: int, max_words: int) -> list[WindowPart]:
    """The window around ``core``: neighbours added alternately after and before it while compatible and while the
    window stays within ``max_words``. Returned in reading order; ``core`` is always included."""
    parsed = parse_chunk_id(core.id)
    if parsed is None:
        return [core]
    idx = parsed[1]
    words = len(core.text.split())

    def cost(part: WindowPart) -> int:  # another block of the core's table adds only its rows
        return len((table_body(part.text) if core.table_id else part.text).split())

    before: list[WindowPart] = []
    after: list[WindowPart] = []
    open_before, open_after = True, True
    for step in range(1, radius + 1):
        for side in ("after", "before"):
            if (side == "after" and not open_after) or (side == "before" and not open_before):
                continue
            j = idx + step if side == "after" else idx - step
            part = neighbours.get(str(sibling_chunk_id(core.id, j))) if j >= 0 else None
            if part is None or not _compatible(core, part) or words + cost(part) > max_words:
                if side == "after":
                    open_after = False
                else:
                    open_before = False
                continue
            words += cost(part)
            (after if side == "after" else before).append(part)
    return [*reversed(before), core, *after]


def join_window(parts: list[WindowPart]) -> str:
    """The text of a window: consecutive blocks of one table become one table (title and header once), other
    chunks are joined by ``join_texts``."""
    texts: list[str] = []
    previous: WindowPart | None = None
    for part in parts:
        if _continues_table(part, previous):
            texts[-1] = f"{texts[-1]}\n{table_body(part.text)}"
        else:
            texts.append(part.text)
        previous = part
    return join_texts(texts)


def join_texts(parts: list[str]) -> str:
    """Concatenate chunk texts, dropping the overlap a chunk repeats from its predecessor (whole sentences)."""
    out = ""
    for text in parts:
        if not out:
            out = text
            continue
        cut = 0
        head = text[:800]
        for m in re.finditer(r"[.!?:;]\s", head):
            if out.rstrip().endswith(head[: m.start() + 1].strip()):
                cut = m.end()
        out = f"{out}\n{text[cut:].lstrip()}" if cut < len(text) else out
    return out
