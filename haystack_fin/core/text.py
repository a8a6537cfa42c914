"""Text normalization, token estimates and sentence splitting shared by parsers and chunkers."""

import re

# Several EDGAR PDFs separate words with U+00A0 (and friends); Python's str.split() handles them but Haystack's
# word splitter splits on ASCII spaces only, turning 200-word chunks into 50,000-word ones. Map every Unicode
# space separator and zero-width character to what a reader sees.
# The Zs category without U+0020, written out: scanning all 1.1M code points for it cost 0.3 s of every process
# start (a cold `ask` is ~4 s). A test checks the list against unicodedata.
SPACE_SEPARATORS = "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
_SPACE_TABLE = {ord(c): " " for c in SPACE_SEPARATORS}
_SPACE_TABLE.update({ord(c): "" for c in "\u200b\u200c\u200d\u2060\ufeff\u00ad"})
_SPACE_TABLE.update({ord("\t"): " ", ord("\r"): "\n", ord("\u2028"): "\n", ord("\u2029"): "\n"})

_MULTI_SPACE = re.compile(r"[ ]{2,}")


def _strip_around_newlines(text: str) -> str:
    """Drop the spaces on both sides of every newline: what ``re.sub(r" *\\n *", "\\n", text)`` does, in linear
    time (that regex rescans a run of spaces from each of its positions when no newline follows it)."""
    if "\n" not in text:
        return text
    lines = text.split("\n")
    last = len(lines) - 1
    return "\n".join(
        line.lstrip(" ") if i == last else line.strip(" ") if i else line.rstrip(" ") for i, line in enumerate(lines)
    )


def normalize_whitespace(text: str) -> str:
    """Unicode spaces to ASCII spaces, zero-width characters dropped, runs of spaces collapsed, ends trimmed."""
    text = text.translate(_SPACE_TABLE)
    text = _MULTI_SPACE.sub(" ", text)
    text = _strip_around_newlines(text)
    return text.strip()


def normalize_line(text: str) -> str:
    """One line of text: all whitespace (including newlines) collapsed to single spaces."""
    return " ".join(text.translate(_SPACE_TABLE).split())


# BERT-style pre-tokenization splits on whitespace and punctuation; word pieces add ~10-20% on financial prose.
_PRETOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def estimate_tokens(text: str) -> int:
    """Estimate the word-piece count of ``text`` for a BERT-family embedder without loading a tokenizer.

    Counts pre-tokens (words and punctuation marks) and adds one piece per 8 characters of long words, which
    tracks all-MiniLM-L6-v2's tokenizer within about 10% on filing text.
    """
    pieces = _PRETOKEN.findall(text)
    extra = sum((len(p) - 1) // 8 for p in pieces if len(p) > 8)
    return len(pieces) + extra


# A sentence ends at . ! ? (optionally followed by a closing quote/bracket) before whitespace and an upper-case
# letter, digit or opening quote; common abbreviations in filings do not end sentences.
_ABBREVIATIONS = {
    "inc",
    "corp",
    "co",
    "ltd",
    "no",
    "nos",
    "u.s",
    "mr",
    "ms",
    "mrs",
    "dr",
    "st",
    "vs",
    "e.g",
    "i.e",
    "etc",
    "approx",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "l.p",
    "n.a",
    "s.a",
}
_SENTENCE_END = re.compile(r"([.!?][\"'”’)\]]*)\s+(?=[\"“‘(\[]?[A-Z0-9$])")


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences, keeping abbreviations like "Inc." and "U.S." inside their sentence."""
    sentences: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end(1)
        # The word before the mark, read backwards from it: slicing text[start:end] instead re-read the whole
        # pending sentence at every abbreviation, quadratic on a long run of "Inc." / "No." without a sentence end.
        i = end
        while i > start and not text[i - 1].isspace():
            i -= 1
        word = text[i:end]
        if word.rstrip(".!?\"'”’)]").lower().lstrip('("“') in _ABBREVIATIONS:
            continue
        if len(word) == 2 and word[0].isupper() and word[1] == ".":  # initials: "J. Smith"
            continue
        sentences.append(text[start:end].strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return [s for s in sentences if s]


_MATCH_KEY = re.compile(r"[^a-z0-9]+")


def squash(text: str) -> str:
    """Lower-case letters and digits only: "Busines s." and "Business" both become "business"."""
    return _MATCH_KEY.sub("", text.lower())


# --- chat model replies ---------------------------------------------------------------------------------------------

_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
# A closing fence may only start where a run of spaces starts, or right after the opening fence's spaces (third
# alternative): ``\s*```$`` alone rescans a run of spaces from each of its positions.
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|(?<!\s)\s*```$|(?<=\s)```$")


def _drop_think_blocks(text: str) -> str:
    """``re.sub(r"<think>.*?</think>", "", text, flags=re.S | re.I)`` in one pass over the tags: that regex scans to
    the end of the text from every ``<think>`` that is never closed."""
    pieces: list[str] = []
    pos, open_at = 0, -1
    for tag in _THINK_TAG.finditer(text):
        if open_at < 0:
            if not tag.group(1):
                open_at = tag.start()
        elif tag.group(1):
            pieces.append(text[pos:open_at])
            pos, open_at = tag.end(), -1
    pieces.append(text[pos:])
    return "".join(pieces)


def strip_model_wrappers(reply: str) -> str:
    """A chat model's reply without reasoning blocks (``<think>...</think>``) and without a code fence around it."""
    return _FENCE.sub("", _drop_think_blocks(reply).strip()).strip()
