"""A table of known companies (CIK, ticker, exchange, name), read offline, to tell a company the index lacks from a
word that names no company, and to give indexed filings the tickers their covers do not print.

The default source is SEC's company-tickers list (every listed registrant: about 10,000 rows of CIK, ticker,
exchange and EDGAR name) as the ``edgartools`` package ships it, ``edgar/reference/data/company_tickers.parquet``,
read with ``pyarrow`` and without any network access (install the ``companies`` extra: ``pip install
haystack-fin[companies]``). Any CSV or JSON-lines file with ``cik``, ``ticker``, ``name`` (and optionally
``exchange``) columns works too (``reference_path``). Without a table the scope still resolves indexed companies;
it only cannot say "not indexed" of a company it has never heard of, and falls back to the dense ranking instead.
"""

from __future__ import annotations

import csv
import importlib.util
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from haystack_fin.core.ingest.registrant import normalize_cik
from haystack_fin.core.log import get_logger
from haystack_fin.core.retrieval.company_names import base_tokens, name_tokens, without_legal_form

logger = get_logger(__name__)

EDGARTOOLS_TABLE = ("reference", "data", "company_tickers.parquet")


@dataclass(frozen=True)
class KnownCompany:
    """One listed company: its CIK, EDGAR name and every ticker of it in the table (with exchanges)."""

    cik: str
    name: str
    tickers: tuple[str, ...]
    exchanges: tuple[str, ...] = ()

    @property
    def ticker(self) -> str:
        return self.tickers[0] if self.tickers else ""


def name_keys(name: str) -> list[str]:
    """Compact keys a name is looked up by: without legal form, and without generic words too."""
    keys = []
    for drop in (False, True):
        tokens = name_tokens(name, drop)
        for t in (without_legal_form(tokens), base_tokens(tokens)):
            key = "".join(t)
            if key and key not in keys:
                keys.append(key)
    return keys


class CompanyReference:
    """Known companies by CIK, ticker and name key."""

    def __init__(self, rows: Iterable[tuple[str, str, str, str]], source: str = "") -> None:
        """:param rows: (cik, ticker, exchange, name) tuples; a company listed with several tickers has a row each.
        :param source: where the rows come from (for messages)."""
        by_cik: dict[str, tuple[str, list[str], list[str]]] = {}
        for cik_raw, ticker, exchange, name in rows:
            cik = normalize_cik(cik_raw)
            if not cik:
                continue
            entry = by_cik.setdefault(cik, (name.strip(), [], []))
            symbol = (ticker or "").strip().upper()
            if symbol and symbol not in entry[1]:
                entry[1].append(symbol)
                entry[2].append((exchange or "").strip())
        self.source = source
        self.by_cik = {cik: KnownCompany(cik, n, tuple(t), tuple(x)) for cik, (n, t, x) in by_cik.items()}
        self.by_ticker: dict[str, str] = {}
        self.by_name: dict[str, list[str]] = {}
        for company in self.by_cik.values():
            for symbol in company.tickers:
                self.by_ticker.setdefault(symbol, company.cik)
                # "BRK-B" is also written "BRK.B"
                self.by_ticker.setdefault(symbol.replace("-", "."), company.cik)
            for key in name_keys(company.name):
                ciks = self.by_name.setdefault(key, [])
                if company.cik not in ciks:
                    ciks.append(company.cik)

    def __len__(self) -> int:
        return len(self.by_cik)

    def __iter__(self) -> Iterator[KnownCompany]:
        return iter(self.by_cik.values())

    def get(self, cik: str) -> KnownCompany | None:
        return self.by_cik.get(normalize_cik(cik))

    def by_symbol(self, ticker: str) -> KnownCompany | None:
        cik = self.by_ticker.get(ticker.upper())
        return self.by_cik.get(cik) if cik else None

    def named(self, name: str) -> list[KnownCompany]:
        """Companies whose name, without legal form (or also generic words), is ``name``'s."""
        for key in name_keys(name):
            ciks = self.by_name.get(key)
            if ciks:
                return [self.by_cik[c] for c in ciks]
        return []


def _rows_from_parquet(path: Path) -> list[tuple[str, str, str, str]]:
    import pyarrow.parquet as pq  # the `companies` extra; only imported when a parquet table is read

    # ParquetFile, not read_table: the dataset layer read_table goes through imports pandas (a second at start-up).
    columns = pq.ParquetFile(path).read().to_pydict()
    n = len(columns.get("cik", []))
    get = {k: columns.get(k) or [""] * n for k in ("cik", "ticker", "exchange", "name")}
    return [
        (str(get["cik"][i]), str(get["ticker"][i]), str(get["exchange"][i] or ""), str(get["name"][i]))
        for i in range(n)
    ]


def _rows_from_text(path: Path) -> list[tuple[str, str, str, str]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".jsonl", ".json"):
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        records = list(csv.DictReader(text.splitlines()))
    return [
        (str(r.get("cik", "")), str(r.get("ticker", "")), str(r.get("exchange", "") or ""), str(r.get("name", "")))
        for r in records
    ]


def edgartools_table() -> Path | None:
    """Where the installed ``edgartools`` keeps SEC's company tickers (found without importing the package)."""
    spec = importlib.util.find_spec("edgar")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*EDGARTOOLS_TABLE)
    return path if path.is_file() else None


def load_company_reference(path: str | Path | None = None) -> CompanyReference | None:
    """The reference table at ``path`` (parquet, CSV or JSON lines), else edgartools' copy of SEC's company
    tickers; None when neither is there (the ``companies`` extra is not installed).

    :raises ValueError: ``path`` is given but cannot be read, naming the file.
    """
    if path is not None:
        p = Path(path)
        try:
            rows = _rows_from_parquet(p) if p.suffix.lower() in (".parquet", ".pq") else _rows_from_text(p)
        except (OSError, ValueError, ImportError, KeyError) as exc:
            raise ValueError(f"{p}: cannot read the company reference table ({exc})") from exc
        return CompanyReference(rows, str(p))
    found = edgartools_table()
    if found is None:
        logger.info("No company reference table (pip install haystack-fin[companies]): unknown names fall back")
        return None
    try:
        return CompanyReference(_rows_from_parquet(found), f"edgartools {found.name}")
    except (OSError, ValueError, ImportError) as exc:
        logger.warning("Cannot read {path} ({error}): no company reference table", path=found, error=exc)
        return None
