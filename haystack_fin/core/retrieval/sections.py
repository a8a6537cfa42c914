"""Sections below the Item: the headings under which filings report a concept, and the chunks under them.

FLAM routes a question to Items, but much of what analysts ask lives one level down: an effective tax rate in the
income-tax note's rate reconciliation ("Note 14: Income Taxes"), acquisitions in the business-combinations note,
legal matters in the contingencies note, liquidity in MD&A's "Liquidity and Capital Resources", the registered
securities in the cover page's "Securities registered pursuant to Section 12(b) of the Act". These headings are
the same across filers because Regulation S-X and S-K and the accounting codification name the disclosures, so the
lexicon records them per concept (``TermCluster.sections``) as general knowledge, not per filing.

FilingSplitter writes every chunk's heading path (``meta["section_path"]``: the Item's title first, then the
headings above the chunk). ``section_match`` says whether a chunk sits under one of the question's headings:

* the Item's own title (the first element) counts when it is the whole title: "Item 1. Business" is where a 10-K
  says what the company does and who its customers are, "Item 3. Legal Proceedings" where its lawsuits are. It
  does not pull in a whole Item: the retriever adds the few chunks under a heading that are closest to the
  question. A title is never matched inside an Item's title: "financial condition" is a subsection of MD&A, and
  also a phrase of Item 7's title "Management's Discussion and Analysis of Financial Condition and Results of
  Operations", which every chunk of Item 7 carries;
* a heading is compared without its numbering ("NOTE 14:", "Note 2 -", "12.", "Item 7.") and after the lexicon's
  ``normalize_term`` (plural folding, "&" -> "and"), so "ACQUISITIONS AND DIVESTITURES" matches
  "acquisitions and divestitures";
* a one-word title must be the whole heading ("General", "Dividends"), because one word inside a longer heading
  ("General and administrative expenses") is usually another topic; a title of several words may also occur
  inside a longer heading as a word run ("NOTE 10: DEBT AND BORROWING ARRANGEMENTS Short-Term Borrowings"
  matches "debt and borrowing arrangements"), since the splitter sometimes merges a note title with the
  sub-heading after it.

Cost: one normalization per heading (cached) and a set lookup per title word run; linear in the path length.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from haystack_fin.core.lexicon import Lexicon, TermCluster, normalize_term

# "NOTE 14:", "Note 2 -", "NOTE 1 —", "12.", "Item 7.", "(3)": the numbering in front of a note or Item title.
# The whitespace before the punctuation sits inside the optional group, so no two runs of \s compete for the same
# spaces (linear on a long run of spaces; ``tests/core/test_linear_parsing.py``).
_NUMBERING = re.compile(r"^\s*(?:(?:note|item)\s+)?\(?\d{1,3}[a-z]?\)?(?:\s*[:.\-–—)]+)?\s+", re.IGNORECASE)


@lru_cache(maxsize=65_536)
def normalize_heading(heading: str) -> str:
    """A heading without its numbering, normalized like lexicon terms ("NOTE 2: ACQUISITIONS" -> "acquisition")."""
    return normalize_term(_NUMBERING.sub("", heading, count=1))


def question_sections(clusters: Iterable[TermCluster]) -> dict[str, str]:
    """``{normalized heading title: cluster id}`` of the question's clusters, first cluster first."""
    titles: dict[str, str] = {}
    for cluster in clusters:
        for title in cluster.sections:
            key = normalize_heading(title)
            if key:
                titles.setdefault(key, cluster.id)
    return titles


def sections_in_query(query: str, lexicon: Lexicon) -> dict[str, str]:
    """``question_sections`` of the clusters ``query`` mentions (typo-tolerant, as FLAM matches them), for a
    component used without a ``QueryAnalyzer``."""
    seen: dict[str, None] = {}
    for match in lexicon.find_terms(query):
        seen.setdefault(match.cluster_id)
    return question_sections(lexicon.cluster(cluster_id) for cluster_id in seen)


def section_match(section_path: Sequence[str], titles: Mapping[str, str]) -> str | None:
    """The first title of ``titles`` (normalized, as from ``question_sections``) that a heading of
    ``section_path`` matches (see the module docstring), or None."""
    if not titles:
        return None
    for depth, heading in enumerate(section_path):
        title = _matching_title(normalize_heading(str(heading)), titles, whole_only=depth == 0)
        if title is not None:
            return title
    return None


def _matching_title(heading: str, titles: Mapping[str, str], whole_only: bool = False) -> str | None:
    """The title a normalized heading matches: the whole heading, or (unless ``whole_only``, for Item titles) a
    word run of it for multi-word titles."""
    if not heading:
        return None
    if heading in titles:
        return heading
    if whole_only:
        return None
    padded = f" {heading} "
    return next((title for title in titles if " " in title and f" {title} " in padded), None)


class SectionIndex:
    """The chunks of one filing by the headings above them, for ``chunks_under`` lookups without a scan of every
    chunk: a filing has a few hundred distinct headings and a thousand or more chunks.

    Usage example:
    ```python
    index = SectionIndex([("f#chunk-1", ["Item 8. Financial Statements", "NOTE 14: INCOME TAXES"])])
    index.chunks_under({"income tax": "effective_tax_rate"})  # {"f#chunk-1": "income tax"}
    ```
    """

    def __init__(self, chunks: Iterable[tuple[str, Sequence[str]]]) -> None:
        # (normalized heading, is an Item title) -> chunk ids; an Item title only matches as a whole.
        self._by_heading: dict[tuple[str, bool], list[str]] = {}
        for chunk_id, path in chunks:
            keys = {(normalize_heading(str(h)), depth == 0): None for depth, h in enumerate(path)}
            for key in keys:
                if key[0]:
                    self._by_heading.setdefault(key, []).append(chunk_id)

    def __len__(self) -> int:
        return len(self._by_heading)

    def chunks_under(self, titles: Mapping[str, str], whole_only: bool = False) -> dict[str, str]:
        """``{chunk id: matched title}`` of the chunks under a heading that matches one of ``titles`` (the rule
        of ``section_match``; with ``whole_only`` only whole headings, for a title that is a heading of this filing,
        such as a section FLAM routed to), in the order of the filing's headings; a chunk under several keeps the
        first."""
        found: dict[str, str] = {}
        if not titles:
            return found
        for (heading, item_title), chunk_ids in self._by_heading.items():
            title = _matching_title(heading, titles, whole_only=item_title or whole_only)
            if title is None:
                continue
            for chunk_id in chunk_ids:
                found.setdefault(chunk_id, title)
        return found
