"""A PDF page as a PNG image, for showing a provenance passage beside the page it is printed on.

PDFium (pypdfium2) renders the page. The PDF is untrusted and PDFium is C code, so the web app never
renders in its own process: `render_untrusted` runs this module as a child process
(`python -m app.documents.pages SRC PAGE SCALE DEST`) that caps its own memory, CPU time and the size
of what it writes before it opens the file, and is killed after `timeout_s`. A page that cannot be
rendered is a PageRenderError with a message to show; the caller carries on.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

#: points (1/72 inch) to pixels: 1.5 is 108 dpi, a US-letter page 918 × 1188 px (~100–250 KB as PNG)
SCALE = 1.5
_ROOT = Path(__file__).resolve().parents[2]


class PageRenderError(ValueError):
    """The page could not be rendered; the message says why."""


def render_png(src: Path, page: int, scale: float = SCALE) -> bytes:
    """Page `page` (1-based) of the PDF at `src` as PNG bytes, in this process (trusted input, the child,
    benchmarks)."""
    import io

    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(src))
    try:
        if not 1 <= page <= len(pdf):
            raise PageRenderError(f"the PDF has no page {page}")
        p = pdf[page - 1]
        try:
            image = p.render(scale=scale).to_pil()
        finally:
            p.close()
    finally:
        pdf.close()
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False, compress_level=6)
    return out.getvalue()


def render_untrusted(src: Path, page: int, dest: Path, scale: float = SCALE, timeout_s: float = 30.0,
                     memory_mb: int = 1024, cpu_s: int = 20) -> None:
    """Render page `page` of the PDF at `src` into the PNG file `dest` in a limited child process; the
    file appears whole (written aside, then renamed) or not at all."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".render-", suffix=".png")
    os.close(fd)
    try:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "app.documents.pages", str(src), str(page), str(scale), tmp,
                 str(memory_mb), str(cpu_s)],
                cwd=_ROOT, capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL, check=False,
            )  # fmt: skip
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
        data = render_png(Path(src), int(page), float(scale))
    except PageRenderError as exc:
        print(exc, file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - the parent turns this into a message
        print(f"{type(exc).__name__}: {exc}"[:300], file=sys.stderr)
        return 1
    Path(dest).write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
