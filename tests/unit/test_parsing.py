from pathlib import Path

import pytest

from app.documents.parsing import ParseError, page_of, parse

CONTRACTS = Path(__file__).resolve().parents[3] / "shared" / "data" / "contracts"


def test_pdf_text_and_page_map():
    parsed = parse((CONTRACTS / "pdf" / "cuad-000.pdf").read_bytes())
    assert parsed.format == "pdf"
    assert len(parsed.page_starts) > 1 and parsed.page_starts[0] == 0
    assert parsed.page_starts == sorted(parsed.page_starts)
    assert "the laws of California" in parsed.text
    last = parsed.page_starts[-1]
    assert page_of(parsed.page_starts, last) == len(parsed.page_starts)
    assert page_of(parsed.page_starts, last - 1) == len(parsed.page_starts) - 1


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ("Caf\u00e9\r\nline two\r\n".encode("utf-8"), "Caf\u00e9\nline two\n"),
        (b"\xef\xbb\xbfbom text", "bom text"),
        ("smart \u201cquotes\u201d".encode("cp1252"), "smart \u201cquotes\u201d"),
        ("utf-16 text".encode("utf-16"), "utf-16 text"),
    ],
)
def test_text_decoding_and_newlines(data, text):
    parsed = parse(data)
    assert (parsed.format, parsed.text, parsed.page_starts) == ("txt", text, [0])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"MZ\x90\x00\x03\x00\x00\x00", "unsupported file type"),
        (b"%PDF-1.7\n garbage", "damaged"),
        (b"   \n\t ", "no text"),
    ],
)
def test_unreadable_files_get_a_clear_error(data, message):
    with pytest.raises(ParseError, match=message):
        parse(data)
