"""One answer to a question as JSON: what ``ask --json``, the REST route ``/haystack-fin/run`` and the MCP tool
return, built in one place.

``{"question", "answer", "citations", "unsupported_numbers", "unmatched", "generation", "passages"}`` and, when
asked for, ``"trace"``: each stage's trace plus, per passage, how the retriever reached it (``retrieved_by``), its
tree paths and why the graph stage added it (``graph_paths``).
"""

import json
from collections.abc import Mapping
from typing import Any

from haystack_fin.core import schema


def passage_dict(doc: Any) -> dict[str, Any]:
    """A returned passage as JSON: text and provenance."""
    m = doc.meta
    return {
        "id": doc.id,
        "text": doc.content,
        "filing_id": m.get(schema.FILING_ID),
        "company": m.get(schema.COMPANY),
        "form": m.get(schema.FORM),
        "period": m.get(schema.PERIOD),
        "item": m.get(schema.ITEM),
        "section": m.get(schema.SECTION_PATH),
        "pages": m.get(schema.PAGE_NUMBERS),
        "modality": m.get(schema.MODALITY),
        "table_id": m.get(schema.TABLE_ID),
        "score": doc.score,
    }


def passage_label(p: Mapping[str, Any]) -> str:
    """A returned passage's citation on one line (``passage_dict``'s fields): company, form, period, filing id, Item,
    the heading it sits under, pages, and its modality or table id."""
    head = " ".join(str(p[k]) for k in ("company", "form", "period") if p.get(k))
    section = p.get("section") or []
    heading = f" > {section[-1]}" if section else ""
    pages = ", ".join(str(x) for x in p.get("pages") or [])
    table_id = str(p.get("table_id") or "")
    kind = f"table {table_id.rpartition('#')[2]}" if table_id else str(p.get("modality") or "")
    return f"{head} ({p.get('filing_id')}), Item {p.get('item')}{heading}, p. {pages}" + (f" [{kind}]" if kind else "")


def numbers_check_text(unsupported: list[dict[str, Any]]) -> str:
    """What the answer check found: every number in a cited passage, or the numbers found in none."""
    if not unsupported:
        return "Every number in the answer was found in a cited passage."
    found = ", ".join(u["text"] for u in unsupported)
    return f"Numbers not found in the cited passages (check them): {found}"


def generation_status(requested: bool, ollama_up: bool, answered: bool, passages: bool, url: str) -> str:
    """What happened to generation, in words (the reason when there is no answer)."""
    if answered:
        return "ollama"
    if not requested:
        return "skipped: generate=false"
    if not ollama_up:
        return f"skipped: Ollama not reachable at {url}" if url else "skipped: Ollama not reachable"
    return "skipped: no passage found" if not passages else "skipped"


def unmatched_of(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """What the question asks for that no indexed filing has (company, period, form, filing id), from the scope."""
    return list((trace.get("scope") or {}).get("unmatched") or [])


def unknown_filing_ids(unmatched: list[dict[str, Any]]) -> list[str]:
    """The explicit filing ids no indexed filing has."""
    return [str(u["text"]) for u in unmatched if u.get("kind") == "filing_id"]


def retrieved_by(doc: Any) -> dict[str, Any]:
    """How the retriever reached a passage, in the trace's words (mode, tree paths, statement, heading)."""
    info = dict(doc.meta.get(schema.RETRIEVAL) or {})
    keep = ("mode", "tree_paths", "statement", "section", "cluster", "flam_score", "reason")
    return {"item": doc.meta.get(schema.ITEM), **{k: info[k] for k in keep if k in info}}


def _plain(value: Any) -> Any:
    """JSON-safe copy of a trace (sets, dataclasses and numpy scalars become strings or lists)."""
    return json.loads(json.dumps(value, default=str))


def query_response(question: str, result: Any, generation: str, explain: bool = False) -> dict[str, Any]:
    """The JSON answer of one ``QueryRunner.run`` ``result``; ``generation`` says what happened to generation."""
    answer = result.answer
    passages = result.passages
    out: dict[str, Any] = {
        "question": question,
        "answer": answer.data if answer is not None else None,
        # Per cited passage: filing, Item, pages, table id and the cells or text where the answer's numbers are.
        "citations": answer.meta.get("citations") if answer is not None else None,
        # Numbers of the answer found in no cited passage (computed ones too: check that arithmetic).
        "unsupported_numbers": answer.meta.get("unsupported_numbers") if answer is not None else None,
        "unmatched": unmatched_of(result.trace),
        "generation": generation,
        "passages": [passage_dict(d) for d in passages],
    }
    if explain:
        out["trace"] = _plain(
            {
                **result.trace,
                "tree_paths": {d.id: d.meta.get(schema.RETRIEVAL, {}).get("tree_paths") for d in passages},
                "retrieved_by": [retrieved_by(d) for d in passages],
                "graph_paths": [
                    d.meta[schema.GRAPH].get("explain") if isinstance(d.meta.get(schema.GRAPH), dict) else None
                    for d in passages
                ],
            }
        )
    return out
