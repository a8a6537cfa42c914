"""No super-linear parsing: every compiled pattern of ``haystack_fin.core`` and the parsers end to end.

A real 10-K once hung the indexer for ever: a dot-leader regex (``_TRAILING_PAGE``) backtracked exponentially on a
line that did not end in a page number. The first half of this file finds every module-level ``re.Pattern`` of
every ``haystack_fin.core`` module (also inside module-level tuples, lists and dicts; new modules are covered
automatically) and feeds it, with ``search``, ``match`` and ``fullmatch``, strings built from the pattern itself:
runs of one character and of two alternating characters of what it repeats, a sample match with each of its
repeats pumped to a long run, and the sample repeated, each with and without a character that makes the match
fail. Every input is timed at 500 characters, the two slowest of each pattern again at 60,000. A backtracking
blow-up takes seconds to minutes at 60,000 characters (even the cheapest quadratic one here, ``" *\n *"`` on spaces,
takes ~3 s), a linear pattern milliseconds, so one second per call does not flake. Self-checks show the generator
catches the old ``_TRAILING_PAGE`` and a merely quadratic pattern.

The second half runs the real parsing functions on large synthetic inputs (a page of 50,000 words, a 2 MB line,
a 5,000-row table, 1,000 headings, 250 dot leaders without page numbers, HTML and PDF built here); those calls are
bounded in CPU seconds (see ``bounded``).

Regex calls are timed with ``time.perf_counter`` under a SIGALRM deadline in the main thread (the regex engine
checks for signals while it backtracks), so a regression fails within a second instead of hanging the suite.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import pkgutil
import random
import re
import re._constants as sre
import re._parser as sre_parse
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

import haystack_fin.core

# Characters every pattern is tried with, on top of the ones its source names.
FIXED_CHARS = ".-|$09aA \u00a0\n"
FAIL = "\x01"  # matched by no literal, class or category a pattern here names: ends a run without a match
N_SCREEN = 500  # every input is first timed at this size ...
N_FULL = 60_000  # ... and the TOP slowest of each pattern again at this size
TOP = 2
BUDGET = 1.0  # seconds per call


class _Deadline(Exception):
    pass


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise ``_Deadline`` in the main thread after ``seconds`` (a no-op elsewhere or without SIGALRM)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def _raise(signum: int, frame: Any) -> None:
        raise _Deadline

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def timed(call: Callable[[], object], budget: float) -> float:
    """Seconds ``call`` took; ``inf`` when it was interrupted at ``budget``."""
    start = time.perf_counter()
    try:
        with deadline(budget):
            call()
    except _Deadline:
        return float("inf")
    return time.perf_counter() - start


# --- what a pattern repeats ----------------------------------------------------------------------------------

_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
_CATEGORY_CHARS = {
    sre.CATEGORY_DIGIT: "07",
    sre.CATEGORY_NOT_DIGIT: "a.",
    sre.CATEGORY_SPACE: " \n\u00a0",
    sre.CATEGORY_NOT_SPACE: "a.",
    sre.CATEGORY_WORD: "a0_",
    sre.CATEGORY_NOT_WORD: " .",
}
_CATEGORY_TESTS: dict[Any, Callable[[str], bool]] = {
    sre.CATEGORY_DIGIT: str.isdecimal,
    sre.CATEGORY_NOT_DIGIT: lambda c: not c.isdecimal(),
    sre.CATEGORY_SPACE: str.isspace,
    sre.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
    sre.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
    sre.CATEGORY_NOT_WORD: lambda c: not (c.isalnum() or c == "_"),
}
_PROBES = "a0 .x-_\n\u00a0Z9,"  # candidates for "some character a negated class accepts"


def _in_set(c: str, items: list[tuple[Any, Any]]) -> bool:
    for op, av in items:
        if op is sre.LITERAL and c == chr(av):
            return True
        if op is sre.RANGE and av[0] <= ord(c) <= av[1]:
            return True
        if op is sre.CATEGORY and _CATEGORY_TESTS.get(av, lambda _: False)(c):
            return True
    return False


def _accepted(op: Any, av: Any) -> list[str]:
    """A few characters one single-character node (literal, class, category, any) accepts."""
    if op is sre.LITERAL:
        return [chr(av)]
    if op is sre.NOT_LITERAL:
        return [c for c in _PROBES if c != chr(av)][:2]
    if op is sre.ANY:
        return ["a", " ", "."]
    if op is sre.IN:
        if av and av[0][0] is sre.NEGATE:
            return [c for c in _PROBES if not _in_set(c, av[1:])][:3]
        out: list[str] = []
        for iop, iav in av:
            if iop is sre.LITERAL:
                out.append(chr(iav))
            elif iop is sre.RANGE:
                out += [chr(iav[0]), chr(iav[1])]
            elif iop is sre.CATEGORY:
                out += _CATEGORY_CHARS.get(iav, "")
        return list(dict.fromkeys(out))
    return []


@dataclass
class Shape:
    """What the adversarial inputs of one pattern are built from."""

    chars: set[str] = field(default_factory=set)  # every character the pattern names
    groups: list[list[str]] = field(default_factory=list)  # characters each repeat consumes
    pumps: list[tuple[str, list[str]]] = field(default_factory=list)  # (sample text before a repeat, its chars)
    sample: str = ""  # a string shaped like a match (not necessarily one: lookarounds are ignored)


class _Sampler:
    def __init__(self) -> None:
        self.shape = Shape()
        self.out: list[str] = []
        self.group_text: dict[int, str] = {}

    def walk(self, parsed: Any) -> set[str]:
        """Emit a sample for ``parsed``, record its repeats; return the characters it can consume."""
        consumed: set[str] = set()
        for op, av in parsed:
            if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
                chars = _accepted(op, av)
                consumed.update(chars)
                self.shape.chars.update(chars)
                if op is sre.NOT_LITERAL or (op is sre.IN and av and av[0][0] is sre.NEGATE):
                    self.shape.chars.update(
                        chr(a) for o, a in ([(op, av)] if op is sre.NOT_LITERAL else av[1:]) if o is sre.LITERAL
                    )
                self.out.append(chars[0] if chars else "a")
            elif op in _REPEATS:
                low, high, body = av
                mark = len(self.out)
                prefix = "".join(self.out)
                inner = self.walk(body)
                text = "".join(self.out[mark:])
                del self.out[mark:]
                if high is sre.MAXREPEAT or high > 1:
                    self.shape.groups.append(sorted(inner))
                    self.shape.pumps.append((prefix, sorted(inner)))
                self.out.append(text * min(low, 3))
                consumed |= inner
            elif op is sre.SUBPATTERN:
                mark = len(self.out)
                consumed |= self.walk(av[3])
                if av[0] is not None:
                    self.group_text[av[0]] = "".join(self.out[mark:])
            elif op is sre.ATOMIC_GROUP:
                consumed |= self.walk(av)
            elif op is sre.BRANCH:
                mark = len(self.out)
                for k, branch in enumerate(av[1]):
                    consumed |= self.walk(branch)
                    if k < len(av[1]) - 1:
                        del self.out[mark:]
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                mark = len(self.out)
                self.walk(av[1])  # for the characters only: a lookaround consumes nothing
                del self.out[mark:]
            elif op is sre.GROUPREF:
                self.out.append(self.group_text.get(av, ""))
            elif op is sre.GROUPREF_EXISTS:
                consumed |= self.walk(av[1])
                if av[2] is not None:
                    mark = len(self.out)
                    consumed |= self.walk(av[2])
                    del self.out[mark:]
        return consumed


def shape_of(pattern: re.Pattern[Any]) -> Shape:
    source = pattern.pattern
    flags = pattern.flags
    if isinstance(source, bytes):  # parse the bytes pattern as text: same structure, latin-1 characters
        source, flags = source.decode("latin-1"), flags & ~re.ASCII
    sampler = _Sampler()
    sampler.walk(sre_parse.parse(source, flags))
    sampler.shape.sample = "".join(sampler.out)
    return sampler.shape


@dataclass(frozen=True)
class Recipe:
    """``prefix + unit * (n / len(unit)) + suffix``: an input of about ``n`` characters."""

    prefix: str
    unit: str
    suffix: str

    def build(self, n: int) -> str:
        return self.prefix + self.unit * max(1, n // len(self.unit)) + self.suffix


def recipes(pattern: re.Pattern[Any], max_pairs: int = 40, max_pump_chars: int = 4) -> list[Recipe]:
    shape = shape_of(pattern)
    repeated = {c for group in shape.groups for c in group}
    units: list[tuple[str, str]] = [("", c) for c in sorted(repeated | set(FIXED_CHARS))]
    pairs = sorted({a + b for group in shape.groups for a, b in itertools.combinations(group, 2)})
    units += [("", pair) for pair in pairs[:max_pairs]]
    units += [(prefix, c) for prefix, chars in shape.pumps for c in chars[:max_pump_chars]]
    if len(shape.sample) > 1:
        units += [("", shape.sample), ("", shape.sample[:-1])]  # a match (or its start) over and over
    out: list[Recipe] = []
    for prefix, unit in dict.fromkeys(units):
        out += [Recipe(prefix, unit, ""), Recipe(prefix, unit, FAIL)]
    return out


@dataclass
class Worst:
    seconds: float  # inf: interrupted at the budget
    method: str = ""
    recipe: Recipe | None = None
    n: int = 0

    def describe(self) -> str:
        if self.recipe is None:
            return "no input"
        r = self.recipe
        took = "over the budget" if self.seconds == float("inf") else f"{self.seconds:.2f} s"
        return f"{self.method}({r.prefix[:30]!r} + {r.unit!r} * {self.n // len(r.unit)} + {r.suffix!r}): {took}"


def worst_case(
    pattern: re.Pattern[Any], n_screen: int = N_SCREEN, n_full: int = N_FULL, budget: float = BUDGET, top: int = TOP
) -> Worst:
    """The slowest (method, input) at ``n_full`` among the ``top`` slowest at ``n_screen``; stops at the first call
    over ``budget`` (reported as ``inf`` seconds)."""
    encode = isinstance(pattern.pattern, bytes)

    def arg(r: Recipe, n: int) -> Any:
        text = r.build(n)
        return text.encode("utf-8") if encode else text

    screened: list[tuple[float, str, Recipe]] = []
    current: list[Any] = ["", None]
    try:
        # One deadline around the whole screening (a timer per call costs more than most calls): any pattern still
        # screening after ``budget`` seconds has a call that is super-linear already at ``n_screen`` characters.
        with deadline(budget):
            for r in recipes(pattern):
                text = arg(r, n_screen)
                for method in ("search", "match", "fullmatch"):
                    current[:] = [method, r]
                    call = getattr(pattern, method)
                    start = time.perf_counter()
                    call(text)
                    screened.append((time.perf_counter() - start, method, r))
    except _Deadline:
        return Worst(float("inf"), current[0], current[1], n_screen)
    screened.sort(key=lambda s: -s[0])
    worst = Worst(0.0)
    for _, method, r in screened[:top]:
        text = arg(r, n_full)
        call = getattr(pattern, method)
        seconds = timed(lambda call=call, text=text: call(text), budget)
        if seconds > worst.seconds:
            worst = Worst(seconds, method, r, n_full)
        if seconds == float("inf"):
            break
    return worst


def _patterns_in(value: Any, depth: int = 0) -> Iterator[re.Pattern[Any]]:
    """A module attribute's compiled patterns, also inside tuples/lists/dicts of them (pattern tables)."""
    if isinstance(value, re.Pattern):
        yield value
    elif depth < 2 and isinstance(value, list | tuple | set | frozenset):
        for v in value:
            yield from _patterns_in(v, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for v in value.values():
            yield from _patterns_in(v, depth + 1)


def core_patterns() -> list[tuple[str, re.Pattern[Any]]]:
    """(``module.NAME``, pattern) for every module-level pattern of every ``haystack_fin.core`` module."""
    found: dict[int, tuple[str, re.Pattern[Any]]] = {}
    for info in pkgutil.walk_packages(haystack_fin.core.__path__, "haystack_fin.core."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            for k, pattern in enumerate(_patterns_in(value)):
                label = f"{info.name.rsplit('.', 1)[1]}.{name}" + (
                    f"[{k}]" if not isinstance(value, re.Pattern) else ""
                )
                found.setdefault(id(pattern), (label, pattern))
    return sorted(found.values(), key=lambda item: item[0])


# --- the guard -----------------------------------------------------------------------------------------------

# The pattern that hung the indexer (sec_items before df2e309): a run of dots splits among the repetitions of
# ``(?:\s|\.{2,}|…)+`` in exponentially many ways when no page number follows.
OLD_TRAILING_PAGE = re.compile(r"(?:\s|\.{2,}|…)+(?:[A-Z]-)?\d{1,3}\s*$")


def test_generator_catches_the_pattern_that_hung_the_indexer():
    assert timed(lambda: OLD_TRAILING_PAGE.search("." * 20 + "x"), 1.0) < 1.0  # fine on short lines ...
    worst = worst_case(OLD_TRAILING_PAGE, budget=0.2)
    assert worst.seconds == float("inf"), worst.describe()  # ... caught as soon as it is tried


def test_generator_catches_a_quadratic_pattern():
    # Quadratic, not exponential: search restarts at every space and scans the rest of the run each time.
    worst = worst_case(re.compile(r"\s+x"), budget=BUDGET)
    assert worst.seconds > BUDGET, worst.describe()


def test_generator_passes_linear_patterns():
    for source in (r"\([^()]*\)", r"\d{1,3}(?:,\d{3})+", r"(?<!\s)\s+x", r"^\s*item\s+\d+"):
        worst = worst_case(re.compile(source))
        assert worst.seconds < 0.2, f"{source}: {worst.describe()}"


def test_every_core_pattern_is_linear():
    patterns = core_patterns()
    assert len(patterns) > 100  # the discovery works (core holds ~160 patterns)
    slow = []
    for name, pattern in patterns:
        worst = worst_case(pattern)
        if worst.seconds > BUDGET:
            slow.append(f"{name} {pattern.pattern!r}: {worst.describe()}")
    assert not slow, "super-linear patterns:\n" + "\n".join(slow)


# --- the rewrites match as before ----------------------------------------------------------------------------

_D = "-\u2012\u2013\u2014\u2212"
_MONTH = (
    r"(?:Jan(?:uary|\.)?|Feb(?:ruary|\.)?|Mar(?:ch|\.)?|Apr(?:il|\.)?|May|June?|July?|Aug(?:ust|\.)?"
    r"|Sep(?:tember|t\.?|\.)?|Oct(?:ober|\.)?|Nov(?:ember|\.)?|Dec(?:ember|\.)?"
    r"|JANUARY|FEBRUARY|MARCH|APRIL|MAY|JUNE|JULY|AUGUST|SEPTEMBER|OCTOBER|NOVEMBER|DECEMBER)"
)
_Y = r"'?(?P<y>(?:19|20)\d\d|\d\d)"
_Y4 = r"(?P<y>(?:19|20)\d\d)"

# (module, attribute, the form it replaces, flags, pieces random inputs are built from)
OLD_FORMS: list[tuple[str, str, str, int, list[str]]] = [
    (
        "ingest.html",
        "_NUMERIC_CELL",
        rf"^[$€£¥(]*\s*[{_D}+]?\s*\$?\s*(?:\d[\d,]*(?:\.\d+)?|\.\d+)\s*[)%]*\)?$|^[{_D}]+$",
        0,
        ["$", "(", " ", "\n", "-", "—", "+", "1", ",", ".", ")", "%", "€", "a", "1,234"],
    ),
    ("ingest.pdf_tables", "_LEADER_RE", r"[ .…·]{2,}$", 0, [" ", ".", "…", "·", "a", "\n", "1"]),
    ("ingest.pdf_tables", "_LEADER_DOTS_RE", r"[.…·]{3,}$", 0, [" ", ".", "…", "·", "a", "\n", "1"]),
    (
        "table_cells",
        "_CURRENCY_SUFFIX",
        r"\s*(?:\$|€|£|¥|USD|EUR|GBP)$",
        re.I,
        ["$", "€", "usd", "EUR", " ", "\n", "\xa0", "1", "a", "U", "SD"],
    ),
    (
        "table_cells",
        "_FOOTNOTE",
        r"\s*(?:\([a-z]\)|\(\d{1,2}\)|\[[a-z0-9]{1,2}\]|\*+|[†‡§]+|[¹²³⁴⁵⁶⁷⁸⁹⁰]+)$",
        re.I,
        ["(", ")", "a", "B", "1", "12", "[", "]", "*", "†", "‡", "¹", "²", " ", "\n", "x"],
    ),
    ("table_cells", "_RATIO_SUFFIX", r"\s*(?:x|bps|bp|pts|pt|pp)$", re.I, ["x", "bps", "p", "t", "s", " ", "\n", "1"]),
    ("ingest.node_texts", "_FOOTNOTE", r"\s*(\(\d{1,2}\)|\*+)$", 0, ["(", ")", "1", "12", "*", " ", "\n", "a", ":"]),
    ("text", "_FENCE", r"^```[a-zA-Z]*\s*|\s*```$", 0, ["```", "`", "json", " ", "\n", "{", "}", "a"]),
    (
        "retrieval.question_scope",
        "_MONTH_DATE",
        rf"\b(?P<m>{_MONTH})\s*(?:of\s+)?,?\s*(?P<y>(?:19|20)\d\d)\b",
        0,
        ["Jan", "January", "Jan.", "MAY", "Sept.", "of", ",", " ", "\n", "2020", "1999", "20", "a"],
    ),
    (
        "retrieval.question_scope",
        "_DAY_DATES[1]",
        rf"\b(?P<d>\d{{1,2}})\s+(?P<m>{_MONTH})\s*,?\s+(?P<y>(?:19|20)\d\d)\b",
        0,
        ["1", "31", "Jan", "March", "DECEMBER", ",", " ", "\n", "2020", "a"],
    ),
    (
        "retrieval.question_scope",
        "_PERIOD_PATTERNS[0]",
        rf"\bFY\s?{_Y}\s*[-/]?\s*Q(?P<q>[1-4])\b",
        re.I,
        ["FY", "'", "2023", "24", " ", "-", "/", "Q", "q1", "Q4", "5", "\n"],
    ),
    (
        "retrieval.question_scope",
        "_PERIOD_PATTERNS[7]",
        rf"\b{_Y4}\s*-?\s*Q(?P<q>[1-4])\b",
        re.I,
        ["2023", "1999", " ", "-", "Q", "q2", "\n", "a", "0"],
    ),
    (
        "retrieval.question_scope",
        "_HALF",
        r"\b(?:H(?P<h>[12])|(?P<hw>first|second)\s+half)(?:\s+(?:of\s+)?(?:the\s+)?)?\s*"
        r"(?:(?P<f>FY|fiscal(?:\s+year)?)\s*'?(?P<fy>(?:19|20)\d\d|\d\d)|(?P<y>(?:19|20)\d\d))?\b",
        re.I,
        ["H1", "h2", "first", "second", "half", "of", "the", "FY", "fiscal", "year", "'", "2023", "23", " ", "."],
    ),
    (
        "retrieval.companies",
        "_TICKER_CONTEXT",
        r"(?:ticker|symbol|NYSE|NASDAQ|Nasdaq|AMEX|CBOE)\s*:?\s*$",
        re.I,
        ["ticker", "NYSE", "cboe", ":", " ", "\n", "a"],
    ),
]


def _module_pattern(module: str, attribute: str) -> re.Pattern[str]:
    value: Any = vars(importlib.import_module(f"haystack_fin.core.{module}"))[attribute.split("[")[0]]
    if "[" in attribute:
        value = value[int(attribute.split("[")[1].rstrip("]"))]
    return value[0] if isinstance(value, tuple) else value


def _same(a: re.Match[str] | None, b: re.Match[str] | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.span() == b.span() and a.groups() == b.groups() and a.regs == b.regs


@pytest.mark.parametrize(
    ("module", "attribute", "old", "flags", "pieces"), OLD_FORMS, ids=[f"{m}.{a}" for m, a, *_ in OLD_FORMS]
)
def test_rewritten_pattern_matches_as_before(module: str, attribute: str, old: str, flags: int, pieces: list[str]):
    old_pattern, new_pattern = re.compile(old, flags), _module_pattern(module, attribute)
    assert new_pattern.flags == old_pattern.flags
    rng = random.Random(attribute)
    for _ in range(5_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        for method in ("search", "match", "fullmatch"):
            assert _same(getattr(old_pattern, method)(text), getattr(new_pattern, method)(text)), (method, text)
        old_all, new_all = list(old_pattern.finditer(text)), list(new_pattern.finditer(text))
        assert len(old_all) == len(new_all) and all(map(_same, old_all, new_all)), text
        assert old_pattern.sub("", text) == new_pattern.sub("", text), text


def test_rewritten_helpers_match_the_regexes_they_replace():
    from haystack_fin.core import text
    from haystack_fin.core.ingest import table_blocks

    label_trim = re.compile(r"^[\W_]+|[\s:;,.*†‡§¹²³⁴⁵⁶⁷⁸⁹⁰]+$|\s*\((?:[a-z]|\d{1,2})\)$")
    think = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
    rng = random.Random(7)

    def rand(pieces: list[str]) -> str:
        return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))

    for _ in range(5_000):
        s = rand(["a", "B", "(", ")", "(a)", "(12)", "1", " ", "\n", ":", ",", ".", "*", "†", "¹", "_", "-", "x y"])
        head = table_blocks._LABEL_HEAD.match(s)
        assert table_blocks._LABEL_TAIL.sub("", s[head.end() :] if head else s) == label_trim.sub("", s), s
        s = rand([" ", "  ", "\n", "a", "b c"])
        assert text._strip_around_newlines(s) == re.sub(r" *\n *", "\n", s), s
        s = rand(["<think>", "</think>", "<THINK>", "</Think>", "<think", "think>", "a", "\n", "<", "/", " "])
        assert text._drop_think_blocks(s) == think.sub("", s), s
        # The chunker's running token total: the estimate of a run of words is the sum of its words' estimates.
        s = " ".join(rand(["a", "word", "x" * 9, "y" * 17, ".", "|", "$1,234", "(12)", "é", "U.S.", "—", "¹", "_"]))
        assert text.estimate_tokens(s) == sum(text.estimate_tokens(w) for w in s.split()), s


# --- end to end: the parsers on large synthetic inputs -----------------------------------------------------------

# CPU seconds per call. A quadratic step on these sizes takes minutes; the linear work takes at most ~3 s of CPU
# (a 2 MB line is 2 million pre-tokens for the token estimate). CPU time, not wall time, because the test machine
# is shared: under load wall time runs several times the CPU time. The wall-clock deadline only stops a hang.
E2E_CPU_SECONDS = 10.0
E2E_WALL_DEADLINE = 120.0

_WORDS = [
    "revenue",
    "increased",
    "due",
    "to",
    "higher",
    "comparable",
    "sales",
    "in",
    "the",
    "domestic",
    "segment",
    "offset",
    "by",
    "lower",
    "margins",
]


def bounded(label: str, call: Callable[[], Any]) -> Any:
    """Run ``call`` and fail when it takes more than ``E2E_CPU_SECONDS`` of CPU time (or hangs)."""
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        with deadline(E2E_WALL_DEADLINE):
            result = call()
    except _Deadline:
        pytest.fail(f"{label}: still running after {E2E_WALL_DEADLINE:.0f} s")
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert cpu < E2E_CPU_SECONDS, f"{label}: {cpu:.1f} s CPU ({wall:.1f} s wall)"
    return result


def _structure(elements: list[Any], form: str = "10-K") -> Any:
    from haystack_fin.core.ingest.layout import ParsedFiling
    from haystack_fin.core.ingest.structure import structure_filing

    n_pages = max(p for e in elements for p in e.pages)
    return structure_filing(ParsedFiling("synthetic.pdf", n_pages, elements), form, "SYN")


def _item7(text: str, page: int = 1) -> list[Any]:
    from haystack_fin.core.ingest.layout import Element

    heading = Element("text", "Item 7. Management's Discussion and Analysis", page, is_heading=True)
    return [heading, Element("text", text, page)]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["prose", "one sentence", "abbreviations"])
def test_a_page_of_50000_words(kind: str):
    rng = random.Random(0)
    if kind == "prose":  # sentence marks without a capital after them: one 50,000-word "sentence" to split
        text = " ".join(rng.choice(_WORDS) + ("." if rng.random() < 0.06 else "") for _ in range(50_000))
    elif kind == "one sentence":
        text = " ".join(rng.choice(_WORDS) for _ in range(50_000))
    else:  # every period an abbreviation: no sentence ever ends
        text = " ".join(["Apple Inc. Braeburn Capital Inc. No. 5 U.S. Holdings"] * 5_000)
    structure = bounded(f"50,000 words ({kind})", lambda: _structure(_item7(text)))
    text_chunks = [c for c in structure.chunks if c.modality == "text"]
    assert len(text_chunks) > 100  # cut into ~200-token chunks, nothing lost
    assert sum(len(c.content.split()) for c in text_chunks) >= len(text.split())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["words", "no spaces", "dot leader", "spaced dots"])
def test_a_single_2mb_line(kind: str):
    text = {
        "words": ("x" * 40 + " ") * 50_000,
        "no spaces": "y" * 2_000_000,
        "dot leader": "." * 2_000_000,
        "spaced dots": ". " * 1_000_000,
    }[kind]
    structure = bounded(f"2 MB line ({kind})", lambda: _structure(_item7(text)))
    assert structure.chunks


@pytest.mark.slow
def test_a_table_of_5000_rows():
    from haystack_fin.core.ingest.layout import Element, TableData

    def row(i: int) -> list[str]:
        if i % 50 == 0:
            return ["Current assets:", "", ""]
        if i % 50 == 49:
            return ["Total current assets", f"${i:,}", f"({i})"]
        return [f"Line item {i} (a)", f"{i * 1000:,}", f"({i}.5)%"]

    rows = [["", "2023", "2022"]] + [row(i) for i in range(5_000)]
    plain = [["", "2023", "2022"]] + [[f"Line item {i}", f"{i:,}", "—"] for i in range(5_000)]  # no totals, no labels
    for label, grid in (("grouped", rows), ("flat", plain)):
        elements = [Element("text", "Item 8. Financial Statements", 1, is_heading=True)]
        elements.append(Element("table", "\n".join(" | ".join(r) for r in grid), 2, table=TableData(grid, 1)))
        structure = bounded(f"5,000-row table ({label})", lambda elements=elements: _structure(elements))
        blocks = [c for c in structure.chunks if c.modality == "table"]
        assert sum(len(b.table["rows"]) for b in blocks) >= 5_000


@pytest.mark.slow
def test_1000_headings_and_item_lines():
    from haystack_fin.core.ingest.layout import Element

    headings = []
    for i in range(1_000):
        headings.append(Element("text", f"Heading number {i}", 1 + i // 10, font_size=10 + i % 40, is_heading=True))
        headings.append(Element("text", "Some text about the business. " * 5, 1 + i // 10))
    structure = bounded("1,000 headings (no Items)", lambda: _structure(headings, form="earnings"))
    assert structure.items
    items = []
    for i in range(1_000):  # an Item heading per page and a cross-reference list of Items
        items.append(Element("text", f"Item {1 + i % 15}. Business Risk Factors Properties", 1 + i, is_heading=True))
        items.append(Element("text", "Some text about the business. " * 5, 1 + i))
    structure = bounded("1,000 Item lines", lambda: _structure(items))
    assert structure.items


@pytest.mark.slow
def test_dot_leaders_without_page_numbers():
    from haystack_fin.core.ingest.layout import Element

    rng = random.Random(1)
    elements = []
    for i in range(250):
        leader = "." * rng.randint(50, 400) if i % 2 else ". " * rng.randint(50, 300)
        elements.append(Element("text", f"Item 7. Management's Discussion and Analysis {leader}", 1 + i // 40))
    elements.append(Element("text", "Body text of the section. " * 20, 8))
    structure = bounded("250 dot leaders without page numbers", lambda: _structure(elements))
    assert structure.chunks


def _html(body: str) -> bytes:
    return f"<html><body>{body}</body></html>".encode()


@pytest.mark.slow
def test_html_with_a_2mb_line_and_a_5000_row_table():
    from haystack_fin.core.ingest.html import parse_html_filing

    line = _html(f"<p>Item 7. Management's Discussion</p><p>{'revenue ' * 250_000}</p>")
    parsed = bounded("HTML 2 MB line", lambda: parse_html_filing("line.htm", data=line))
    assert max(len(e.text) for e in parsed.elements) >= 2_000_000 - 1
    rows = "".join(
        f"<tr><td>Line item {i}</td><td>$</td><td>{i:,}</td><td>(</td><td>{i}</td><td>)</td></tr>" for i in range(5_000)
    )
    header = "<tr><td></td><td colspan=3>2023</td><td colspan=3>2022</td></tr>"
    table = _html(f"<p>Item 8. Financial Statements</p><table>{header}{rows}</table>")
    parsed = bounded("HTML 5,000-row table", lambda: parse_html_filing("table.htm", data=table))
    tables = [e for e in parsed.elements if e.kind == "table"]
    assert len(tables) == 1 and len(tables[0].table.rows) == 5_001
    assert tables[0].table.rows[1] == ["Line item 0", "0", "(0)"]


@pytest.mark.slow
def test_html_cells_that_defeated_the_fragment_merge():
    from haystack_fin.core.ingest.html import parse_html_filing

    # Every ")" cell used to scan back over all the cells emptied before it: quadratic in the row's width.
    closing = _html(f"<table><tr><td>a</td><td>1</td>{'<td>)</td>' * 30_000}</tr><tr><td>b</td><td>2</td></tr></table>")
    bounded("HTML row of 30,000 ')' cells", lambda: parse_html_filing("closing.htm", data=closing))
    # Three adjacent \s* in the numeric-cell pattern split a run of spaces cubically.
    spaces = _html(f"<table><tr><td>a</td><td>{'&nbsp;' * 300_000}1 x</td></tr><tr><td>b</td><td>2</td></tr></table>")
    bounded("HTML cell of 300,000 spaces", lambda: parse_html_filing("spaces.htm", data=spaces))


@pytest.mark.slow
def test_pdf_dot_leaders_and_a_page_of_one_long_line():
    import pymupdf

    from haystack_fin.core.ingest.pdf import parse_pdf_filing

    # Few insert_text calls (multi-line strings): building a page with thousands of calls is quadratic in PyMuPDF.
    doc = pymupdf.open()
    page = doc.new_page()  # dot leaders with no page number after them
    page.insert_text((36, 72), "Item 7. Management's Discussion and Analysis " + "." * 300, fontsize=3)
    page.insert_text((36, 90), "Revenue " + "." * 300 + " more text", fontsize=3)
    leaders = "\n".join("Item 7. Management's Discussion " + ". " * 150 for _ in range(40))
    page.insert_text((36, 110), leaders, fontsize=2, lineheight=3)
    page = doc.new_page()  # one line of words across the page, and the page filled by one paragraph with no break
    page.insert_text((10, 30), "word " * 3_000, fontsize=1)
    page.insert_textbox(pymupdf.Rect(10, 40, 590, 830), " ".join(f"w{i}" for i in range(20_000)), fontsize=2)
    page = doc.new_page()  # a dense grid of numbers: 240 table rows of 12 values on one page
    page.insert_text((20, 10), "\n".join(f"Line item {r}" for r in range(240)), fontsize=2.5, lineheight=1.28)
    for c in range(12):
        column = "\n".join(f"{(r + 1) * (c + 7):,}" for r in range(240))
        page.insert_text((120 + c * 38, 10), column, fontsize=2.5, lineheight=1.28)
    data = doc.tobytes()
    parsed = bounded("PDF adversarial pages", lambda: parse_pdf_filing("adversarial.pdf", data=data, ocr=False))
    assert {e.page for e in parsed.elements} == {1, 2, 3}
    assert [len(e.table.rows) for e in parsed.elements if e.kind == "table"] == [240]


# A paragraph or table continued over many pages used to be rebuilt at every page break (text, pages, rows and the
# column count over all rows so far): quadratic in the number of pages. Sizes are chosen so the old code takes
# well over E2E_CPU_SECONDS and the linear code well under it.
_PAGE_WORDS = 1_000  # a dense page of prose per continuation


@pytest.mark.slow
def test_a_paragraph_continued_over_5000_pages():
    from haystack_fin.core.ingest.cleanup import join_page_breaks
    from haystack_fin.core.ingest.layout import Element

    rng = random.Random(3)
    body = " ".join(rng.choice(_WORDS) for _ in range(_PAGE_WORDS - 2))
    # Each page ends mid-sentence and the next starts in lower case: one paragraph over 5,000 pages.
    pages = [f"page {i} {body}" for i in range(5_000)]
    ocr = [{"ocr": True, "ocr_confidence": 0.5 + (i % 7) / 20} if i % 2 == 0 else {} for i in range(5_000)]
    elements = [Element("text", text, i + 1, **ocr[i]) for i, text in enumerate(pages)]
    joined = bounded("paragraph over 5,000 pages", lambda: join_page_breaks(elements))
    assert len(joined) == 1
    assert joined[0].text == " ".join(pages)
    assert joined[0].pages == list(range(1, 5_001))
    assert joined[0].ocr and joined[0].ocr_confidence is not None and 0.5 < joined[0].ocr_confidence < 0.8


@pytest.mark.slow
def test_a_table_continued_over_2000_pages():
    from haystack_fin.core.ingest.cleanup import join_page_breaks
    from haystack_fin.core.ingest.layout import Element, TableData

    header = ["", "2023", "2022"]
    elements = []
    for page in range(1, 2_001):
        rows = [header] + [[f"Line item {page}.{r}", f"{page * r:,}", f"({r})"] for r in range(50)]
        title = "Consolidated Balance Sheets" + (" (continued)" if page > 1 else "")
        text = "\n".join(" | ".join(row) for row in rows)
        elements.append(Element("table", text, page, table=TableData(rows, 1, title, "in millions" * (page == 7))))
    joined = bounded("table over 2,000 pages", lambda: join_page_breaks(elements))
    assert len(joined) == 1 and joined[0].table is not None
    table = joined[0].table
    assert len(table.rows) == 1 + 2_000 * 50  # one header: each continuation's repeated header is dropped
    assert table.rows[0] == header and table.rows[-1] == ["Line item 2000.49", "98,000", "(49)"]
    assert table.title == "Consolidated Balance Sheets" and table.units == "in millions"
    assert joined[0].pages == list(range(1, 2_001))


@pytest.mark.slow
def test_html_table_of_wide_spanning_cells():
    from haystack_fin.core.ingest.html import parse_html_filing

    # Rows of 100 cells of colspan 200 make the grid 20,000 columns wide, of which 100 hold text; a dense row per
    # table row (5,000 here) was 100 million cells to fill and scan. The long narrow part keeps the parser's own
    # per-cell work small next to that: a table of 2,000 rows x 100 such cells (200,000 cells) takes ~9 s of CPU
    # with the sparse grid too, on this shared machine, too close to the bound to tell the two apart.
    wide = "".join(
        "<tr>" + "".join(f'<td colspan="200">r{r}c{c}</td>' for c in range(100)) + "</tr>" for r in range(200)
    )
    narrow = "".join(
        f'<tr><td colspan="200">r{r}c0</td><td colspan="200">$</td><td colspan="200">{r:,}</td></tr>'
        for r in range(200, 5_000)
    )
    data = _html(f"<p>Item 8. Financial Statements</p><table>{wide}{narrow}</table>")
    parsed = bounded(
        "HTML 5,000-row table with rows of 100 cells of colspan 200", lambda: parse_html_filing("w.htm", data=data)
    )
    tables = [e for e in parsed.elements if e.kind == "table"]
    assert len(tables) == 1 and tables[0].table is not None
    rows = tables[0].table.rows
    assert len(rows) == 5_000 and {len(r) for r in rows} == {100}
    assert rows[199] == [f"r199c{c}" for c in range(100)]
    assert rows[4_999][:3] == ["r4999c0", "", "4,999"] and not any(rows[4_999][3:])  # "$" merges into the amount


def merged_ocr(first: Any, second: Any) -> dict[str, Any]:
    """The OCR fields of two joined elements, as the old pairwise join computed them (the reference for the run
    accumulator in cleanup.join_page_breaks): OCR if either part is, confidence weighted by text length."""
    if not (first.ocr or second.ocr):
        return {}
    parts = [(e.ocr_confidence, max(len(e.text), 1)) for e in (first, second) if e.ocr_confidence is not None]
    confidence = sum(c * n for c, n in parts) / sum(n for _, n in parts) if parts else None
    return {"ocr": True, "ocr_confidence": confidence}


def _join_page_breaks_quadratic(elements: list[Any]) -> list[Any]:
    """join_page_breaks as it was before its linear rewrite: the joined Element rebuilt at every page break."""
    from haystack_fin.core.ingest.layout import Element, TableData
    from haystack_fin.core.text import squash

    def same_table(prev: Any, nxt: Any) -> bool:
        untitled = not nxt.title or squash(nxt.title) == squash(prev.title) or "continued" in nxt.title.lower()
        return prev.n_cols == nxt.n_cols and prev.n_cols >= 2 and untitled

    first_on_page: dict[int, int] = {}
    for i, el in enumerate(elements):
        if el.kind != "image":
            first_on_page.setdefault(el.page, i)
    out: list[Any] = []
    for i, el in enumerate(elements):
        prev = out[-1] if out else None
        if prev is not None and el.page == prev.pages[-1] + 1 and first_on_page.get(el.page) == i:
            tail, head = prev.text.rstrip(), el.text.lstrip()
            if (
                prev.kind == el.kind == "text"
                and not (prev.is_heading or el.is_heading)
                and tail
                and head
                and tail[-1] not in '.:;!?”"'
                and (head[0].islower() or tail[-1] in ",-–(")
            ):
                out[-1] = Element(
                    "text",
                    f"{prev.text} {el.text}",
                    prev.page,
                    pages=[*prev.pages, el.page],
                    bbox=prev.bbox,
                    font_size=prev.font_size,
                    bold=prev.bold,
                    **merged_ocr(prev, el),
                )
                continue
            if prev.kind == el.kind == "table" and prev.table and el.table and same_table(prev.table, el.table):
                table = TableData(
                    [*prev.table.rows, *el.table.rows[el.table.header_rows :]],
                    prev.table.header_rows,
                    prev.table.title,
                    prev.table.units or el.table.units,
                )
                out[-1] = Element(
                    "table",
                    f"{prev.text}\n{el.text}",
                    prev.page,
                    pages=[*prev.pages, el.page],
                    bbox=prev.bbox,
                    table=table,
                    **merged_ocr(prev, el),
                )
                continue
        out.append(el)
    return out


def _grid_dense(raw: list[list[Any]]) -> list[list[str]]:
    """html._grid's placement as it was before its linear rewrite: a dense row over every grid column."""
    from haystack_fin.core.ingest.html import merge_cell_fragments

    placed, carry, n_cols = [], {}, 0
    for cells in raw:
        busy = {c for c, n in carry.items() if n > 0}
        carry = {c: n - 1 for c, n in carry.items() if n > 1}
        col, row = 0, []
        for cell in cells:
            while col in busy:
                col += 1
            row.append((col, cell.colspan, cell.text))
            if cell.rowspan > 1:
                for c in range(col, col + cell.colspan):
                    carry[c] = max(carry.get(c, 0), cell.rowspan - 1)
            col += cell.colspan
        merged = merge_cell_fragments([t for _, _, t in row])
        placed.append([(s, n, t) for (s, n, _), t in zip(row, merged, strict=True)])
        n_cols = max(n_cols, col)
    counts = [0] * n_cols
    for row in placed:
        for s, n, t in row:
            counts[s] += bool(t and n == 1)

    def target(s: int, n: int, weights: list[int]) -> int:
        if n == 1 or s == 0:
            return s
        window = weights[s : s + n]
        return s + window.index(max(window)) if max(window) else s

    counts2 = [0] * n_cols
    for row in placed:
        for s, n, t in row:
            counts2[target(s, n, counts)] += bool(t)
    grid = []
    for row in placed:
        line = [""] * n_cols
        for s, n, t in row:
            if t:
                c = target(s, n, counts if n == 1 or s == 0 or max(counts[s : s + n]) else counts2)
                line[c] = f"{line[c]} {t}".strip() if line[c] else t
        grid.append(line)
    keep = [c for c in range(n_cols) if any(r[c] for r in grid)]
    return [cells for cells in ([line[c] for c in keep] for line in grid) if any(cells)]


@pytest.mark.slow
def test_linear_joins_and_grid_give_what_the_quadratic_ones_gave():
    from haystack_fin.core.ingest import html
    from haystack_fin.core.ingest.cleanup import join_page_breaks
    from haystack_fin.core.ingest.layout import Element, TableData

    rng = random.Random(8)
    texts = ["revenue rose", "and then", "Total.", "end,", "  ", "", "(a", "continued here", "Note 3:", "word-"]
    joins = 0
    for _ in range(1_000):
        elements, page = [], 1
        for _ in range(rng.randint(0, 25)):
            page += rng.choice([0, 0, 1, 1, 2])
            ocr = {"ocr": True, "ocr_confidence": rng.choice([None, rng.random()])} if rng.random() < 0.3 else {}
            kind = rng.choice(["text", "text", "table", "image"])
            if kind == "table":
                n = rng.choice([2, 3])
                rows = [[rng.choice(["", "a", "1"]) for _ in range(rng.choice([n, n, n - 1]))] for _ in range(3)]
                title = rng.choice(["", "Balance", "Balance (continued)", "Other"])
                table = TableData(rows, rng.randint(0, 1), title, rng.choice(["", "in millions", "in thousands"]))
                elements.append(Element("table", rng.choice(texts), page, table=table, bbox=(0, 0, 1, 1), **ocr))
            else:
                text = rng.choice(texts) + rng.choice(["", " x", " y."])
                heading, size = rng.random() < 0.1, rng.choice([0.0, 10.0])
                elements.append(Element(kind, text, page, is_heading=heading, font_size=size, bold=size > 0, **ocr))
        expected = _join_page_breaks_quadratic(elements)
        joins += len(elements) - len(expected)
        got = join_page_breaks(elements)
        assert [e.to_dict() for e in got] == [e.to_dict() for e in expected], elements
        # The OCR confidence mean to the last bit, not only to dict equality's float ==.
        assert [repr(e.ocr_confidence) for e in got] == [repr(e.ocr_confidence) for e in expected]
    assert joins > 250  # the random filings do break paragraphs and tables across pages
    for _ in range(1_500):
        raw = [
            [
                html._Cell(rng.choice(["", "$", ")", "%", "1,234", "(5", "2024", "Total"]), *rng.choice(_SPANS))
                for _ in range(rng.randint(0, 8))
            ]
            for _ in range(rng.randint(0, 8))
        ]
        assert html._grid(raw)[0] == _grid_dense(raw), raw


_SPANS = [(1, 1)] * 6 + [(2, 1), (3, 1), (5, 1), (1, 2), (3, 3), (2, 2)]  # (colspan, rowspan)
