"""What the filing scope knows about one filing (``FilingProfile``) and the one spelling of a form's family.

A leaf module: it imports only ``core.schema``, so the company finder (``companies``), the filing ranking
(``filing_ranking``) and the indexing side (``core.ingest.items``) can all import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from haystack_fin.core import schema

ANNUAL_FORMS = frozenset({"10-K", "20-F", "40-F"})


def form_family(form: str) -> str:
    """The form without its amendment mark, in SEC spelling: "10-K/A" -> "10-K", "10-q" -> "10-Q"; "" -> "other";
    forms that are not SEC form numbers ("earnings_release", "other") keep their name."""
    name = (form or "").strip()
    if not name:
        return "other"
    base = name.split("/")[0].strip() if name.upper().endswith("/A") else name
    return base.upper() if base[:1].isdigit() else base


def iso_date(value: str) -> date | None:
    """The date of an ISO string ("2023-07-29", or a longer timestamp), None when empty or invalid."""
    try:
        return date.fromisoformat(value[:10]) if value else None
    except ValueError:
        return None


@dataclass(frozen=True)
class FilingProfile:
    """What the index knows about one filing: its ``filing`` node's meta (see ``FilingSplitter._filing_node``).

    ``items`` holds the filing's Item codes; for an 8-K they say which event it reports ("5.07": a shareholder vote).
    The identity fields say who the registrant is, as the filing states it: ``cik`` (inline XBRL
    ``dei:EntityCentralIndexKey`` or an EDGAR header), every trading symbol of its Section 12(b) table
    (``tickers``, ``ticker`` being the first), the SEC ``file_numbers``, the ``legal_name`` and ``former_names``.
    """

    filing_id: str
    company: str = ""
    ticker: str = ""
    form: str = "other"
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    period_end: str = ""
    period: str = ""
    items: tuple[str, ...] = ()
    cik: str = ""
    tickers: tuple[str, ...] = ()
    file_numbers: tuple[str, ...] = ()
    legal_name: str = ""
    former_names: tuple[str, ...] = ()

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> FilingProfile:
        """Profile from a filing node's meta (read through ``schema.FilingNode``: tolerant of missing keys and of
        numbers stored as strings)."""
        node = schema.FilingNode.from_meta(meta)
        return cls(
            filing_id=node.filing_id,
            company=node.company,
            ticker=node.ticker,
            form=node.form or "other",
            fiscal_year=node.fiscal_year,
            fiscal_quarter=node.fiscal_quarter,
            period_end=node.period_end,
            period=node.period,
            items=tuple(it["item"] for it in node.items if it["item"]),
            cik=node.cik,
            tickers=tuple(node.tickers),
            file_numbers=tuple(node.file_numbers),
            legal_name=node.legal_name,
            former_names=tuple(node.former_names),
        )

    @property
    def all_tickers(self) -> tuple[str, ...]:
        """``ticker`` and ``tickers``, upper case, each once."""
        return tuple(dict.fromkeys(t.upper() for t in (self.ticker, *self.tickers) if t))

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the filing gives its registrant: the indexed company name, the legal name, former names."""
        return tuple(dict.fromkeys(n for n in (self.company, self.legal_name, *self.former_names) if n))

    @property
    def form_family(self) -> str:
        return form_family(self.form)

    @property
    def reports_results(self) -> bool:
        """An earnings release, or an 8-K that furnishes one (Item 2.02, or Item 12 before 2004): it reports a
        fiscal period's results rather than an event."""
        family = self.form_family
        return family == "earnings_release" or (family == "8-K" and bool({"2.02", "12"} & set(self.items)))

    @property
    def period_end_date(self) -> date | None:
        return iso_date(self.period_end)

    @property
    def is_annual(self) -> bool:
        """An annual report: 10-K/20-F/40-F, or an "other" document with a fiscal year and no quarter."""
        family = self.form_family
        if family in ANNUAL_FORMS:
            return True
        return family == "other" and self.fiscal_year is not None and self.fiscal_quarter is None
