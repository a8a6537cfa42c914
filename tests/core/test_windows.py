from haystack_fin.core.retrieval.windows import (
    WindowPart,
    build_window,
    chunk_index,
    join_texts,
    join_window,
    neighbour_ids,
    table_body,
)


def _part(i: int, item: str = "7", table: str | None = None, words: int = 50) -> WindowPart:
    return WindowPart(f"f#chunk-{i:05d}", " ".join([f"w{i}"] * words), item, table, [i])


def test_ids():
    assert chunk_index("ACME_2023_10K#chunk-00012") == 12
    assert chunk_index("ACME#filing") is None
    assert neighbour_ids("f#chunk-00001", 2) == ["f#chunk-00000", "f#chunk-00002", "f#chunk-00003"]


def test_window_grows_both_sides_within_budget_and_item():
    parts = {p.id: p for p in [_part(0, item="6"), _part(1), _part(2), _part(3), _part(4), _part(5)]}
    window = build_window(parts["f#chunk-00002"], parts, radius=3, max_words=200)
    assert [p.id for p in window] == ["f#chunk-00001", "f#chunk-00002", "f#chunk-00003", "f#chunk-00004"]
    # chunk 0 is another Item: never added even with a large budget
    window = build_window(parts["f#chunk-00002"], parts, radius=3, max_words=10_000)
    assert "f#chunk-00000" not in [p.id for p in window]


def test_table_grows_only_with_its_own_blocks():
    parts = {p.id: p for p in [_part(0), _part(1, table="t1"), _part(2, table="t1"), _part(3, table="t2")]}
    window = build_window(parts["f#chunk-00001"], parts, radius=3, max_words=10_000)
    assert [p.id for p in window] == ["f#chunk-00001", "f#chunk-00002"]


def test_join_drops_repeated_overlap():
    a = "Revenue rose 5%. Margins fell."
    b = "Margins fell. Cash grew."
    assert join_texts([a, b]) == "Revenue rose 5%. Margins fell.\nCash grew."
    assert join_texts(["One.", "Two."]) == "One.\nTwo."


def _block(i: int, rows: list[str]) -> WindowPart:
    head = ["Consolidated Balance Sheets", "$ in millions", "", "|  | 2019 | 2018 |", "| --- | --- | --- |"]
    return WindowPart(f"f#chunk-{i:05d}", "\n".join([*head, *rows]), "8", "f#table-0001", [52])


def test_blocks_of_one_table_join_with_one_header_and_cost_only_their_rows():
    first = _block(1, ["| Cash and cash equivalents | 1,980 | 1,101 |", "| Merchandise inventories | 5,409 | 5,209 |"])
    second = _block(2, ["| Accounts payable | 5,257 | 4,873 |"])
    assert table_body(second.text) == "| Accounts payable | 5,257 | 4,873 |"
    text = join_window([first, second])
    assert text.count("Consolidated Balance Sheets") == 1 and text.count("| --- | --- | --- |") == 1
    assert text.endswith("| Merchandise inventories | 5,409 | 5,209 |\n| Accounts payable | 5,257 | 4,873 |")
    # The budget counts the second block's rows only (7 words), not its repeated header (19 words).
    budget = len(first.text.split()) + len(table_body(second.text).split())
    window = build_window(first, {second.id: second}, radius=1, max_words=budget)
    assert [p.id for p in window] == [first.id, second.id]
    assert join_window([_part(1), _part(2)]) == join_texts([_part(1).text, _part(2).text])
