"""OCR of scanned PDF pages into the word boxes and lines that the text-layer path produces.

A page without a text layer is rendered with PyMuPDF and read by RapidOCR (``rapidocr-onnxruntime``, the optional
``[ocr]`` extra; it ships its ONNX models and runs offline). Its output is turned into what ``ingest/pdf.py`` reads from
a text page - PyMuPDF-style word tuples ``(x0, y0, x1, y1, text, block, line, word_no)`` in PDF points and visual
lines with a font size and a bold flag - so structure detection and the table detector run unchanged.

Why the recognizer is driven piece by piece rather than through ``RapidOCR.__call__``:

* The bundled recognizer (PP-OCRv4, trained mostly on Chinese) often drops the spaces of English text
  ("CondensedConsolidatedStatementsofEarnings"), which breaks Item headings and word matching. Word boundaries are
  therefore taken from the image: a column gap in the line's ink wider than a fraction of its height is a word
  space. Recognized spaces are kept too (italic words can touch).
* Words are then given the characters whose CTC positions fall on them. Where the recognizer's character
  positions cannot be used, a line box is split into word boxes by character proportion (each word's share of
  the line's width equals its share of the characters) - an approximation that is off by up to a character
  width in proportional fonts.
* Recognition cost is linear in the width of the crop after it is scaled to 48 px height, so crops are cut
  tight to the ink; detection runs on a lower-resolution rendering than recognition.

Measured (``benchmarks/bench_ocr.py``: 12 pages of the committed fixtures - cover, contents, statements, notes,
prose, an 8-K - scanned at 300 dpi, read at 200 dpi; 4,036 expected words): word recall 0.958, precision 0.974
(multiset overlap with the text layer); 16.5-70 s of CPU per page, mean 31 s, growing with the amount of text
(recognition of a 48 px high strip costs ~60 ms per 320 px on these 2 cores). OCR is two to three orders of
magnitude slower than reading a text layer.

The numbers that OCR reads pass a plausibility check (``number_suspicion``, ``suspect_numbers``,
``suspect_table_cells``): malformed digit groups, unbalanced parentheses, letters inside a number and values an
order of magnitude off the other values of their row. Suspects are reported, not corrected.
"""

import re
import threading
import time
from dataclasses import dataclass, field
from statistics import median
from typing import Any

import numpy as np
import pymupdf

from haystack_fin.core.log import get_logger

logger = get_logger(__name__)

OCR_EXTRA_HINT = "install haystack-fin[ocr] to OCR scanned pages"

# Recognition resolution. Measured on 12 pages of the committed fixtures (benchmarks/bench_ocr.py): 200 dpi
# reads 8 pt text (word recall 0.92 on an 8 pt page) where detection at 150 dpi merges its lines (0.75).
DEFAULT_DPI = 200
# A page is rendered for OCR at the recognition resolution, or lower so that it holds at most this many pixels: a
# page's size is whatever the PDF says (up to 200 x 200 inches: 1.6 billion pixels at 200 dpi, 5 GB in the
# detector's RGB copy). Letter at 200 dpi is 3.7 MP, tabloid 7.5 MP, so real filing pages keep 200 dpi.
PAGE_MAX_PIXELS = 12_000_000
# A page "has no text layer" when it holds fewer than this many non-space characters...
MIN_TEXT_CHARS = 20
# ...and an image covering at least this share of the page.
MIN_IMAGE_SHARE = 0.3
# RapidOCR's own default: recognitions below this mean character probability are noise (rules, specks).
MIN_LINE_CONFIDENCE = 0.5
# A column gap wider than this share of the line's ink height is a word space (letter gaps stay below ~0.12)...
WORD_GAP = 0.24
# ...and next to a "1" inside a number wider than this: Arial's tabular "1" leaves ~0.28 em of side bearing
# ("1,093", "1.25", "1,116"), while a space after a comma ("29, 2023", ", 1") shows ~0.42-0.49 em.
DIGIT_GAP = 0.5
_DIGITISH = set("0123456789,.")
# Vertical margin of a recognition crop, as a share of the ink height.
CROP_MARGIN = 0.25

Word = tuple[float, float, float, float, str, int, int, int]


class OcrUnavailableError(RuntimeError):
    """The ``[ocr]`` extra (rapidocr-onnxruntime) is not installed."""


@dataclass
class OcrLine:
    """One recognized text line (a detection box): text, bbox in points, estimated font size and boldness."""

    text: str
    bbox: tuple[float, float, float, float]
    size: float
    bold: bool
    confidence: float
    words: list[Word] = field(default_factory=list)


@dataclass
class OcrPage:
    """A page read by OCR: words in ``page.get_text("words")`` form, lines, mean character confidence, time."""

    words: list[Word]
    lines: list[OcrLine]
    confidence: float | None
    seconds: float


# ---------------------------------------------------------------------------------------------------------------
# Engine (created once per process, on first use)
# ---------------------------------------------------------------------------------------------------------------

_engine: Any = None
_engine_lock = threading.Lock()


def _import_rapidocr() -> Any:
    from rapidocr_onnxruntime import RapidOCR  # the optional [ocr] extra

    return RapidOCR


def ocr_available() -> bool:
    """Whether the OCR engine can be imported (the ``[ocr]`` extra is installed)."""
    try:
        _import_rapidocr()
    except ImportError:
        return False
    return True


def get_engine() -> Any:
    """The process's RapidOCR instance (its ONNX sessions take ~0.5 s to load, so it is made once).

    :raises OcrUnavailableError: rapidocr-onnxruntime is not installed.
    """
    global _engine
    with _engine_lock:
        if _engine is None:
            try:
                rapid_ocr = _import_rapidocr()
            except ImportError as exc:
                raise OcrUnavailableError(OCR_EXTRA_HINT) from exc
            # Filings are upright: the 180-degree classifier only costs time.
            _engine = rapid_ocr(use_cls=False)
        return _engine


# ---------------------------------------------------------------------------------------------------------------
# Which pages need OCR
# ---------------------------------------------------------------------------------------------------------------


def needs_ocr(page: pymupdf.Page, n_text_chars: int) -> bool:
    """A page needs OCR when its text layer holds almost nothing but an image covers a large part of it."""
    if n_text_chars >= MIN_TEXT_CHARS:
        return False
    area = abs(page.rect.width * page.rect.height) or 1.0
    covered = 0.0
    for info in page.get_image_info():
        x0, y0, x1, y1 = info["bbox"]
        covered = max(covered, abs((x1 - x0) * (y1 - y0)) / area)
    return covered >= MIN_IMAGE_SHARE


# ---------------------------------------------------------------------------------------------------------------
# Image helpers
# ---------------------------------------------------------------------------------------------------------------


def page_render_dpi(width_pt: float, height_pt: float, dpi: int, max_pixels: int) -> int:
    """``dpi``, or less so that a ``width_pt`` x ``height_pt`` page renders to at most ``max_pixels`` pixels."""
    area_in = max(width_pt * height_pt, 1.0) / (72.0 * 72.0)
    return max(1, int(min(dpi, (max_pixels / area_in) ** 0.5)))


def _render_gray(page: pymupdf.Page, dpi: int) -> np.ndarray:
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    return np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)[:, : pix.width].copy()


def _otsu(gray: np.ndarray) -> int:
    """Otsu's threshold: the gray level that best separates ink from paper."""
    hist = np.bincount(gray.ravel(), minlength=256).astype(np.float64)
    total = hist.sum()
    if total == 0:
        return 128
    levels = np.arange(256)
    w0 = np.cumsum(hist)
    m0 = np.cumsum(hist * levels)
    w1 = total - w0
    mean_all = m0[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (mean_all * w0 / total - m0) ** 2 / (w0 * w1)
    between[~np.isfinite(between)] = 0
    return int(np.argmax(between))


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) pairs, end exclusive, of the True runs of a 1-D mask."""
    if not mask.any():
        return []
    padded = np.concatenate(([False], mask, [False]))
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


@dataclass
class _Ink:
    """Ink extent of one detection box in page pixels, and its column runs (letters or touching letters)."""

    x0: int
    y0: int
    x1: int
    y1: int
    runs: list[tuple[int, int]]  # runs of ink columns, x in page pixels, left to right
    stroke: float  # median horizontal ink run length / ink height: thicker for bold


def _ink(binary: np.ndarray, box: tuple[int, int, int, int]) -> _Ink | None:
    x0, y0, x1, y1 = box
    region = binary[y0:y1, x0:x1]
    if region.size == 0 or not region.any():
        return None
    rows = _runs(np.asarray(region.any(axis=1)))
    # The detector's box is padded and may catch the ascenders/descenders of neighbouring lines; the line is the
    # row run holding most ink, plus runs close enough to be its dots, accents and punctuation.
    weights = [int(region[a:b].sum()) for a, b in rows]
    k = int(np.argmax(weights))
    top, bottom = rows[k]
    height = bottom - top
    for a, b in rows[k + 1 :]:
        if a - bottom > max(2, 0.25 * height):
            break
        bottom = b
    for a, b in reversed(rows[:k]):
        if top - b > max(2, 0.25 * height):
            break
        top = a
    band = region[top:bottom]
    h = max(bottom - top, 1)
    cols = np.asarray(band.any(axis=0))
    ink_runs = _runs(cols)
    if not ink_runs:
        return None
    # Stroke thickness from the middle rows (x-height band), where every letter has vertical stems.
    mid = band[h // 3 : max(h // 3 + 1, 2 * h // 3)]
    lengths = [b - a for row in mid for a, b in _runs(row)]
    stroke = float(median(lengths)) / h if lengths else 0.0
    return _Ink(
        x0 + ink_runs[0][0],
        y0 + top,
        x0 + ink_runs[-1][1],
        y0 + bottom,
        [(x0 + a, x0 + b) for a, b in ink_runs],
        stroke,
    )


# Share of the em that a line's ink spans, by what its characters reach: descenders and parentheses go below the
# baseline, capitals, digits and ascenders reach ~0.72 em, lower-case x-height letters ~0.5 em.
_DEEP = set("()[]{}|")
_DESC = set("gjpqyQ")
_COMMA = set(",;")
_TALL = set("bdfhklt0123456789$%&#@!?/") | {chr(c) for c in range(ord("A"), ord("Z") + 1)}


def _em_share(text: str) -> float:
    chars = set(text)
    tall = bool(chars & _TALL)
    if chars & _DEEP:
        return 0.95
    if chars & _DESC:
        return 0.93 if tall else 0.72
    if chars & _COMMA:
        return 0.84 if tall else 0.62
    return 0.72 if tall else 0.5


# ---------------------------------------------------------------------------------------------------------------
# Recognition output -> words
# ---------------------------------------------------------------------------------------------------------------


def _char_positions(text: str, word_info: Any, crop_w: int) -> list[float] | None:
    """Centre x (crop pixels) of each character of ``text`` from the CTC columns RapidOCR reports."""
    try:
        col_num, word_list, word_cols = word_info[0], word_info[1], word_info[2]
        cols = [c for w in word_cols for c in w]
        chars = [ch for w in word_list for ch in w]
    except (TypeError, IndexError):
        return None
    if len(chars) != len(text) or not col_num:
        return None
    cell = crop_w / float(col_num)
    return [(c + 0.5) * cell for c in cols]


def _proportional_words(text: str, x0: float, x1: float) -> list[tuple[str, float, float]]:
    """Split a line box into word boxes by character proportion (fallback: see the module docstring)."""
    tokens = text.split()
    n = sum(len(t) for t in tokens) + max(len(tokens) - 1, 0)
    if not tokens or n == 0:
        return []
    width = (x1 - x0) / n
    out = []
    pos = 0
    for tok in tokens:
        out.append((tok, x0 + pos * width, x0 + (pos + len(tok)) * width))
        pos += len(tok) + 1
    return out


def _assign_words(
    text: str, xs: list[float], runs: list[tuple[int, int]], height: float, crop_x0: int
) -> list[tuple[str, float, float]]:
    """Words of a recognized line: (text, x0, x1) in page pixels.

    Each character goes to the ink run (``runs``: letter-level column runs) nearest its CTC position, in reading
    order. A word ends at a recognized space (at the widest ink gap between the two characters, or between
    them when their ink touches) or at an ink gap wider than ``WORD_GAP`` x the ink height - except next to a
    "1" inside a number ("1,093", "1.25"): tabular digits carry wide side bearings, so there the gap must exceed
    ``DIGIT_GAP`` x the height.
    """
    run_of: list[int] = []
    chars: list[tuple[str, float, bool]] = []  # char, page x, space before it
    space = False
    last = 0
    for ch, x in zip(text, xs, strict=True):
        if ch == " ":
            space = True
            continue
        px = crop_x0 + x
        best = min(
            range(len(runs)),
            key=lambda i: 0.0 if runs[i][0] <= px <= runs[i][1] else min(abs(px - runs[i][0]), abs(px - runs[i][1])),
        )
        last = max(best, last)
        run_of.append(last)
        chars.append((ch, px, space and bool(chars)))
        space = False
    if not chars:
        return []
    words: list[list[int]] = [[0]]  # character indexes per word
    cuts: list[float | None] = []  # where the previous word ends and the next begins (None: run edges)
    for k in range(1, len(chars)):
        a, b = run_of[k - 1], run_of[k]
        gaps = [(runs[i + 1][0] - runs[i][1], i) for i in range(a, b)]
        widest = max(gaps) if gaps else None
        if chars[k][2]:
            if widest is not None:
                cuts.append(None)
            else:  # touching ink: split between the two characters' positions
                cuts.append((chars[k - 1][1] + chars[k][1]) / 2)
            words.append([k])
            continue
        pair = chars[k - 1][0] + chars[k][0]
        limit = DIGIT_GAP if "1" in pair and set(pair) <= _DIGITISH else WORD_GAP
        if widest is not None and widest[0] > limit * height:
            cuts.append(None)
            words.append([k])
        else:
            words[-1].append(k)
    out: list[tuple[str, float, float]] = []
    for w, idxs in enumerate(words):
        x0 = float(runs[run_of[idxs[0]]][0])
        x1 = float(runs[run_of[idxs[-1]]][1])
        before = cuts[w - 1] if w > 0 else None
        after = cuts[w] if w < len(cuts) else None
        if before is not None:
            x0 = before
        if after is not None:
            x1 = after
        out.append(("".join(chars[i][0] for i in idxs), x0, max(x1, x0)))
    return out


def _snap_sizes(sizes: list[float], weights: list[int]) -> list[float]:
    """Estimated sizes within 12% of the page's body size are the body size; others round to 0.5 pt."""
    if not sizes:
        return sizes
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    half = sum(weights) / 2
    acc = 0
    body = sizes[order[-1]]
    for i in order:
        acc += weights[i]
        if acc >= half:
            body = sizes[i]
            break
    return [round(body, 1) if abs(s - body) <= 0.12 * body else round(s * 2) / 2 for s in sizes]


def ocr_page(page: pymupdf.Page, dpi: int = DEFAULT_DPI) -> OcrPage:
    """OCR one page into PyMuPDF-style word tuples (PDF points) and lines.

    :param page: the page (its rendering is what is read, whatever the page holds).
    :param dpi: recognition resolution; lower for a page larger than ``PAGE_MAX_PIXELS`` at that resolution.
    :raises OcrUnavailableError: the ``[ocr]`` extra is not installed.
    """
    engine = get_engine()
    start = time.perf_counter()
    dpi = page_render_dpi(page.rect.width, page.rect.height, dpi, PAGE_MAX_PIXELS)
    gray = _render_gray(page, dpi)
    # Detection runs on the same rendering: at 150 dpi or less it merges the lines of 8 pt text set on 9 pt
    # leading into one box (bestbuy page 24: word recall 0.92 at 200 dpi, 0.75 with detection at 150 dpi).
    boxes, _ = engine.text_det(np.repeat(gray[:, :, None], 3, axis=2))
    det_seconds = time.perf_counter() - start
    if boxes is None or len(boxes) == 0:
        return OcrPage([], [], None, time.perf_counter() - start)
    binary = gray < min(_otsu(gray), 200)
    height, width = gray.shape
    inks: list[_Ink] = []
    crops: list[np.ndarray] = []
    crop_x0s: list[int] = []
    for quad in boxes:
        pts = np.asarray(quad, dtype=np.float64)
        bx0, by0 = int(max(pts[:, 0].min(), 0)), int(max(pts[:, 1].min(), 0))
        bx1, by1 = int(min(np.ceil(pts[:, 0].max()), width)), int(min(np.ceil(pts[:, 1].max()), height))
        ink = _ink(binary, (bx0, by0, bx1, by1))
        if ink is None:
            continue
        margin = max(2, int(CROP_MARGIN * (ink.y1 - ink.y0)))
        cx0, cx1 = max(ink.x0 - margin, 0), min(ink.x1 + margin, width)
        cy0, cy1 = max(ink.y0 - margin, 0), min(ink.y1 + margin, height)
        crops.append(np.repeat(gray[cy0:cy1, cx0:cx1, None], 3, axis=2))
        crop_x0s.append(cx0)
        inks.append(ink)
    if not crops:
        return OcrPage([], [], None, time.perf_counter() - start)
    results, _ = engine.text_rec(crops, True)
    to_pt = 72.0 / dpi
    raw: list[tuple[_Ink, str, float, list[tuple[str, float, float]], list[float]]] = []
    for ink, crop, cx0, result in zip(inks, crops, crop_x0s, results, strict=True):
        text, conf = str(result[0]), float(result[1])
        if conf < MIN_LINE_CONFIDENCE or not text.strip():
            continue
        xs = _char_positions(text, result[2] if len(result) > 2 else None, crop.shape[1])
        if xs is not None:
            words = _assign_words(text, xs, ink.runs, ink.y1 - ink.y0, cx0)
        else:
            words = _proportional_words(text, ink.x0, ink.x1)
        char_confs = list(result[2][4]) if len(result) > 2 and len(result[2]) > 4 else [conf]
        raw.append((ink, text, conf, words, char_confs))
    sizes = [(ink.y1 - ink.y0) * to_pt / _em_share(text) for ink, text, *_ in raw]
    sizes = _snap_sizes(sizes, [len(text) for _, text, *_ in raw])
    strokes = [ink.stroke for ink, *_ in raw if ink.stroke > 0]
    body_stroke = median(strokes) if strokes else 0.0
    lines: list[OcrLine] = []
    all_words: list[Word] = []
    confs: list[float] = []
    for block, ((ink, _text, conf, words, char_confs), size) in enumerate(zip(raw, sizes, strict=True)):
        # PyMuPDF word boxes span the font's ascender to descender (~1.12 em) around the ink's centre.
        cy = (ink.y0 + ink.y1) / 2 * to_pt
        y0, y1 = cy - 0.56 * size, cy + 0.56 * size
        line_words: list[Word] = [
            (wx0 * to_pt, y0, wx1 * to_pt, y1, wtext, block, 0, k)
            for k, (wtext, wx0, wx1) in enumerate(w for w in words if w[0])
        ]
        if not line_words:
            continue
        bold = body_stroke > 0 and ink.stroke >= 1.3 * body_stroke and len(strokes) >= 3
        line_text = " ".join(w[4] for w in line_words)
        bbox = (line_words[0][0], y0, line_words[-1][2], y1)
        lines.append(OcrLine(line_text, bbox, size, bold, conf, line_words))
        all_words.extend(line_words)
        confs.extend(char_confs)
    confidence = float(np.mean(confs)) if confs else None
    seconds = time.perf_counter() - start
    logger.debug(
        "OCR page {page}: {n_lines} lines, {n_words} words, {seconds:.2f} s (detection {det_seconds:.2f} s)",
        page=page.number + 1,
        n_lines=len(lines),
        n_words=len(all_words),
        seconds=seconds,
        det_seconds=det_seconds,
    )
    return OcrPage(all_words, lines, confidence, seconds)


# ---------------------------------------------------------------------------------------------------------------
# Text inside a figure (chart images: axis labels, legends, data labels)
# ---------------------------------------------------------------------------------------------------------------

# A figure is OCR'd when it is at least this big on both sides (points): smaller images are logos and icons.
FIGURE_MIN_SIDE = 100.0
# Work bound per figure: at most this many detected lines are recognized (top to bottom), so a figure's text does
# not depend on machine load (the dev figures: 8-90 detected lines; stock graphs hold their data table).
FIGURE_MAX_LINES = 40
# Wall-time safety net per figure (seconds): recognition stops between batches once it is spent (after the first
# batch, so a loaded machine still reads the top lines).
FIGURE_TIME_BUDGET = 20.0
# The figure is rendered at DEFAULT_DPI, or lower so that it holds at most this many pixels (detection cost grows
# with the area).
FIGURE_MAX_PIXELS = 1_000_000
_FIGURE_BATCH = 8


@dataclass
class OcrFigure:
    """Text read from a figure: lines in reading order, mean confidence, time, whether the budget cut it short."""

    lines: list[str]
    confidence: float | None
    seconds: float
    truncated: bool = False

    @property
    def text(self) -> str:
        return " ".join(self.lines)


def ocr_figure(
    page: pymupdf.Page,
    bbox: tuple[float, float, float, float],
    dpi: int = DEFAULT_DPI,
    time_budget: float = FIGURE_TIME_BUDGET,
) -> OcrFigure:
    """OCR the text inside a figure's box (a chart image's labels).

    The box is rendered alone (``clip``, at most ``FIGURE_MAX_PIXELS``), its text lines detected, then the first
    ``FIGURE_MAX_LINES`` recognized in batches, top to bottom, stopping early only when ``time_budget`` seconds have
    passed after a batch; lines below ``MIN_LINE_CONFIDENCE`` are dropped. Recognized text is taken
    as the recognizer spells it (short labels and numbers; the word-gap repair of ``ocr_page`` is for prose).

    :raises OcrUnavailableError: the ``[ocr]`` extra is not installed.
    """
    engine = get_engine()
    start = time.perf_counter()
    x0, y0, x1, y1 = bbox
    dpi = page_render_dpi(x1 - x0, y1 - y0, dpi, FIGURE_MAX_PIXELS)
    pix = page.get_pixmap(dpi=dpi, clip=pymupdf.Rect(bbox), colorspace=pymupdf.csGRAY, alpha=False)
    gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)[:, : pix.width]
    boxes, _ = engine.text_det(np.repeat(gray[:, :, None], 3, axis=2))
    if boxes is None or len(boxes) == 0:
        return OcrFigure([], None, time.perf_counter() - start)
    quads = sorted(
        (np.asarray(q, dtype=np.float64) for q in boxes), key=lambda q: (round(q[:, 1].min() / 8), q[:, 0].min())
    )
    crops = []
    height, width = gray.shape
    for q in quads:
        bx0, by0 = int(max(q[:, 0].min() - 2, 0)), int(max(q[:, 1].min() - 2, 0))
        bx1, by1 = int(min(q[:, 0].max() + 2, width)), int(min(q[:, 1].max() + 2, height))
        if bx1 - bx0 >= 4 and by1 - by0 >= 4:
            crops.append(np.repeat(gray[by0:by1, bx0:bx1, None], 3, axis=2))
    lines: list[str] = []
    confs: list[float] = []
    truncated = len(crops) > FIGURE_MAX_LINES
    crops = crops[:FIGURE_MAX_LINES]
    for k in range(0, len(crops), _FIGURE_BATCH):
        if k and time.perf_counter() - start > time_budget:
            truncated = True
            break
        results, _ = engine.text_rec(crops[k : k + _FIGURE_BATCH], False)
        for result in results:
            text, conf = str(result[0]).strip(), float(result[1])
            if text and conf >= MIN_LINE_CONFIDENCE:
                lines.append(text)
                confs.append(conf)
    seconds = time.perf_counter() - start
    if truncated:
        n_read = min(k, len(crops))
        logger.info(
            "figure OCR on page {page} stopped after {seconds:.1f} s ({n_read} of {n_lines} lines)",
            page=page.number + 1,
            seconds=seconds,
            n_read=n_read,
            n_lines=len(crops),
        )
    return OcrFigure(lines, float(np.mean(confs)) if confs else None, seconds, truncated)


# ---------------------------------------------------------------------------------------------------------------
# Plausibility of OCR'd numbers
# ---------------------------------------------------------------------------------------------------------------

# A number as filings print it: "1,234,567", "1234", "0.69", ".5" (signs, "$", "%" and parentheses stripped).
_WELL_FORMED = re.compile(r"^(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$|^\.\d+$")
# Letters OCR confuses with digits: O/o for 0, l/I for 1, S for 5, B for 8.
_CONFUSABLE = set("OolISB")
_AS_DIGITS = str.maketrans("OolISB", "001158")


def number_suspicion(token: str) -> str | None:
    """Why an OCR'd number-like token is implausible, or None when it reads as a well-formed number.

    Reasons: ``"letters"`` ("1O5", "l23": a letter OCR confuses with a digit, inside a number), ``"digit_groups"``
    ("1,23,4", "12,34": thousands separators not every three digits), ``"parentheses"`` ("(123", "45)": a negative
    amount's parentheses unbalanced). Tokens without a digit are not numbers and return None.
    """
    text = token.strip().rstrip(".,;:")
    if not any(ch.isdigit() for ch in text):
        return None
    opens, closes = text.count("("), text.count(")")
    core = text.strip("()$%+-−–— ")
    core = core.lstrip("$")
    if not core:
        return None
    # "1O5" reads as 105 with the letter taken for the digit it resembles; "COVID-19" and "S-8" do not.
    confused = any(ch in _CONFUSABLE for ch in core) and any(ch.isdigit() for ch in core)
    if confused and _WELL_FORMED.match(core.translate(_AS_DIGITS)):
        return "letters"
    if any(ch.isalpha() for ch in core):
        return None  # "10-K", "Q2", "3M", "FY2023": words with digits, not amounts
    if opens != closes:
        return "parentheses"
    if "," in core and not _WELL_FORMED.match(core):
        return "digit_groups"
    if core.count(".") > 1:
        return "digit_groups"
    return None


def suspect_numbers(text: str) -> list[list[str]]:
    """``[token, reason]`` for each implausible number-like token in OCR'd running text."""
    out: list[list[str]] = []
    for raw in text.split():
        if not any(ch.isdigit() for ch in raw):
            continue
        # Sentence punctuation and a parenthesised aside "(see Note 3)" are not part of the number.
        token = raw.rstrip(".,;:")
        if token.startswith("(") and token.count("(") > token.count(")") and not token[1:2].isdigit():
            continue
        reason = number_suspicion(token)
        if reason == "parentheses" and (token.endswith(")") or token.startswith("(")):
            # Prose parentheses open and close around words ("(1) the", "in 2023)"): only a table cell's
            # parentheses are a sign.
            continue
        if reason:
            out.append([raw, reason])
    return out


# A value this many times beyond every other value of its row is an order of magnitude off.
MAGNITUDE_FACTOR = 10.0
_MIN_MAGNITUDE_VALUES = 3
# "2.835" in a table whose amounts are grouped "2,835": a thousands comma read as a decimal point (7 pt print at
# 200 dpi: 5 such cells on the fixture's balance sheet).
_GROUPED = re.compile(r"\d,\d{3}\b")
_POINT_GROUP = re.compile(r"^\d{1,3}\.\d{3}$")
_OTHER_KIND_HEADER = re.compile(
    r"change|%|percent|increase|decrease|variance|difference|inc\b|dec\b|ratio|margin|bps|basis points", re.I
)


def _cell_value(cell: str) -> float | None:
    from haystack_fin.core.table_cells import parse_cell  # local: table_cells is the one cell parser

    parsed = parse_cell(cell)
    if parsed.value is None or parsed.is_percent or parsed.value == 0:
        return None
    return abs(parsed.value)


def _decimals(cell: str) -> int:
    match = re.search(r"\.(\d+)", cell)
    return len(match.group(1)) if match else 0


def suspect_table_cells(rows: list[list[str]], header_rows: int = 0) -> list[list[Any]]:
    """``[row, col, text, reason]`` for each implausible number in an OCR'd table (row indexes ``rows``; the
    first ``header_rows`` rows are column headers, not checked but read to skip change and ratio columns).

    Besides the token checks of ``number_suspicion``, a value is ``"magnitude"``-suspect when it is
    ``MAGNITUDE_FACTOR`` times larger than every other value of its row, or that many times smaller (rows of 3+
    nonzero values, percentages and change columns left out), and its decimal places differ from those of the
    other values, which agree among themselves: the signature of a dropped or misread decimal point
    ("1.25 | 136 | 2.37", "1,093 | 1.874 | 840").

    The comparison runs along the row, not down the column: in a financial statement a column holds one period's
    revenue next to its per-share earnings (a 1,000x spread that is correct), while a row holds the same line item
    across periods. Against every other value rather than their median, because small line items swing
    legitimately ("Investment income 12 | 3 | 33 | (2)": 33 is 11x the median of the others). On the clean
    text-layer tables of every third FinanceBench dev filing (15,301 numeric cells) the 10x rule alone flagged
    3.5% of the cells (equity statements mix share counts and amounts, debt tables principal and discount); with
    the decimal-places condition 28 cells (0.18%); all rules together 58 (0.38%: 23 "separator", 7 parenthesis
    flags on header rows read as data).
    A cell of the form "2.835" in a table that groups thousands with commas elsewhere is ``"separator"``-suspect
    (a comma read as a decimal point). A cell with a token problem is not also checked for magnitude.
    """
    out: list[list[Any]] = []
    grouped = any(_GROUPED.search(cell) for row in rows[header_rows:] for cell in row[1:])
    # Change and ratio columns ("$ Change", "% Change", "Increase (Decrease)") hold another quantity than the
    # period columns beside them; they are kept out of the row comparison.
    other_kind = {
        c for header in rows[:header_rows] for c, cell in enumerate(header) if _OTHER_KIND_HEADER.search(cell)
    }
    for r, row in enumerate(rows):
        if r < header_rows:
            continue
        values: dict[int, float] = {}
        decimals: dict[int, int] = {}
        for c, cell in enumerate(row):
            if c == 0 or not cell.strip():
                continue
            reason = None
            for token in cell.split():
                reason = number_suspicion(token)
                if reason:
                    break
            if not reason and grouped and _POINT_GROUP.match(cell.strip("$()% ")):
                reason = "separator"
            if reason:
                out.append([r, c, cell, reason])
                continue
            value = _cell_value(cell)
            if value is not None and c not in other_kind:
                values[c] = value
                decimals[c] = _decimals(cell)
        if len(values) >= _MIN_MAGNITUDE_VALUES:
            for c, value in values.items():
                others = [v for k, v in values.items() if k != c]
                other_decimals = {d for k, d in decimals.items() if k != c}
                off = value >= MAGNITUDE_FACTOR * max(others) or value * MAGNITUDE_FACTOR <= min(others)
                if off and len(other_decimals) == 1 and decimals[c] not in other_decimals:
                    out.append([r, c, row[c], "magnitude"])
    out.sort(key=lambda s: (s[0], s[1]))
    return out
