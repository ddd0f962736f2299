"""Parsers, in this process (the sandbox has its own tests): every format, the page/section map,
normalisation, type detection by content, ZIP guards, encrypted and image-only PDFs."""

import io
import zipfile

import pytest
from pypdf import PdfWriter

from app.documents.detect import ZipLimits, decode_text, detect_format
from app.documents.normalise import TextBuilder, normalise
from app.documents.parsing import ParseError, page_of, parse
from tests import docgen

CONTRACTS = docgen.CONTRACTS


def test_pdf_text_and_page_map():
    parsed = parse((CONTRACTS / "pdf" / "cuad-000.pdf").read_bytes())
    assert parsed.format == "pdf" and parsed.page_unit == "page"
    assert len(parsed.page_starts) > 1 and parsed.page_starts[0] == 0
    assert parsed.page_starts == sorted(parsed.page_starts)
    assert parsed.page_labels == [str(i + 1) for i in range(len(parsed.page_starts))]
    assert "the laws of California" in parsed.text
    last = parsed.page_starts[-1]
    assert page_of(parsed.page_starts, last) == len(parsed.page_starts)
    assert page_of(parsed.page_starts, last - 1) == len(parsed.page_starts) - 1


def _pdf(pages: int = 2, labels: bool = False, **encrypt) -> bytes:
    src = PdfWriter(clone_from=str(CONTRACTS / "pdf" / "cuad-000.pdf"))
    w = PdfWriter()
    for page in src.pages[:pages]:
        w.add_page(page)
    if labels:
        w.set_page_label(0, 0, "/r")  # first page "i"
        w.set_page_label(1, pages - 1, "/D", start=1)
    if encrypt:
        w.encrypt(**encrypt)
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def test_pdf_printed_page_labels_are_kept():
    assert parse(_pdf(3, labels=True)).page_labels == ["i", "1", "2"]


def test_encrypted_pdfs():
    with pytest.raises(ParseError, match="password-protected"):
        parse(_pdf(user_password="secret", owner_password="owner", algorithm="AES-256"))
    # encrypted only to restrict printing or copying: opens with the empty password
    assert "Agreement" in parse(_pdf(user_password="", owner_password="owner", algorithm="AES-128")).text


def test_image_only_pdf_is_reported_as_such():
    w = PdfWriter()
    for _ in range(2):
        w.add_blank_page(width=200, height=200)
    buf = io.BytesIO()
    w.write(buf)
    with pytest.raises(ParseError, match="no text layer.*OCR is not supported"):
        parse(buf.getvalue())


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ("Caf\u00e9\r\nline two\r\n".encode("utf-8"), "Caf\u00e9\nline two"),
        (b"\xef\xbb\xbfbom text", "bom text"),
        ("smart \u201cquotes\u201d".encode("cp1252"), "smart \u201cquotes\u201d"),
        ("utf-16 text".encode("utf-16"), "utf-16 text"),
        ("caf\u00e9 ".encode() + b"\xff" + " na\u00efve".encode(), "caf\u00e9 \ufffd na\u00efve"),  # damaged UTF-8
        (b"\x81\x8d latin", "\x81\x8d latin".replace("\x81", "").replace("\x8d", "").strip()),
    ],
)
def test_text_decoding_and_newlines(data, text):
    parsed = parse(data)
    assert (parsed.format, parsed.text, parsed.page_starts) == ("txt", text, [0])


def test_plain_text_chapters_become_sections():
    book = docgen.small_book()
    parsed = parse(docgen.to_txt(book))
    assert parsed.page_labels == ["Start", "Chapter 1", "Chapter 2", "Chapter 3"]
    at = parsed.text.index("One night a storm")
    assert parsed.page_labels[page_of(parsed.page_starts, at) - 1] == "Chapter 2"


@pytest.mark.parametrize("fmt", ["md", "html", "docx", "epub"])
def test_rich_formats_keep_text_order_and_headings(fmt):
    book = docgen.small_book()
    parsed = parse(docgen.convert(book, fmt))
    assert parsed.format == fmt and parsed.page_unit == "section"
    positions = [parsed.text.index(p) for p in book.paragraphs]
    assert positions == sorted(positions), "reading order kept"
    assert parsed.page_labels[-3:] == ["Chapter 1", "Chapter 2", "Chapter 3"]
    assert len(parsed.page_labels) == len(parsed.page_starts)
    for heading in ("Chapter 1", "Chapter 2", "Chapter 3"):
        section = parsed.page_labels.index(heading)
        assert parsed.text[parsed.page_starts[section] :].startswith(heading)
    storm = parsed.text.index("One night a storm")
    assert parsed.page_labels[page_of(parsed.page_starts, storm) - 1] == "Chapter 2"
    assert parsed.title == book.title


def test_markdown_with_a_title_and_plain_chapter_lines():
    """An excerpt that opens with `# Title` is Markdown; its plain "CHAPTER I" lines start sections
    as they do in the same text as TXT."""
    prose = "It was a bright cold day in April, and the clocks were striking thirteen."
    data = f"# The Excerpt\n\n{prose}\n\nCHAPTER I\n\n{prose}\n\nCHAPTER II\n\n{prose}".encode()
    parsed = parse(data)
    assert parsed.format == "md"
    assert parsed.page_labels == ["The Excerpt", "CHAPTER I", "CHAPTER II"]
    assert parse(data.replace(b"# The Excerpt", b"The Excerpt")).page_labels == ["Start", "CHAPTER I", "CHAPTER II"]


def test_docx_bold_title_like_paragraphs_start_sections():
    """A DOCX without heading styles marks headings in bold: they start sections as Heading 1 does;
    a bold phrase inside a paragraph, or a bold sentence, does not."""
    import docx

    book = docgen.small_book()
    parsed = parse(docgen.to_docx(book, headings="bold"))
    assert parsed.format == "docx"
    assert parsed.page_labels == ["The Lighthouse Keeper", "Chapter 1", "Chapter 2", "Chapter 3"]
    storm = parsed.text.index("One night a storm")
    assert parsed.page_labels[page_of(parsed.page_starts, storm) - 1] == "Chapter 2"

    d = docx.Document()
    d.add_paragraph().add_run("1. Definitions").bold = True
    d.add_paragraph("Terms have the meanings given here.")
    p = d.add_paragraph("The tenant ")
    p.add_run("shall not").bold = True
    p.add_run(" sublet.")
    d.add_paragraph().add_run("The landlord may enter the premises at any reasonable hour with notice.").bold = True
    d.add_paragraph("Closing words.")
    buf = io.BytesIO()
    d.save(buf)
    assert parse(buf.getvalue()).page_labels == ["1. Definitions"]


def test_html_scripts_styles_and_charset():
    html = (
        '<html><head><meta charset="windows-1252"><title>Caf\xe9 rules</title><style>p{color:red}</style>'
        "<script>alert('x')</script></head><body><h1>Rules</h1><p>Caf\xe9 opens at nine.</p>"
        "<p>Cl-\nosed on Sunday.</p></body></html>"
    ).encode("cp1252")
    parsed = parse(html)
    assert parsed.format == "html" and parsed.title == "Caf\u00e9 rules"
    assert "Caf\u00e9 opens at nine." in parsed.text
    assert "alert" not in parsed.text and "color" not in parsed.text


@pytest.mark.parametrize(
    ("data", "fmt"),
    [
        (b"%PDF-1.7\n...", "pdf"),
        (b"  \n%PDF-1.4\n...", "pdf"),
        (b"<!DOCTYPE html><html><body>x</body></html>", "html"),
        (b"<?xml version='1.0'?>\n<html xmlns='http://www.w3.org/1999/xhtml'><body>x</body></html>", "html"),
        (b"# Title\n\ntext\n\n## Part\n\nmore", "md"),
        (b"# A comment line\nprint('not markdown')", "txt"),
        # Markdown recognised by its content, wherever and however its headings are written
        (b"# The Excerpt\n\nA paragraph of prose.\n\nCHAPTER I\n\nMore prose.", "md"),
        (b"  # Title\n\ntext\n\n  ## Part\n\nmore", "md"),
        (b"Title\n=====\n\ntext\n\nPart\n----\n\nmore", "md"),
        (b"A paragraph of prose that goes on.\n\n" * 2000 + b"# Chapter 1\n\ntext\n\n# Chapter 2\n\nmore", "md"),
        (b"## Notes\n- one\n- two", "md"),
        (b"Meeting at #3 Main Street.\n\nBring the #42 form.", "txt"),
        (b"Chapter 1\n\nIt was late.\n\n* * *\n\nChapter 2\n\nEnd.", "txt"),
        (b"MZ is a company name, not an executable.", "txt"),
        (b"Plain words.", "txt"),
    ],
)
def test_format_is_decided_by_content(data, fmt):
    assert detect_format(data) == fmt


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"MZ\x90\x00\x03\x00\x00\x00", "a Windows executable"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00", "a Linux executable"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "a PNG image"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\x00\x00", "legacy Office file"),
        (b"{\\rtf1\\ansi hello}", "an RTF document"),
        (bytes(range(256)) * 4, "a binary file"),
        (b"%PDF-1.7\n garbage", "damaged"),
        (b"   \n\t ", "no text"),
        (b"PK\x03\x04 not really a zip", "damaged ZIP"),
    ],
)
def test_unreadable_files_get_a_clear_error(data, message):
    with pytest.raises(ParseError, match=message):
        parse(data)


def _zip(entries: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, content in entries.items():
            z.writestr(name, content)
    return buf.getvalue()


def test_zip_containers_are_told_apart_by_their_manifest():
    assert detect_format(docgen.to_docx(docgen.small_book())) == "docx"
    assert detect_format(docgen.to_epub(docgen.small_book())) == "epub"
    sheet = _zip(
        {
            "[Content_Types].xml": b'<Types><Override ContentType="application/vnd.openxmlformats-'
            b'officedocument.spreadsheetml.sheet.main+xml"/></Types>'
        }
    )
    with pytest.raises(ParseError, match="a spreadsheet"):
        detect_format(sheet)
    with pytest.raises(ParseError, match="OpenDocument"):
        detect_format(_zip({"mimetype": b"application/vnd.oasis.opendocument.text"}))
    with pytest.raises(ParseError, match="a ZIP archive"):
        detect_format(_zip({"notes.txt": b"hello"}))


def test_zip_guards():
    limits = ZipLimits(max_entries=50, max_total_bytes=8 * 2**20, max_ratio=100, ratio_floor_bytes=2**20)
    many = docgen.to_epub(docgen.small_book(), extra_entries=100)
    with pytest.raises(ParseError, match="entries, more than the 50"):
        detect_format(many, limits)
    bomb = _zip(
        {"[Content_Types].xml": b"wordprocessingml.document.main+xml", "word/document.xml": b"\0" * (4 * 2**20)}
    )
    with pytest.raises(ParseError, match="expands .* times"):
        detect_format(bomb, limits)
    big = _zip({"mimetype": b"application/epub+zip", "a": b"\0" * (9 * 2**20)}, zipfile.ZIP_STORED)
    with pytest.raises(ParseError, match="unpack to 9 MiB"):
        detect_format(big, limits)


def test_normalise_joins_hyphens_and_cleans_characters():
    assert normalise("exam-\nple text") == "example text"
    assert normalise("Anglo-\nSaxon") == "Anglo-\nSaxon"  # a capital after the break: a real hyphen
    assert normalise("co\u00ad\noperate and re\u00adenter") == "cooperate and reenter"
    assert normalise("\ufb01ne \ufb02ow\u00a0and\u2003space\ttab") == "fine flow and space tab"
    assert normalise("cafe\u0301") == "caf\u00e9"
    assert normalise("  a  \r\n\r\n\r\n\r\n  b \x00\x07c  ") == "a\n\nb c"
    assert normalise("1990-\n1995") == "1990-\n1995"  # digits are not a hyphenated word


def test_text_builder_page_map_survives_empty_pages():
    b = TextBuilder()
    for label, text in [("1", "one"), ("2", ""), ("3", "  three  "), ("4", "")]:
        b.new_page(label)
        b.add(text)
    text, starts, labels = b.result()
    assert text == "one\n\nthree" and labels == ["1", "2", "3", "4"]
    assert starts == [0, 5, 5, len(text)]
    assert page_of(starts, text.index("three")) == 3  # the empty page 2 owns no text


def test_decode_text_prefers_utf8_then_cp1252():
    assert decode_text("na\u00efve".encode()) == "na\u00efve"
    assert decode_text("na\u00efve \u2014 dash".encode("cp1252")) == "na\u00efve \u2014 dash"


def test_client_file_names_are_only_shown_never_trusted():
    from app.services.documents import clean_title

    assert clean_title("../../../../etc/passwd") == "passwd"
    assert clean_title("C:\\Users\\me\\contract.docx") == "contract.docx"
    assert clean_title("evil\x00name\u202e.txt") == "evilname.txt"
    assert clean_title(None) == clean_title("") == clean_title("../") == "untitled"
    assert len(clean_title("a" * (10 * 2**20) + ".pdf")) == 300
