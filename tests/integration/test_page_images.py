"""A PDF page as an image (GET /api/documents/{id}/pages/{n}.png): the PNG of the document's own stored
PDF at the size the provenance view shows, cached on disk after the first request; 404 for a document
that is not a PDF, for pages it does not have, and for anything but a page number."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from fastapi.testclient import TestClient

from app.documents.pages import SCALE, PageRenderError, render_png, render_untrusted
from app.migrate import upgrade
from app.services import documents
from app.settings import Settings
from app.web import create_app
from training.tasks import DATA_DIR

pytestmark = pytest.mark.integration

CONTRACT = DATA_DIR / "contracts" / "pdf" / "cuad-000.pdf"  # the shared data, wherever the clone is
if not CONTRACT.is_file():
    CONTRACT = Path(__file__).resolve().parents[2] / "tests" / "data" / "cuad-000.pdf"


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def settings(tmp_path) -> Settings:
    s = Settings(data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'p.db'}")
    upgrade(s.resolved_database_url)
    return s


def test_the_page_image_is_the_right_page_at_the_served_size_and_cached(settings):
    data = CONTRACT.read_bytes()
    pdf = pdfium.PdfDocument(io.BytesIO(data))
    n = len(pdf)
    sizes = [pdf[i].get_size() for i in (0, n - 1)]
    doc, _ = documents.add_document(settings, "contract.pdf", data)
    txt, _ = documents.add_document(settings, "notes.txt", b"Just some notes.\n\nA second paragraph.")
    assert doc.format == "pdf" and doc.pages == n >= 2
    with TestClient(create_app(settings)) as client:
        for page, (w, h) in ((1, sizes[0]), (n, sizes[1])):
            got = client.get(f"/api/documents/{doc.id}/pages/{page}.png")
            assert got.status_code == 200, got.text
            assert got.headers["content-type"] == "image/png"
            width, height = _png_size(got.content)
            assert abs(width - w * SCALE) < 1 and abs(height - h * SCALE) < 1  # PDFium rounds up
            assert got.content == render_png(CONTRACT, page)  # that page, not another
        cached = settings.data_dir / "pages" / doc_sha(settings, doc.id) / f"1@{SCALE}.png"
        assert cached.is_file()
        # The second request serves the cached file: no render (a marked cache file comes back as is).
        cached.write_bytes(cached.read_bytes() + b"cached")
        again = client.get(f"/api/documents/{doc.id}/pages/1.png")
        assert again.status_code == 200 and again.content.endswith(b"cached")

        for url in (
            f"/api/documents/{doc.id}/pages/0.png",
            f"/api/documents/{doc.id}/pages/{n + 1}.png",
            f"/api/documents/{txt.id}/pages/1.png",
            "/api/documents/999999/pages/1.png",
        ):
            assert client.get(url).status_code == 404, url
        # Only a page number: no path, no other name reaches the file system.
        for url in (
            f"/api/documents/{doc.id}/pages/..%2F..%2Flongread.db.png",
            f"/api/documents/{doc.id}/pages/1.jpg",
            f"/api/documents/{doc.id}/pages/x.png",
        ):
            assert client.get(url).status_code in (404, 422), url
        assert "/api/documents/{document_id}/pages/{page}.png" in client.get("/openapi.json").json()["paths"]


def doc_sha(settings: Settings, document_id: int) -> str:
    from app.db import session_scope
    from app.models import Document

    with session_scope(settings.resolved_database_url) as s:
        return s.get(Document, document_id).sha256


def test_a_page_that_cannot_be_rendered_is_a_clear_error(tmp_path):
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\nnot a PDF body\n%%EOF\n")
    with pytest.raises(PageRenderError, match="could not be rendered"):
        render_untrusted(broken, 1, tmp_path / "out" / "1.png")
    assert not list((tmp_path / "out").iterdir())  # nothing half-written is left to be served


def _yellow_share(image, box: tuple[float, float, float, float]) -> float:
    """The share of the pixels inside `box` (pixels: left, top, right, bottom) that are the highlight's
    yellow, over paper or ink."""
    left, top, right, bottom = (round(v) for v in box)
    pixels = [image.getpixel((x, y)) for x in range(left, right) for y in range(top, bottom)]
    return sum(r > 150 and g > 110 and r - b > 70 for r, g, b in pixels) / len(pixels)


def test_a_passage_is_highlighted_on_its_page_where_pdfium_prints_it(settings):
    from PIL import Image

    from inference.sentences import sentences

    data = CONTRACT.read_bytes()
    doc, _ = documents.add_document(settings, "contract.pdf", data)
    page_map = documents.show_document(settings, doc.id).page_map
    text = doc_text(settings, doc.id)
    start2, start3 = page_map[1].start, page_map[2].start
    # a sentence of page 2 long enough to run over more than one line, and another further down the page
    spans = [(start2 + a, start2 + b) for a, b in sentences(text[start2:start3]) if b - a > 150]
    (a, b), (other_a, other_b) = spans[0], spans[-1]
    pdf = pdfium.PdfDocument(io.BytesIO(data))
    textpage, height = pdf[1].get_textpage(), pdf[1].get_height()

    def pixel_rects(passage_text: str) -> list[tuple[float, float, float, float]]:
        """PDFium's own rectangles for the first words of a passage, found by PDFium's search."""
        found = textpage.search(" ".join(passage_text.split()[1:5])).get_next()
        assert found, passage_text[:80]
        index, count = found
        rects = [textpage.get_rect(i) for i in range(textpage.count_rects(index, count))]
        return [
            (x0 * SCALE + 1, (height - y1) * SCALE + 1, x1 * SCALE - 1, (height - y0) * SCALE - 1)
            for x0, y0, x1, y1 in rects
        ]

    with TestClient(create_app(settings)) as client:
        marked = client.get(f"/api/documents/{doc.id}/pages/2.png", params={"start": a, "end": b})
        plain = client.get(f"/api/documents/{doc.id}/pages/2.png")
        assert marked.status_code == plain.status_code == 200, marked.text
        assert marked.content == render_png(CONTRACT, 2, highlight=text[a:b]) != plain.content
        marked_img = Image.open(io.BytesIO(marked.content)).convert("RGB")
        plain_img = Image.open(io.BytesIO(plain.content)).convert("RGB")
        for box in pixel_rects(text[a:b]):
            assert _yellow_share(marked_img, box) > 0.6, box  # the passage is marked where it is printed
            assert _yellow_share(plain_img, box) < 0.01, box
        for box in pixel_rects(text[other_a:other_b]):
            assert _yellow_share(marked_img, box) < 0.01, box  # and nowhere else
        # characters that are not on that page: 404; the highlighted page is cached beside the plain one
        assert client.get(f"/api/documents/{doc.id}/pages/1.png", params={"start": a, "end": b}).status_code == 404
        assert client.get(f"/api/documents/{doc.id}/pages/2.png", params={"start": -1, "end": b}).status_code == 422
    cached = {p.name for p in (settings.data_dir / "pages" / doc_sha(settings, doc.id)).iterdir()}
    assert {f"2@{SCALE}.png", f"2@{SCALE}-{a}-{b}.png"} <= cached


def doc_text(settings: Settings, document_id: int) -> str:
    from app.db import session_scope
    from app.models import Document

    with session_scope(settings.resolved_database_url) as s:
        return s.get(Document, document_id).text


def _labelled_pdf() -> bytes:
    """The contract's first three pages, printed as "i", "80" and "81" (a /PageLabels tree, as pypdf writes it)."""
    from pypdf import PdfReader, PdfWriter

    w = PdfWriter()
    for page in PdfReader(CONTRACT).pages[:3]:
        w.add_page(page)
    w.set_page_label(0, 0, "/r")
    w.set_page_label(1, 2, "/D", start=80)
    out = io.BytesIO()
    w.write(out)
    return out.getvalue()


def _read_tab(ui, kind: type):
    """The Read tab's handlers of `kind` (ReadEvents, ReadingDetails), as the page calls them."""
    return next(f.fn.__self__ for f in ui.fns.values() if isinstance(getattr(f.fn, "__self__", None), kind))


def test_a_pdf_with_page_labels_names_its_pages_as_they_are_printed(settings):
    """Provenance, the timeline and the memory's label name a page by the number printed on it (its page label),
    with its place in the file beside; the page image is still fetched by that place (issue 54)."""
    import gradio as gr

    from app.db import session_scope
    from app.models import Checkpoint, Reading, ReadingStatus
    from app.ui.gradio_app import build_ui
    from app.ui.read_events import ReadEvents
    from app.ui.reading_details import ReadingDetails

    doc, _ = documents.add_document(settings, "labelled.pdf", _labelled_pdf())
    shown = documents.show_document(settings, doc.id)
    assert [p.label for p in shown.page_map] == ["i", "80", "81"]
    with session_scope(settings.resolved_database_url) as s:
        text, starts = documents.document_text(settings, doc.id), shown.page_map
        third = text[starts[2].start :]
        fact = next(" ".join(x.split()) for x in third.split(". ") if len(x.split()) >= 12)
        r = Reading(
            document_id=doc.id,
            model="smollm2",
            chunk_tokens=512,
            memory_tokens=128,
            answer_tokens=32,
            template_set="memagent",
            question="What is excluded?",
            status=ReadingStatus.done,
            cursor=2,
            total_chunks=2,
            answer=fact,
        )
        s.add(r)
        s.flush()
        for k, (start, end) in enumerate(((starts[1].start, starts[2].start), (starts[2].start, len(text))), 1):
            s.add(
                Checkpoint(
                    reading_id=r.id,
                    step=k,
                    memory="Noted." if k == 1 else fact,
                    start_token=0,
                    end_token=1,
                    start_char=start,
                    end_char=end,
                    first_page=k + 1,
                    last_page=k + 1,
                    prompt_tokens=1,
                    completion_tokens=1,
                    seconds=1.0,
                )
            )
        s.flush()
        reading_id = r.id
    ui = build_ui(settings)
    details = _read_tab(ui, ReadingDetails)
    rows = details.load_provenance(reading_id)[details.panels.provenance.sources]
    assert [row[3] for row in rows] == ["page 81 (page 3 of the PDF)"] * len(rows), rows
    spans = details.load_provenance(reading_id)[details.panels.provenance.spans]
    passage, note, image = details.on_source(gr.SelectData(None, {"index": [0, 0], "value": ""}), reading_id, spans)
    assert "printed on page 81 (page 3 of the PDF, beside it, highlighted)." in note, note
    assert f"/api/documents/{doc.id}/pages/3.png?" in image["value"]  # the image: the page's place in the file
    step = details.show_step(reading_id, 1)[details.panels.timeline.info]
    assert "page 80 \\(page 2 of the PDF\\)" in step, step  # Markdown
    events = _read_tab(ui, ReadEvents)
    assert events.on_tick(reading_id)[events.tab.reading.memory]["label"] == (
        "Agent memory after chunk 2 (page 81 (page 3 of the PDF))"
    )
