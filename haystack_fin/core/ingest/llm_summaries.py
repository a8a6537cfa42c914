"""Chat-model summaries of table and image chunks for their embedding (optional).

A table block embeds its template summary (``table_blocks.table_summary``) and its Markdown; an image chunk embeds
its caption, labels and OCR'd text. A chat model (any Haystack chat generator, e.g. a local Ollama model, a vision
model for images) can add a short prose summary of what the table or chart reports. The reply is read defensively:
reasoning blocks and code fences are dropped, a leading "Summary:" label too, and a reply that is empty, too short
or a refusal gives no summary, so the chunk keeps its template text.
"""

import re

from haystack_fin.core.text import strip_model_wrappers

PROMPT = (
    "Summarize in at most {max_words} words what this {what} from {source} reports: the line items or series, the "
    "periods, the units, and the main movement. Do not invent numbers. Reply with the summary only.\n\n{content}"
)
# A reply that says the model cannot see or read the input is not a summary of it.
_REFUSAL = re.compile(r"^(?:i(?:'m| am) sorry|i can(?:no|')t|i am unable|unable to|as an ai)\b", re.IGNORECASE)
_LABEL = re.compile(r"^(?:\*\*)?summary(?:\*\*)?\s*:(?:\*\*)?\s*", re.IGNORECASE)
MIN_WORDS = 4


def summary_prompt(modality: str, content: str, source: str, max_words: int = 80, max_chars: int = 6000) -> str:
    """The prompt for one table (``modality="table"``: its Markdown) or image chunk (its caption, labels and OCR'd
    text; a vision model also gets the image)."""
    what = "table" if modality == "table" else "chart or image"
    return PROMPT.format(max_words=max_words, what=what, source=source or "a filing", content=content[:max_chars])


def parse_summary(reply: str, max_words: int = 80) -> str | None:
    """The summary in a chat reply, whitespace-collapsed and cut to ``max_words`` words; None when the reply is
    empty, shorter than ``MIN_WORDS`` words or a refusal."""
    text = _LABEL.sub("", strip_model_wrappers(reply or "")).strip()
    words = text.split()
    if len(words) < MIN_WORDS or _REFUSAL.match(text):
        return None
    return " ".join(words[:max_words])


def render_region_png(pdf_path: str, page_number: int, bbox: list[float], max_pixels: int = 1_000_000) -> bytes | None:
    """The PNG of a figure's region (``bbox`` in PDF points, 1-based ``page_number``) at up to ``max_pixels``, for a
    vision model; None when the file, page or box cannot be read (an HTML filing has no regions)."""
    import pymupdf

    if not pdf_path.lower().endswith(".pdf") or len(bbox) != 4:
        return None
    try:
        with pymupdf.open(pdf_path) as doc:
            if not 1 <= page_number <= doc.page_count:
                return None
            rect = pymupdf.Rect(bbox) & doc[page_number - 1].rect
            if rect.is_empty:
                return None
            zoom = min(4.0, (max_pixels / max(1.0, rect.width * rect.height)) ** 0.5)
            pix = doc[page_number - 1].get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=rect, alpha=False)
            png: bytes = pix.tobytes("png")
            return png
    except (RuntimeError, ValueError, OSError):  # pymupdf raises RuntimeError subclasses for unreadable files
        return None
