"""Charts and images on PDF pages: vector charts from drawing paths, and the caption and context of any figure.

EDGAR PDFs draw most charts as vector paths whose titles, axis labels and data labels are real text; read as prose,
those words leak into text chunks as number lines ("2021 2020 2021 2020"). ``find_vector_charts`` finds the charts
from the page's drawings (``page.get_cdrawings()``) and hands back, per chart, its bbox and the text lines that are
its labels, so the caller can make one chart element of them and drop them from the running text.

What counts as a chart (chosen on the dev PDFs: Verizon's "Highlights" bar charts and segment donuts, against the
table shading, check boxes and rules on the other 3,200 pages):

* **bars**: two or more filled, visible, non-white rectangles holding no text, sharing a baseline (bottom edge for
  column charts, left edge for bar charts), of different lengths (the longest >= ``_MIN_BAR_LENGTH``), with no
  text between them. Shaded table cells fail one of these: a shaded row holds its text, empty spacer cells of a
  row have equal heights, and the row's other cells put text between them.
* **pies and donuts**: two or more filled curve paths of at least two colours whose boxes overlap, square-ish and
  >= ``_MIN_PIE_SIDE`` a side, with at most ``_MAX_PIE_INNER_LINES`` text lines inside.

A chart's region grows once over the strokes and fills touching its marks (axes, ticks, gridlines, the chart's
frame). Its labels are the lines inside the region plus short lines stacked tightly above or below it, or next to
it on its rows (titles, value labels, axis labels, legends), in reading order. Everything is one pass over the
page's drawings and lines plus sorts, so the cost is linear up to a log factor.

``figure_caption`` and ``figure_context`` find, for any figure box (a chart or a raster image), the nearest
caption-like line ("Figure 3", "Chart", a bold or larger title, a units line) and the paragraph that introduces it;
those stay in the running text and are copied into the figure's chunk.
"""

import bisect
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Box = tuple[float, float, float, float]
ChartKind = Literal["column", "bar", "pie"]  # column: vertical bars; bar: horizontal bars

# A bar's value-axis length at least this (points): shorter filled boxes are swatches, bullets, check boxes.
_MIN_BAR_LENGTH = 30.0
_MIN_BAR_WIDTH = 3.0
# Bars of one chart differ in length by at least this (points): equal boxes on a baseline are table cells.
_MIN_LENGTH_SPREAD = 1.0
_BASELINE_TOL = 1.0
# Bars stand apart; boxes that abut are table cells.
_MIN_BAR_GAP = 1.0
# Axis lines: drawings at most this thick.
_MAX_AXIS_THICKNESS = 2.0
_MIN_PIE_SIDE = 30.0
_MAX_PIE_INNER_LINES = 2
# Fills lighter than this on every channel are page background, not marks.
_WHITE = 0.92
# A drawing covering more than this share of the page is a background or a page frame.
_MAX_PAGE_SHARE = 0.5
# Drawings touching the marks join the region when at most this many times the marks' area (a chart frame, not a
# page-wide rule box).
_MAX_FRAME_RATIO = 4.0
# Labels: lines stacked above/below within this share of their height, at most this many words, growing at most
# this many rounds.
_LABEL_GAP = 0.8
_MAX_LABEL_WORDS = 8
_LABEL_ROUNDS = 3
_SIDE_GAP = 36.0  # category labels left of a bar chart's bars, values right of them
_CAPTION_REACH = 48.0
_CAPTION_LINES = 3  # a stock graph's title: "The Coca-Cola Company, ..." / "Total Return" / "Stock Price Plus ..."
_CONTEXT_REACH = 200.0
_CAPTION_START = re.compile(r"^(?:figure|fig\.|chart|graph|exhibit)\s*\d*\b", re.IGNORECASE)
_UNITS_LINE = re.compile(
    # One \s* before the optional word, which carries its own: two adjacent \s* around it would be quadratic.
    r"^\(?\s*(?:(?:dollars|amounts|\$|u\.s\. dollars)\s*)?in\s+(?:millions|thousands|billions)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.:;!?]\s*$")
# Running headers that sit above a figure at the top of a page are no caption.
_FURNITURE = re.compile(r"^(?:table of contents|index|contents)$", re.IGNORECASE)


class TextLine(Protocol):
    """What the figure finder reads of a text line (``pdf._Line`` has these)."""

    @property
    def text(self) -> str: ...
    @property
    def bbox(self) -> Box: ...
    @property
    def bold(self) -> bool: ...
    @property
    def size(self) -> float: ...


@dataclass
class VectorChart:
    """A chart drawn with vector paths: its region, kind and the indices of its label lines in reading order."""

    bbox: Box
    kind: ChartKind
    label_indices: list[int] = field(default_factory=list)


def _center(b: Box) -> tuple[float, float]:
    return (b[0] + b[2]) / 2, (b[1] + b[3]) / 2


def _union(boxes: Sequence[Box]) -> Box:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def _intersects(a: Box, b: Box, pad: float = 0.0) -> bool:
    return a[0] - pad < b[2] and b[0] - pad < a[2] and a[1] - pad < b[3] and b[1] - pad < a[3]


def _area(b: Box) -> float:
    return max(b[2] - b[0], 0.0) * max(b[3] - b[1], 0.0)


class _Centers:
    """Line centres sorted by y, for "which lines have their centre in this box" in log time plus the answer."""

    def __init__(self, lines: Sequence[TextLine]) -> None:
        pts = sorted((_center(ln.bbox)[1], _center(ln.bbox)[0], i) for i, ln in enumerate(lines))
        self._ys = [p[0] for p in pts]
        self._pts = pts
        self._by_index = {i: (x, y) for y, x, i in pts}

    def center(self, i: int) -> tuple[float, float]:
        return self._by_index[i]

    def inside(self, box: Box) -> list[int]:
        lo = bisect.bisect_left(self._ys, box[1])
        hi = bisect.bisect_right(self._ys, box[3])
        return [i for _, x, i in self._pts[lo:hi] if box[0] <= x <= box[2]]


def _visible_fill(d: Mapping[str, Any]) -> bool:
    fill = d.get("fill")
    if fill is None or (d.get("fill_opacity") is not None and d["fill_opacity"] < 0.05):
        return False
    return not all(c > _WHITE for c in fill)


def _bar_groups(bars: list[Box], centers: _Centers, axes: list[Box], vertical: bool) -> list[list[Box]]:
    """Bars sharing a baseline, of different lengths, apart from each other, with no text between them."""
    base = 3 if vertical else 0  # bottom edge of columns, left edge of horizontal bars
    along = (0, 2) if vertical else (1, 3)  # the axis bars are spread along
    runs: list[list[Box]] = []
    run: list[Box] = []
    for bar in sorted(bars, key=lambda b: b[base]):
        if run and abs(bar[base] - run[-1][base]) > _BASELINE_TOL:
            runs.append(run)
            run = []
        run.append(bar)
    runs.append(run)
    out: list[list[Box]] = []
    for group in (g for r in runs if len(r) >= 2 for g in _split_run(r, axes, along, base)):
        lengths = [(b[3] - b[1]) if vertical else (b[2] - b[0]) for b in group]
        if len(group) < 2 or max(lengths) < _MIN_BAR_LENGTH:
            continue
        if max(lengths) - min(lengths) < _MIN_LENGTH_SPREAD:
            continue
        # Text inside the group's box must sit over (columns) or beside (bars) one of the bars: labels in the gaps
        # between the boxes are a table row's other cells.
        ok = True
        for i in centers.inside(_union(group)):
            pos = centers.center(i)[0 if vertical else 1]
            if not any(b[along[0]] - 1 <= pos <= b[along[1]] + 1 for b in group):
                ok = False
                break
        if ok:
            out.append(group)
    return out


def _split_run(run: list[Box], axes: list[Box], along: tuple[int, int], base: int) -> list[list[Box]]:
    """Cut a baseline run into charts: boxes that touch or overlap are cells or layers, not bars, and a gap much
    wider than the run's narrowest that no axis line spans separates two charts side by side (their bars may share
    a baseline)."""
    run = sorted(run, key=lambda b: b[along[0]])
    gaps = [b[along[0]] - a[along[1]] for a, b in itertools.pairwise(run)]
    if min(gaps) < _MIN_BAR_GAP:
        return []
    narrow = min(gaps)
    level = run[0][base]
    lo, hi = (1, 3) if along == (0, 2) else (0, 2)
    rules = [a for a in axes if a[lo] - 2.5 <= level <= a[hi] + 2.5]
    out: list[list[Box]] = [[run[0]]]
    for prev, bar, gap in zip(run, run[1:], gaps, strict=False):
        spanned = any(a[along[0]] <= prev[along[1]] and a[along[1]] >= bar[along[0]] for a in rules)
        if gap > 1.5 * narrow and not spanned:
            out.append([])
        out[-1].append(bar)
    return out


def _pie_groups(slices: list[tuple[Box, tuple[float, ...]]], centers: _Centers) -> list[list[Box]]:
    """Overlapping filled curve paths of two or more colours forming a square-ish disc."""
    slices.sort(key=lambda s: s[0][0])
    groups: list[list[tuple[Box, tuple[float, ...]]]] = []
    for s in slices:  # sweep on x: a slice joins the last group whose union it overlaps
        if groups and _intersects(_union([b for b, _ in groups[-1]]), s[0]):
            groups[-1].append(s)
        else:
            groups.append([s])
    out: list[list[Box]] = []
    for group in groups:
        box = _union([b for b, _ in group])
        w, h = box[2] - box[0], box[3] - box[1]
        colours = {tuple(round(c, 2) for c in fill) for _, fill in group}
        if len(group) < 2 or len(colours) < 2 or min(w, h) < _MIN_PIE_SIDE or not 0.6 <= w / h <= 1.6:
            continue
        if len(centers.inside(box)) > _MAX_PIE_INNER_LINES:
            continue
        out.append([b for b, _ in group])
    return out


def find_vector_charts(
    drawings: Sequence[Mapping[str, Any]],
    lines: Sequence[TextLine],
    page_box: Box,
    tables: Sequence[Box] = (),
) -> list[VectorChart]:
    """Vector charts of one page.

    :param drawings: ``page.get_cdrawings()`` (or ``get_drawings()``) of the page.
    :param lines: the page's text lines (PyMuPDF lines, before lines sharing a baseline are merged: labels of
        charts side by side stay separate).
    :param page_box: the page rectangle.
    :param tables: regions of detected tables. Horizontal bars inside them are not chart marks (shaded table
        columns look like bars); columns and pies are looked for everywhere, because a column chart's row of value
        labels can itself pass for a table (the caller drops such tables: ``chart_tables``).
    :returns: charts in reading order (top to bottom, left to right); each line index is a label of one chart.
    """
    page_area = _area(page_box) or 1.0
    centers = _Centers(lines)
    bars: list[Box] = []
    slices: list[tuple[Box, tuple[float, ...]]] = []
    others: list[Box] = []
    for d in drawings:
        rect = d.get("rect")
        if rect is None:
            continue
        box: Box = (float(rect[0]), float(rect[1]), float(rect[2]), float(rect[3]))
        if _area(box) > _MAX_PAGE_SHARE * page_area:
            continue
        others.append(box)
        if not _visible_fill(d):
            continue
        w, h = box[2] - box[0], box[3] - box[1]
        items = d.get("items") or ()
        if any(it[0] == "c" for it in items):
            slices.append((box, tuple(d["fill"])))
        elif min(w, h) >= _MIN_BAR_WIDTH and not centers.inside(box):
            bars.append(box)
    thin = [b for b in others if min(b[2] - b[0], b[3] - b[1]) <= _MAX_AXIS_THICKNESS]
    columns = _bar_groups(bars, centers, thin, vertical=True)
    free = [b for b in bars if not any(_intersects(b, t) for t in tables)]
    groups = columns + _bar_groups(free, centers, thin, vertical=False)
    pies = _pie_groups(slices, centers)
    kinds: list[ChartKind] = []
    kinds.extend("column" for _ in columns)
    kinds.extend("bar" for _ in groups[len(columns) :])
    kinds.extend("pie" for _ in pies)
    groups += pies
    if not groups:
        return []
    regions: list[_Region] = []
    others.sort(key=lambda b: b[1])
    tops = [b[1] for b in others]
    for group, kind in zip(groups, kinds, strict=True):
        core = _union(group)
        limit = _MAX_FRAME_RATIO * max(_area(core), 1.0)
        near = others[: bisect.bisect_right(tops, core[3] + 3)]
        touching = [b for b in near if _intersects(core, b, pad=3) and _area(b) <= limit]
        regions.append(_Region(_union([core, *touching]), kind, list(group)))
    regions = _merge_regions(regions)
    regions.sort(key=lambda r: (r.box[1], r.box[0]))
    # Lines inside a chart's region are its own before any chart grows over its neighbours' labels.
    inner = [centers.inside(r.box) for r in regions]
    taken = {i for found in inner for i in found}
    charts: list[VectorChart] = []
    for region, own in zip(regions, inner, strict=True):
        others_boxes = [r.box for r in regions if r is not region]
        labels = own + _grow_labels(region.box, region.kind, own, lines, centers, taken, others_boxes)
        if not labels:
            continue  # a chart without a word of text tells a reader nothing
        taken.update(labels)
        box = _union([region.box, *(lines[i].bbox for i in labels)])
        charts.append(VectorChart(box, region.kind, _reading_order(labels, lines, region)))
    return charts


@dataclass
class _Region:
    box: Box
    kind: ChartKind
    marks: list[Box]


def _reading_order(labels: list[int], lines: Sequence[TextLine], region: _Region) -> list[int]:
    """Labels top to bottom, left to right; in a column chart the value labels over the columns go left to right
    (in the order of the columns and of their axis labels below, whatever the columns' heights), after the
    titles above them."""
    by_row = sorted(labels, key=lambda i: (round(lines[i].bbox[1]), lines[i].bbox[0]))
    if region.kind != "column":
        return by_row
    baseline = max(m[3] for m in region.marks)

    def over_a_column(i: int) -> bool:
        cx, _ = _center(lines[i].bbox)
        return lines[i].bbox[3] <= baseline + 1 and any(m[0] - 2 <= cx <= m[2] + 2 for m in region.marks)

    values = sorted((i for i in by_row if over_a_column(i)), key=lambda i: lines[i].bbox[0])
    titles = (
        [i for i in by_row if i not in values and lines[i].bbox[3] <= min(lines[v].bbox[1] for v in values)]
        if values
        else []
    )
    rest = [i for i in by_row if i not in values and i not in titles]
    return titles + values + rest


def chart_tables(tables: Sequence[Box], charts: Sequence[VectorChart]) -> list[int]:
    """Indices of the tables that are a chart's labels read as a table (their box centre lies in a chart)."""
    out = []
    for k, t in enumerate(tables):
        cx, cy = _center(t)
        if any(c.bbox[0] <= cx <= c.bbox[2] and c.bbox[1] <= cy <= c.bbox[3] for c in charts):
            out.append(k)
    return out


def _merge_regions(regions: list["_Region"]) -> list["_Region"]:
    """Regions that overlap are one chart (the stacked segments of a column chart form several bar groups)."""
    out: list[_Region] = []
    for region in sorted(regions, key=lambda r: r.box[1]):
        box = region.box
        for other in out:
            o = other.box
            inter = (max(box[0], o[0]), max(box[1], o[1]), min(box[2], o[2]), min(box[3], o[3]))
            if _area(inter) >= 0.2 * min(_area(box), _area(o)):  # not frames sharing an edge
                other.box = _union([box, o])
                other.marks.extend(region.marks)
                break
        else:
            out.append(region)
    return out


def _is_short(line: TextLine) -> bool:
    words = line.text.split()
    return len(words) <= _MAX_LABEL_WORDS and not (_SENTENCE_END.search(line.text) and len(words) > 3)


def _distance(point: tuple[float, float], box: Box) -> float:
    dx = max(box[0] - point[0], 0.0, point[0] - box[2])
    dy = max(box[1] - point[1], 0.0, point[1] - box[3])
    return float((dx * dx + dy * dy) ** 0.5)


def _grow_labels(
    region: Box,
    kind: ChartKind,
    own: list[int],
    lines: Sequence[TextLine],
    centers: _Centers,
    taken: set[int],
    neighbours: Sequence[Box] = (),
) -> list[int]:
    """Short lines stacked tightly above or below the region (titles, value labels, axis labels), and for bar
    charts and pies beside it (category labels, values), not taken by another chart nor nearer to another one."""
    labels = list(own)
    box = region
    width = region[2] - region[0]
    for _ in range(_LABEL_ROUNDS):
        lo_x, hi_x = box[0] - 0.15 * width, box[2] + 0.15 * width
        reach = max(12.0, 2 * max((lines[i].bbox[3] - lines[i].bbox[1] for i in labels), default=10.0))
        band = (lo_x, box[1] - reach, hi_x, box[3] + reach)
        side = (box[0] - _SIDE_GAP - 0.5 * width, box[1], box[2] + _SIDE_GAP + 0.5 * width, box[3])
        added = []
        candidates = set(centers.inside(band)) | (set(centers.inside(side)) if kind != "column" else set())
        for i in sorted(candidates):
            if i in taken or i in labels or not _is_short(lines[i]):
                continue
            b = lines[i].bbox
            mine = _distance(_center(b), region)
            if any(_distance(_center(b), n) < mine for n in neighbours):
                continue
            h = max(b[3] - b[1], 1.0)
            # A value label over a short column may reach into the region's top band: overlap up to a line height.
            stacked = (
                b[0] >= lo_x
                and b[2] <= hi_x
                and not _UNITS_LINE.match(lines[i].text)
                and (-h <= box[1] - b[3] <= _LABEL_GAP * h or -h <= b[1] - box[3] <= _LABEL_GAP * h)
            )
            beside = (
                kind != "column"
                and box[1] <= _center(b)[1] <= box[3]
                and (0 <= box[0] - b[2] <= _SIDE_GAP or 0 <= b[0] - box[2] <= _SIDE_GAP)
            )
            if stacked or beside:
                added.append(i)
        if not added:
            break
        labels.extend(added)
        box = _union([box, *(lines[i].bbox for i in added)])
    return labels[len(own) :]


# --- caption and context of any figure --------------------------------------------------------------------------


def _caption_like(line: TextLine, body_size: float) -> bool:
    words = line.text.split()
    if not words or len(words) > 15 or (_SENTENCE_END.search(line.text) and len(words) > 8):
        return False
    letters = [c for c in line.text if c.isalpha()]
    caps = len(letters) >= 4 and sum(c.isupper() for c in letters) >= 0.8 * len(letters)
    return bool(_CAPTION_START.match(line.text)) or line.bold or caps or line.size >= body_size + 1.0


@dataclass
class Caption:
    """A figure's caption and the bottom of its lowest line (``inf`` when there is none)."""

    text: str = ""
    bottom: float = float("inf")


def figure_caption(
    box: Box,
    lines: Sequence[TextLine],
    body_size: float,
    skip: set[int] | None = None,
    stop: Sequence[Box] = (),
) -> Caption:
    """The nearest caption-like lines above ``box`` (at most ``_CAPTION_LINES``: a title over sub-titles), with a
    units line between them and the figure ("(dollars in millions)"), or a "Figure"/"Chart" line just below it.
    A caption line overlaps the figure horizontally or starts left of it (a title set flush left over a
    figure that is not).

    :param skip: line indices that are the figure's own labels.
    :param stop: boxes of other figures: the search upwards stops at them.
    """
    skip = skip or set()
    above = sorted(
        (
            i
            for i, ln in enumerate(lines)
            if i not in skip
            and ln.bbox[3] <= box[1] + 2
            and box[1] - ln.bbox[3] <= 2 * _CAPTION_REACH  # a title over a sub-title; each step is bounded below
            and ln.bbox[2] > box[0] - 0.5 * (box[2] - box[0])
            and ln.bbox[0] < box[2]
        ),
        # Lowest first; on one baseline the line over the figure before one set beside it.
        key=lambda i: (-round(lines[i].bbox[3]), max(box[0] - lines[i].bbox[2], 0.0)),
    )
    bottom = float("inf")
    units = ""
    found: list[str] = []  # up to _CAPTION_LINES title lines: "Revenue by Segment" over "2021"
    top = box[1]
    for i in above:
        ln = lines[i]
        if any(s[3] <= box[1] + 2 and ln.bbox[3] <= s[1] and ln.bbox[0] < s[2] and s[0] < ln.bbox[2] for s in stop):
            break  # another figure lies between this line and the figure
        if top - ln.bbox[3] > _CAPTION_REACH:
            break
        if _FURNITURE.match(ln.text.strip()):
            continue
        if _UNITS_LINE.match(ln.text) and not units and not found:
            units = ln.text
            top, bottom = ln.bbox[1], ln.bbox[3]
            continue
        if found and ln.bbox[3] > top + 1:
            continue  # beside the title found, not above it (the title of the figure next to this one)
        if _caption_like(ln, body_size):
            bottom = min(bottom, ln.bbox[3]) if found or units else ln.bbox[3]
            found.insert(0, ln.text)
            top = ln.bbox[1]
            if len(found) == _CAPTION_LINES:
                break
            continue
        if found or len(ln.text.split()) >= 12:
            break  # prose: the title (if any) is complete
    if found:
        return Caption(" ".join([*found, units]).strip(), bottom)
    for ln in sorted(lines, key=lambda ln: ln.bbox[1]):
        if ln.bbox[1] >= box[3] - 2 and ln.bbox[1] - box[3] <= _CAPTION_REACH / 2 and _CAPTION_START.match(ln.text):
            return Caption(ln.text, ln.bbox[3])
    return Caption(units, bottom) if units else Caption()


def figure_context(box: Box, paragraphs: Sequence[tuple[Box, str]]) -> str:
    """The paragraph that introduces a figure: the last prose paragraph (>= 12 words) ending above it on the page,
    within ``_CONTEXT_REACH`` points."""
    best: tuple[float, str] | None = None
    for b, text in paragraphs:
        gap = box[1] - b[3]
        if -2 <= gap <= _CONTEXT_REACH and len(text.split()) >= 12 and (best is None or gap < best[0]):
            best = (gap, text)
    return best[1] if best else ""
