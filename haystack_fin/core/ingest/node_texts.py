"""The deterministic, model-free texts of a summary-tree node, and the reading of a chat model's node texts.

``extractive_summary`` (central sentences, salient lexicon terms, table row labels) and ``template_questions``
(questions from headings, row labels, terms and periods) are used when no chat generator is configured and as the
fallback when an LLM reply is unusable (``parse_node_reply``). No Haystack import.
"""

import json
import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from haystack_fin.core.ingest.clustering import unit_rows
from haystack_fin.core.lexicon import Lexicon
from haystack_fin.core.text import normalize_line, split_sentences, strip_model_wrappers

_WORD = re.compile(r"[a-z][a-z'’-]{2,}")
_STOPWORDS = frozenset(
    """the and for that with this from are was were has have had not but its our which their such other these those
    than into over may will would could should can also been being any all each more most some only per upon under
    within about after before during between through against among both very who whom what when where why how out
    they them there here then thus it's we us you your his her him she he one two three year years""".split()  # noqa: SIM905
)
# Lexicon categories whose concepts are topics rather than quantities.
QUALITATIVE_CATEGORIES = frozenset(
    {"financial_statements", "mdna", "accounting", "risk", "business", "esg", "governance", "legal", "sec_structure"}
    | {"events", "guidance", "acquisitions", "segments"}
)
_BULLET = re.compile(r"^[\s•·◦▪\-–*]+")
_YEAR = re.compile(r"\b(19[5-9]\d|20\d\d)\b")
_MAX_LABEL_WORDS = 10
# The lookbehinds let a match start only where a run of spaces (or stars) starts: without them ``sub`` rescans a
# long run from each of its positions when it does not end the label. Same leftmost match, same result.
_FOOTNOTE = re.compile(r"(?<!\s)\s*(\(\d{1,2}\)|(?<!\*)\*+)$")


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def _is_table_line(line: str) -> bool:
    return line.lstrip().startswith("|")


def prose_sentences(text: str, min_words: int = 6, max_words: int = 60) -> list[str]:
    """Sentences of a chunk's prose: markdown table lines, headings and number-only fragments left out."""
    sentences: list[str] = []
    for paragraph in text.split("\n"):
        if _is_table_line(paragraph):
            continue
        line = _BULLET.sub("", normalize_line(paragraph))
        if not line:
            continue
        for sentence in split_sentences(line):
            words = sentence.split()
            letters = sum(c.isalpha() for c in sentence)
            if min_words <= len(words) <= max_words and letters >= 0.5 * len(sentence):
                sentences.append(sentence)
    return sentences


def markdown_row_labels(text: str) -> list[str]:
    """First cells of a markdown table's data rows (header and separator rows skipped)."""
    labels: list[str] = []
    table_lines = [line.strip() for line in text.split("\n") if _is_table_line(line)]
    for i, line in enumerate(table_lines):
        if i == 0 or set(line) <= set("|-: "):
            continue
        cells = line.strip("|").split("|")
        label = clean_row_label(cells[0]) if cells else ""
        if label:
            labels.append(label)
    return labels


def clean_row_label(label: str) -> str:
    """A row label fit for a question: whitespace collapsed, trailing colon and footnote markers dropped; "" when the
    label has no letters."""
    label = _FOOTNOTE.sub("", normalize_line(label)).rstrip(":").strip()
    label = _truncate_words(label, _MAX_LABEL_WORDS).removesuffix(" ...")  # "..., net of tax of $(598), $(156), and"
    return label.rstrip(",;") if sum(c.isalpha() for c in label) >= 2 else ""


def term_mentions(text: str, lexicon: Lexicon) -> list[tuple[str, str]]:
    """``(cluster_id, surface term)`` for every lexicon term in ``text``, in text order. Exact and normalized matches
    only: filing text has few typos and many words, and fuzzy matching is the expensive part."""
    return [(m.cluster_id, m.term) for m in lexicon.find_terms(text, fuzzy=False)]


def rank_term_concepts(mentions: Sequence[Sequence[tuple[str, str]]], max_terms: int = 6) -> list[tuple[str, str]]:
    """The most mentioned concepts over texts (``mentions`` holds one ``term_mentions`` list per text, in order), as
    ``(cluster_id, surface term)``: one surface term per concept (its most frequent one), most mentioned concept
    first, ties by first mention."""
    concept_count: Counter[str] = Counter()
    surface_count: dict[str, Counter[str]] = {}
    first_seen: dict[str, int] = {}
    for text_mentions in mentions:
        for cluster_id, term in text_mentions:
            concept_count[cluster_id] += 1
            surface_count.setdefault(cluster_id, Counter())[term] += 1
            first_seen.setdefault(cluster_id, len(first_seen))
    ranked = sorted(concept_count, key=lambda c: (-concept_count[c], first_seen[c]))[:max_terms]
    return [(c, min(surface_count[c], key=lambda t: (-surface_count[c][t], len(t), t))) for c in ranked]


def rank_terms(mentions: Sequence[Sequence[tuple[str, str]]], max_terms: int = 6) -> list[str]:
    """The surface terms of ``rank_term_concepts``."""
    return [term for _, term in rank_term_concepts(mentions, max_terms)]


def metric_terms(concepts: Sequence[tuple[str, str]], lexicon: Lexicon) -> list[str]:
    """The terms of ``concepts`` that name a quantity (revenue, capex, ARPU), not a topic (risk factors, legal
    proceedings): only those make sense in "How did <metric> change?"."""
    return [term for cluster_id, term in concepts if lexicon.cluster(cluster_id).category not in QUALITATIVE_CATEGORIES]


def salient_terms(texts: Sequence[str], lexicon: Lexicon, max_terms: int = 6) -> list[str]:
    """The lexicon terms mentioned most in ``texts`` (see ``rank_terms``)."""
    return rank_terms([term_mentions(text, lexicon) for text in texts], max_terms)


def _truncate_words(text: str, max_words: int) -> str:
    """At most ``max_words`` words, the last one an ellipsis when words were cut."""
    words = text.split()
    if len(words) <= max_words:
        return text
    if max_words < 2:
        return " ".join(words[:max_words])
    return " ".join(words[: max_words - 1]).rstrip(",;:") + " ..."


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def extractive_summary(
    texts: Sequence[str],
    embeddings: np.ndarray | Sequence[Sequence[float]] | None = None,
    max_sentences: int = 4,
    lexicon: Lexicon | None = None,
    terms: Sequence[str] | None = None,
    row_labels: Sequence[str] | None = None,
    max_words: int = 120,
    max_terms: int = 6,
    max_row_labels: int = 8,
) -> str:
    """A deterministic, model-free summary of a node's chunks, at most ``max_words`` words.

    Lines, in order: the most central prose sentences (scored by TF-IDF similarity to the node's word centroid plus
    the centrality of their chunk, i.e. cosine of its embedding to the embeddings' centroid; at most one sentence
    per chunk while other chunks have candidates; near-duplicates from chunk overlap skipped; shown in document
    order), then ``Key terms: ...`` (salient lexicon terms) and ``Table rows: ...`` (row labels of table chunks).

    :param texts: the chunk texts below the node, in document order.
    :param embeddings: their embeddings (n, dim), or None to rank sentences by words alone.
    :param max_sentences: most sentences kept.
    :param lexicon: used to find salient terms when ``terms`` is not given.
    :param terms: salient terms, already ranked (precomputed by the caller to avoid re-matching shared leaves).
    :param row_labels: table row labels; None reads the first cells of markdown table rows in ``texts``.
    :param max_words: word budget of the whole summary.
    """
    if not texts:
        return ""
    if terms is None:
        terms = salient_terms(texts, lexicon, max_terms) if lexicon is not None else []
    terms = list(dict.fromkeys(terms))[:max_terms]
    if row_labels is None:
        row_labels = [label for text in texts for label in markdown_row_labels(text)]
    labels = list(dict.fromkeys(label for label in row_labels if label))[:max_row_labels]

    extra_lines: list[str] = []
    if terms:
        extra_lines.append(_truncate_words("Key terms: " + ", ".join(terms) + ".", max(4, max_words // 6)))
    if labels:
        extra_lines.append(_truncate_words("Table rows: " + "; ".join(labels) + ".", max(4, max_words // 4)))
    while extra_lines and sum(len(line.split()) for line in extra_lines) > max_words:  # only for tiny budgets
        extra_lines.pop()
    budget = max_words - sum(len(line.split()) for line in extra_lines)

    centrality = np.zeros(len(texts))
    if embeddings is not None and len(texts) > 1:
        vectors = unit_rows(np.asarray(embeddings, dtype=float))
        centroid = unit_rows(vectors.mean(axis=0, keepdims=True))[0]
        centrality = vectors @ centroid

    candidates: list[tuple[int, int, str, list[str]]] = []  # (text index, position, sentence, words)
    for t, text in enumerate(texts):
        for p, sentence in enumerate(prose_sentences(text)):
            candidates.append((t, p, sentence, _words(sentence)))
    chosen: list[tuple[int, int, str]] = []
    if candidates and budget > 0 and max_sentences > 0:
        document_frequency: Counter[str] = Counter()
        for *_, words in candidates:
            document_frequency.update(set(words))
        n_sentences = len(candidates)
        idf = {w: math.log(1.0 + n_sentences / df) for w, df in document_frequency.items()}
        centroid_weights: dict[str, float] = {}
        for *_, words in candidates:
            for word in words:
                centroid_weights[word] = centroid_weights.get(word, 0.0) + idf[word]
        centroid_norm = math.sqrt(sum(v * v for v in centroid_weights.values())) or 1.0
        term_keys = [term.lower() for term in terms]
        scored: list[tuple[float, int, int, str, set[str]]] = []
        for t, p, sentence, words in candidates:
            weights = Counter({w: c * idf[w] for w, c in Counter(words).items()})
            norm = math.sqrt(sum(v * v for v in weights.values())) or 1.0
            lexical = sum(v * centroid_weights[w] for w, v in weights.items()) / (norm * centroid_norm)
            lowered = sentence.lower()
            term_bonus = 0.05 * min(3, sum(key in lowered for key in term_keys))
            # "... were as follows:" introduces a table and says little on its own.
            intro_penalty = 0.1 if sentence.endswith(":") else 0.0
            score = lexical + 0.5 * float(centrality[t]) + term_bonus - intro_penalty
            scored.append((-score, t, p, sentence, set(words)))
        scored.sort(key=lambda s: s[:3])
        used_texts: set[int] = set()
        kept_words: list[set[str]] = []
        seen: set[str] = set()
        remaining = budget
        n_texts_with_candidates = len({t for t, *_ in candidates})
        # Best first; one sentence per chunk while other chunks still offer one; a sentence that does not fit the
        # word budget is passed over for a shorter one.
        for pass_number in (0, 1):
            for _, t, p, sentence, word_set in scored:
                if len(chosen) >= max_sentences or remaining <= 0:
                    break
                key = sentence.lower()
                n_words = len(sentence.split())
                if key in seen or n_words > remaining or any(_jaccard(word_set, w) >= 0.7 for w in kept_words):
                    continue
                if pass_number == 0 and t in used_texts and len(used_texts) < n_texts_with_candidates:
                    continue
                chosen.append((t, p, sentence))
                used_texts.add(t)
                kept_words.append(word_set)
                seen.add(key)
                remaining -= n_words
        if not chosen and remaining >= 5:  # every sentence is longer than the budget: cut the best one
            _, t, p, sentence, _ = scored[0]
            chosen.append((t, p, _truncate_words(sentence, max(budget, 1))))
        chosen.sort()

    lines: list[str] = []
    if chosen:
        lines.append(" ".join(sentence for _, _, sentence in chosen))
    elif not extra_lines:  # no prose, terms or rows (e.g. an image caption fragment): the opening words
        opening = normalize_line(" ".join(t for t in texts if t))
        lines.append(_truncate_words(opening, max_words) if opening else "")
    return "\n".join(line for line in [*lines, *extra_lines] if line)


def periods_from_texts(texts: Sequence[str], max_periods: int = 2) -> list[str]:
    """The years mentioned most in ``texts`` (ties: latest first), as period labels for questions."""
    counts = Counter(match for text in texts for match in _YEAR.findall(text))
    return [year for year, _ in sorted(counts.items(), key=lambda kv: (-kv[1], -int(kv[0])))[:max_periods]]


def _looks_like_heading(text: str) -> bool:
    """Risk-factor and other "headings" are often whole sentences; a question reads badly around those."""
    words = text.split()
    return 0 < len(words) <= 12 and (text[0].isupper() or text[0].isdigit()) and not text.endswith((".", ",", ";"))


def _heading(section_paths: Sequence[Sequence[str]]) -> str:
    """The most common deepest heading among the chunks (first in document order on ties); the Item label when the
    deepest headings do not read as headings."""
    deepest = [str(path[-1]).strip() for path in section_paths if path and str(path[-1]).strip()]
    deepest = [heading for heading in deepest if _looks_like_heading(heading)]
    if not deepest:
        labels = [str(path[0]).strip() for path in section_paths if path and str(path[0]).strip()]
        return labels[0] if labels else ""
    counts = Counter(deepest)
    return max(dict.fromkeys(deepest), key=lambda h: counts[h])


def _interleave(first: Sequence[str], second: Sequence[str]) -> list[str]:
    merged: list[str] = []
    for i in range(max(len(first), len(second))):
        merged += [*first[i : i + 1], *second[i : i + 1]]
    return merged


def template_questions(
    texts: Sequence[str],
    section_paths: Sequence[Sequence[str]],
    table_row_labels: Sequence[str],
    terms: Sequence[str],
    periods: Sequence[str],
    max_questions: int = 5,
    metrics: Sequence[str] | None = None,
) -> list[str]:
    """Deterministic questions a node's subtree answers, built from templates (no LLM), at most ``max_questions``.

    Templates, interleaved so a node mixes them: "What was <row label> in <period>?", "What does <heading> say about
    <term>?", "How did <metric> change from <older period> to <period>?", then more of the first two, then
    "What does <heading> say?" as a last resort. ``periods`` come most recent first (e.g. table column years, then
    the filing's period); when empty, the years mentioned most in ``texts`` are used.

    :param texts: the chunk texts below the node (used only for fallback periods).
    :param section_paths: the chunks' section paths (Item label first, deepest heading last).
    :param table_row_labels: row labels of the node's table chunks, in order of importance.
    :param terms: salient lexicon terms, most salient first.
    :param periods: period labels, most recent first.
    :param max_questions: most questions returned.
    :param metrics: terms that name quantities (see ``metric_terms``); the change question uses a row label, else
        the first metric, else none is asked (how a topic like "legal proceedings" changed is no question).
    """
    labels = list(dict.fromkeys(clean_row_label(label) for label in table_row_labels))
    labels = [label for label in labels if label]
    terms = list(dict.fromkeys(t for t in terms if t))
    periods = list(dict.fromkeys(p for p in periods if p)) or periods_from_texts(texts)
    heading = _heading(section_paths) or "this section"
    period = periods[0] if periods else ""
    in_period = f" in {period}" if period else ""

    row_questions = [f"What was {label}{in_period}?" for label in labels]
    term_questions = [f"What does {heading} say about {term}?" for term in terms]
    metrics = [m for m in metrics or [] if m]
    change_metric = labels[0] if labels else (metrics[0] if metrics else "")
    change: list[str] = []
    if change_metric and len(periods) >= 2:
        change = [f"How did {change_metric} change from {periods[1]} to {periods[0]}?"]
    elif change_metric:
        change = [f"How did {change_metric} change{in_period}?"]
    ordered = [
        *row_questions[:1],
        *term_questions[:1],
        *change,
        *_interleave(row_questions[1:], term_questions[1:]),
        f"What does {heading} say?",
    ]
    return list(dict.fromkeys(ordered))[:max_questions]


def table_periods(columns: Sequence[str]) -> list[str]:
    """Years named in a table's column headers ("Year ended December 31, 2015"), most recent first."""
    years = {year for column in columns for year in _YEAR.findall(column)}
    return sorted(years, reverse=True)


_QUESTION_PREFIX = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)]|Q\d{1,2}[:.)])\s*")


def parse_node_reply(
    reply: str, max_words: int = 120, max_questions: int = 5, max_question_words: int = 40
) -> tuple[str | None, list[str] | None]:
    """Read a chat model's ``{"summary": str, "questions": [str, ...]}`` reply defensively.

    Tolerates reasoning blocks (``<think>...</think>``), code fences and prose around the JSON object, and a
    newline-separated string instead of a question list. Returns ``(summary, questions)``, each None when missing,
    empty or of the wrong type; the summary is cut to ``max_words`` words, questions to ``max_questions``.
    """
    text = strip_model_wrappers(reply or "")
    data = None
    for candidate in (text, text[text.find("{") : text.rfind("}") + 1] if "{" in text else ""):
        if not candidate:
            continue
        try:
            data = json.loads(candidate)
            break
        except (json.JSONDecodeError, ValueError):
            continue
    if not isinstance(data, dict):
        return None, None
    summary = data.get("summary")
    summary = _truncate_words(" ".join(summary.split()), max_words) if isinstance(summary, str) else ""
    raw = data.get("questions")
    if isinstance(raw, str):
        raw = raw.split("\n")
    questions: list[str] = []
    if isinstance(raw, list):
        for question in raw:
            if isinstance(question, str):
                cleaned = _truncate_words(" ".join(_QUESTION_PREFIX.sub("", question).split()), max_question_words)
                if cleaned and cleaned not in questions:
                    questions.append(cleaned)
    return (summary or None), (questions[:max_questions] or None)
