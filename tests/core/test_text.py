import sys
import unicodedata

from haystack_fin.core.text import SPACE_SEPARATORS, normalize_whitespace


def test_the_written_out_space_separators_are_unicodes_zs_category():
    zs = "".join(chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Zs" and c != 0x20)
    assert zs == SPACE_SEPARATORS


def test_every_space_separator_reads_as_one_ascii_space():
    assert normalize_whitespace(f"net{SPACE_SEPARATORS}sales") == "net sales"
