"""Item start pages and detected filing metadata per filing, to diff Item detection before and after a change.

Runs what indexing runs up to the sections: ``FilingConverter.parse``, ``detect_filing_meta`` on the page texts
(as ``FilingConverter.to_document`` does), page cleanup and ``detect_item_sections`` (falling back to heading
sections, as ``core.ingest.structure.structure_filing`` does). No chunking, no embedding.

    python benchmarks/item_starts.py ../shared/data/financebench-dev/pdfs ../shared/data/edgar-html \
        [--out items.json] [--cache DIR] [--diff before.json]

Prints one line per filing: ``NAME: form=10-K company="..." period=FY2019 | 1:4 1A:10 ...`` (``item:start_page``).
``--cache DIR`` keeps the parsed filings (pickle) so reruns after a change to the detectors skip PDF parsing;
delete the folder after changing a parser. ``--diff FILE`` compares with an earlier ``--out`` and prints every
filing whose Items or metadata changed (exit 1 if any did).
"""

import argparse
import hashlib
import json
import logging
import pickle
import sys
from pathlib import Path
from typing import Any

from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.core.ingest.filing_meta import detect_filing_meta
from haystack_fin.core.ingest.layout import FilingParseError, ParsedFiling
from haystack_fin.core.ingest.structure import filing_sections

SUFFIXES = (".pdf", ".htm", ".html", ".htm.gz", ".html.gz")


def _files(dirs: list[str]) -> list[Path]:
    found: list[Path] = []
    for d in dirs:
        p = Path(d)
        if p.is_file():
            found.append(p)
            continue
        found += sorted(f for f in p.iterdir() if f.is_file() and f.name.lower().endswith(SUFFIXES))
    return found


def _parse(path: Path, converter: FilingConverter, cache: Path | None) -> ParsedFiling:
    if cache is None:
        return converter.parse(path)
    stat = path.stat()
    key = hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    cached = cache / f"{path.name}.{key}.pickle"
    if cached.exists():
        with cached.open("rb") as fp:
            return pickle.load(fp)  # our own cache file, written below
    parsed = converter.parse(path)
    cache.mkdir(parents=True, exist_ok=True)
    with cached.open("wb") as fp:
        pickle.dump(parsed, fp)
    return parsed


def item_starts(parsed: ParsedFiling) -> dict[str, Any]:
    """Detected company/form/period and the ``[item, start_page]`` list of one parsed filing."""
    meta = detect_filing_meta(parsed.page_texts, Path(parsed.source_path).name, parsed.meta)
    _, sections = filing_sections(parsed, meta.form)
    return {
        "company": meta.company,
        "form": meta.form,
        "period": meta.period,
        "items": [[s.item, s.start_page] for s in sections],
    }


def _line(name: str, rec: dict[str, Any]) -> str:
    if "error" in rec:
        return f"{name}: error: {rec['error']}"
    items = " ".join(f"{item}:{page}" for item, page in rec["items"])
    return f'{name}: form={rec["form"]} company="{rec["company"]}" period={rec["period"]} | {items}'


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+", help="folders (or files) of PDF / EDGAR HTML filings")
    ap.add_argument("--out", type=Path, help="write the results as JSON")
    ap.add_argument("--cache", type=Path, help="folder for parsed filings (pickle), reused by later runs")
    ap.add_argument("--diff", type=Path, help="an earlier --out file to compare with")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    converter = FilingConverter()
    results: dict[str, dict[str, Any]] = {}
    for path in _files(args.dirs):
        try:
            rec = item_starts(_parse(path, converter, args.cache))
        except FilingParseError as exc:
            rec = {"error": str(exc)}
        results[path.name] = rec
        print(_line(path.name, rec), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    if args.diff:
        before = json.loads(args.diff.read_text())
        changed = 0
        for name in sorted(set(before) | set(results)):
            old, new = before.get(name), results.get(name)
            if old != new:
                changed += 1
                print(f"\nCHANGED {name}")
                print(f"  before: {_line(name, old) if old else '(absent)'}")
                print(f"  after:  {_line(name, new) if new else '(absent)'}")
        print(f"\n{changed} of {len(results)} filings changed")
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
