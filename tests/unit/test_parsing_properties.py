"""Property and fuzz tests for the parsers (hypothesis). Example counts are kept small enough for
CI's two cores; raise them locally with HYPOTHESIS_PROFILE=fuzz."""

from __future__ import annotations

import io
import os
import zipfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pypdf import PdfReader, PdfWriter

from app.documents.base import page_of
from app.documents.normalise import TextBuilder, normalise
from app.documents.parsing import ParseError, parse, parse_txt
from tests import docgen

# "ci" is derandomised so the suite is repeatable; "fuzz" explores new inputs on every run.
settings.register_profile(
    "ci", max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("fuzz", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
#: for the tests that run a real parser per example (tens of milliseconds each)
SLOW_EXAMPLES = max(20, settings.default.max_examples // 3)

# Characters that exercise every rule of normalise(): line ends of all kinds, hyphens, soft
# hyphens, ligatures, exotic spaces, controls, combining accents, zero-width characters.
TRICKY = (
    "-\u2010\u00ad\n\r\t \u00a0\u2000\u2003\u3000\u2028\u2029\x0b\x0c\x85\x00\x07\x1f\x7f\x9f\u200b\ufeff"
    "\ufb01\ufb02\u0301\u0308e\u00e9aAzZ\u00df\u03b1\u0391\u1100\u1161\u11a8.,1"
)
tricky_text = st.text(alphabet=st.sampled_from(list(TRICKY)) | st.characters(codec="utf-8"), max_size=200)
# Only letters, hyphens and whitespace: what hyphen joining may touch, and it must keep every letter.
letters_text = st.text(alphabet=st.sampled_from(list("abcXYZ\u00e9\u00df\u03b1-\u2010 \n\t")), max_size=200)


@given(tricky_text)
def test_normalise_is_idempotent(text):
    once = normalise(text)
    assert normalise(once) == once


@given(tricky_text)
def test_normalise_leaves_no_control_characters_or_runs_of_space(text):
    out = normalise(text)
    assert "\r" not in out and "  " not in out and "\n\n\n" not in out and "\t" not in out
    assert all(ch == "\n" or ord(ch) >= 0x20 for ch in out)
    assert out == out.strip()


@given(letters_text)
def test_hyphen_joining_never_drops_a_letter(text):
    assert [c for c in normalise(text) if c.isalpha()] == [c for c in text if c.isalpha()]


@given(st.lists(st.text(alphabet="ab -\n", max_size=30), max_size=20))
def test_page_map_points_at_each_pages_text(pages):
    b = TextBuilder()
    for i, page in enumerate(pages):
        b.new_page(str(i + 1))
        b.add(page)
    text, starts, labels = b.result()
    assert starts == sorted(starts) and starts[0] == 0 and all(0 <= s <= len(text) for s in starts)
    assert len(labels) == len(starts)
    for i, page in enumerate(pages):
        block = normalise(page)
        if block:
            assert text[starts[i] : starts[i] + len(block)] == block
            assert page_of(starts, starts[i]) == max(j + 1 for j, s in enumerate(starts) if s == starts[i])


@given(
    st.lists(st.integers(0, 10_000), min_size=1, max_size=50).map(sorted),
    st.integers(-5, 10_005),
    st.integers(-5, 10_005),
)
def test_page_of_is_monotone_and_in_range(starts, a, b):
    starts[0] = 0
    lo, hi = min(a, b), max(a, b)
    assert 1 <= page_of(starts, lo) <= page_of(starts, hi) <= len(starts)


@given(st.binary(max_size=3000))
def test_any_bytes_parse_or_fail_with_a_parse_error(data):
    try:
        parsed = parse(data)
    except ParseError as exc:
        assert str(exc)
        return
    assert parsed.text and parsed.text == parsed.text.strip()
    assert parsed.page_starts[0] == 0 and parsed.page_starts == sorted(parsed.page_starts)


@given(tricky_text.map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_any_text_parses_or_fails_with_a_parse_error(data):
    try:
        parsed = parse_txt(data)
    except ParseError:
        return
    assert normalise(parsed.text) == parsed.text


def _one_page_pdf() -> bytes:
    w = PdfWriter()
    w.add_page(PdfReader(docgen.CONTRACTS / "pdf" / "cuad-000.pdf").pages[0])
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


SAMPLES = {fmt: docgen.convert(docgen.small_book(), fmt) for fmt in ("docx", "epub", "html", "md")}
SAMPLES["pdf"] = _one_page_pdf()


@settings(max_examples=SLOW_EXAMPLES)
@given(st.binary(min_size=1, max_size=400), st.sampled_from(sorted(SAMPLES)), st.integers(0, 1 << 20), st.booleans())
def test_damaged_documents_fail_only_with_a_parse_error(noise, fmt, where, truncate):
    """A valid small document with a stretch overwritten by random bytes, or cut short there."""
    data = bytearray(SAMPLES[fmt])
    at = where % len(data)
    if truncate:
        del data[at:]
    else:
        data[at : at + len(noise)] = noise
    try:
        parse(bytes(data))
    except ParseError as exc:
        assert str(exc)


ZIP_NAMES = [
    "mimetype",
    "[Content_Types].xml",
    "META-INF/container.xml",
    "OEBPS/content.opf",
    "word/document.xml",
    "word/styles.xml",
    "_rels/.rels",
    "OEBPS/c1.xhtml",
]
ZIP_CONTENT = [
    b"application/epub+zip",
    b"<Types><Override ContentType='application/vnd.openxmlformats-officedocument."
    b"wordprocessingml.document.main+xml'/></Types>",
    b"<?xml version='1.0'?><a><b>text</b></a>",
    b"",
]


@settings(max_examples=SLOW_EXAMPLES)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(ZIP_NAMES) | st.text(min_size=1, max_size=20).map(lambda n: n.replace("\x00", "_")),
            st.sampled_from(ZIP_CONTENT) | st.binary(max_size=200),
        ),
        max_size=8,
        unique_by=lambda e: e[0],
    )
)
def test_arbitrary_zip_archives_fail_only_with_a_parse_error(entries):
    """ZIPs with DOCX/EPUB-looking manifests and junk parts reach the real parsers."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, content in entries:
            z.writestr(name, content)
    try:
        parse(buf.getvalue())
    except ParseError as exc:
        assert str(exc)
