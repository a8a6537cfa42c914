"""Image and chart chunks of a folder of filings: counts per filing, and a random sample to check by hand.

Runs FilingConverter + FilingSplitter (no embedding, no store) on every PDF/HTML filing, prints the image chunks per
filing (vector charts, raster images, HTML images) and the time figure finding adds, then draws ``--n`` image chunks
at random (``--seed``), renders each PDF figure's region (with 60 pt above for the caption) to a PNG under
``--render-dir`` and writes the sample as JSON lines with empty verdict fields, to be filled in by hand:

    python benchmarks/figure_sample.py /work/shared/data/financebench-dev/pdfs /work/shared/data/edgar-html \
        --out /tmp/figure_sample.jsonl --render-dir /tmp/figures

``benchmarks/data/figure_chunks_sample.jsonl`` is such a sample with its verdicts (see benchmarks/data/README.md).
"""

import argparse
import json
import random
import sys
import time
from pathlib import Path

import pymupdf

from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.components.filing_splitter import FilingSplitter
from haystack_fin.core import schema


def _figures(path: Path, converter: FilingConverter, splitter: FilingSplitter) -> list[dict]:
    docs = converter.run(sources=[path])["documents"]
    if not docs:
        return []
    rows = []
    for chunk in splitter.run(documents=docs)["documents"]:
        if chunk.meta[schema.MODALITY] != "image":
            continue
        image = chunk.meta.get(schema.IMAGE) or {}
        rows.append(
            {
                "filing": path.name,
                "chunk": chunk.id,
                "page": chunk.meta[schema.PAGE_NUMBERS][0],
                "item": chunk.meta[schema.ITEM],
                "bbox": chunk.meta.get(schema.BBOX),
                "kind": image.get("kind"),
                "chart": image.get("chart"),
                "caption": image.get("caption"),
                "labels": image.get("labels"),
                "alt": image.get("alt"),
                "ocr_text": image.get("ocr_text"),
                "context": (image.get("context") or "")[:200],
                "content": chunk.content,
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", default="-")
    parser.add_argument("--render-dir", default="")
    args = parser.parse_args(argv)
    converter, splitter = FilingConverter(), FilingSplitter(term_stats=False, tag_statements=False)
    files = sorted(
        p for folder in args.folders for p in Path(folder).iterdir() if p.suffix.lower() in (".pdf", ".htm", ".html")
    )
    rows: list[dict] = []
    for path in files:
        start = time.perf_counter()
        found = _figures(path, converter, splitter)
        kinds = {k: sum(1 for r in found if r["kind"] == k) for k in ("chart", "raster", "html")}
        print(f"{path.name}: {len(found)} image chunks {kinds} ({time.perf_counter() - start:.1f} s)", file=sys.stderr)
        rows.extend(found)
    print(f"total: {len(rows)} image chunks", file=sys.stderr)
    sample = random.Random(args.seed).sample(rows, min(args.n, len(rows)))
    if args.render_dir:
        out_dir = Path(args.render_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        by_name = {p.name: p for p in files}
        for k, row in enumerate(sample):
            if row["bbox"] and by_name[row["filing"]].suffix.lower() == ".pdf":
                with pymupdf.open(by_name[row["filing"]]) as doc:
                    page = doc[row["page"] - 1]
                    x0, y0, x1, y1 = row["bbox"]
                    clip = pymupdf.Rect(x0 - 20, y0 - 60, x1 + 20, y1 + 20) & page.rect
                    page.get_pixmap(dpi=100, clip=clip).save(out_dir / f"{k:02d}.png")
    for row in sample:
        row.update({"caption_ok": None, "labels_ok": None, "verdict": None, "note": ""})
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in sample)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
