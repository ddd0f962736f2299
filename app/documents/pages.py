"""A PDF page as a PNG image, for showing a provenance passage beside the page it is printed on, with the
passage highlighted where PDFium's text rectangles say it is printed.

PDFium (pypdfium2) renders the page. The PDF is untrusted and PDFium is C code, so the web app never
renders in its own process: `render_untrusted` runs this module as a child process
(`python -m app.documents.pages SRC PAGE SCALE DEST MEMORY_MB CPU_S`, the passage to highlight on stdin)
that caps its own memory, CPU time and the size of what it writes before it opens the file, and is killed
after `timeout_s`. A page that cannot be rendered is a PageRenderError with a message to show; the caller
carries on.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import unicodedata
from difflib import SequenceMatcher
from pathlib import Path

#: points (1/72 inch) to pixels: 1.5 is 108 dpi, a US-letter page 918 × 1188 px (~100–250 KB as PNG)
SCALE = 1.5
#: the highlight: a translucent yellow over the passage's lines (RGBA), a little wider than the glyphs (points)
HIGHLIGHT = (255, 214, 0, 110)
HIGHLIGHT_PAD = 1.5
#: with no exact match (the document's text comes from another extractor), the share of the passage's letters
#: that a run found on the page must hold for it to be highlighted
MIN_MATCH = 0.5
_ROOT = Path(__file__).resolve().parents[2]


class PageRenderError(ValueError):
    """The page could not be rendered; the message says why."""


def _letters(text: str) -> tuple[str, list[int]]:
    """`text` reduced to its lower-case letters and digits (ligatures spelled out), and for each of them the
    index of the character of `text` it came from: how two extractions of the same page are compared."""
    out, where = [], []
    for i, ch in enumerate(text):
        for c in unicodedata.normalize("NFKC", ch).lower():
            if c.isalnum():
                out.append(c)
                where.append(i)
    return "".join(out), where


def find_passage(page_text: str, passage: str) -> tuple[int, int] | None:
    """The [start, end) character range of `page_text` (PDFium's text of a page) that prints `passage` (the
    same words as the document's own text gives them, which may differ in spaces, line ends, hyphens and
    ligatures); None if the page does not hold it."""
    page, where = _letters(page_text)
    want, _ = _letters(passage)
    if not want or not page:
        return None
    at = page.find(want)
    if at >= 0:
        return where[at], where[at + len(want) - 1] + 1
    # Not verbatim: anchor on the longest run in common and lay the passage around it.
    m = SequenceMatcher(None, page, want, autojunk=False).find_longest_match(0, len(page), 0, len(want))
    if m.size < MIN_MATCH * len(want):
        return None
    a = max(0, m.a - m.b)
    b = min(len(page), m.a + len(want) - m.b)
    return where[a], where[b - 1] + 1


def passage_rects(textpage, passage: str) -> list[tuple[float, float, float, float]]:
    """PDFium's rectangles (left, bottom, right, top in PDF points) of the lines that print `passage` on the
    page; empty if the page does not hold it."""
    import pypdfium2.raw as raw

    n = textpage.count_chars()
    page_text = "".join(chr(raw.FPDFText_GetUnicode(textpage, i)) for i in range(n))  # index for index
    found = find_passage(page_text, passage)
    if found is None:
        return []
    start, end = found
    return [textpage.get_rect(i) for i in range(textpage.count_rects(start, end - start))]


def render_png(src: Path, page: int, scale: float = SCALE, highlight: str | None = None) -> bytes:
    """Page `page` (1-based) of the PDF at `src` as PNG bytes, in this process (trusted input, the child,
    benchmarks); with `highlight`, that passage is marked on the page where PDFium prints it."""
    import io

    import pypdfium2 as pdfium
    from PIL import Image, ImageDraw

    pdf = pdfium.PdfDocument(str(src))
    try:
        if not 1 <= page <= len(pdf):
            raise PageRenderError(f"the PDF has no page {page}")
        p = pdf[page - 1]
        try:
            image = p.render(scale=scale).to_pil()
            if highlight:
                textpage = p.get_textpage()
                try:
                    rects = passage_rects(textpage, highlight)
                finally:
                    textpage.close()
                top = p.get_height()
                layer = Image.new("RGBA", image.size, (0, 0, 0, 0))
                draw = ImageDraw.Draw(layer)
                for left, bottom, right, upper in rects:  # PDF points, origin bottom left; pixels top left
                    draw.rectangle(
                        [
                            (left - HIGHLIGHT_PAD) * scale,
                            (top - upper - HIGHLIGHT_PAD) * scale,
                            (right + HIGHLIGHT_PAD) * scale,
                            (top - bottom + HIGHLIGHT_PAD) * scale,
                        ],
                        fill=HIGHLIGHT,
                    )
                image = Image.alpha_composite(image.convert("RGBA"), layer).convert("RGB")
        finally:
            p.close()
    finally:
        pdf.close()
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False, compress_level=6)
    return out.getvalue()


def render_untrusted(
    src: Path,
    page: int,
    dest: Path,
    scale: float = SCALE,
    timeout_s: float = 30.0,
    memory_mb: int = 1024,
    cpu_s: int = 20,
    highlight: str | None = None,
) -> None:
    """Render page `page` of the PDF at `src` (with the passage `highlight` marked) into the PNG file `dest`
    in a limited child process; the file appears whole (written aside, then renamed) or not at all."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".render-", suffix=".png")
    os.close(fd)
    try:
        try:
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "app.documents.pages",
                    str(src),
                    str(page),
                    str(scale),
                    tmp,
                    str(memory_mb),
                    str(cpu_s),
                ],
                cwd=_ROOT,
                capture_output=True,
                timeout=timeout_s,
                input=(highlight or "").encode(),
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise PageRenderError(f"page {page} took more than {timeout_s:.0f} s to render") from None
        if done.returncode != 0 or os.path.getsize(tmp) == 0:
            why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            raise PageRenderError(f"page {page} could not be rendered ({why[0][:200]})")
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _main(argv: list[str]) -> int:
    src, page, scale, dest, memory_mb, cpu_s = argv
    mem = int(memory_mb) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_s), int(cpu_s)))
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024 * 1024,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        highlight = sys.stdin.buffer.read().decode("utf-8", "replace") or None
        data = render_png(Path(src), int(page), float(scale), highlight)
    except PageRenderError as exc:
        print(exc, file=sys.stderr)
        return 2
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}"[:300], file=sys.stderr)
        return 1
    Path(dest).write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
