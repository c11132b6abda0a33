"""The report's fonts travel with it: the characters the page uses are cut out of the fonts and
embedded in the page as WOFF data URLs (fontTools' subsetter; a few tens of KB instead of
megabytes), so that it renders the same on any machine.

- Latin text, the page's and the figures' (inline SVG whose text is kept as text): DejaVu Sans,
  regular and bold, the font matplotlib lays the figures' text out in (it ships with
  matplotlib), embedded under that family name, so that a label measured to fit is drawn in the
  font it was measured in.
- Japanese (the papers' quotes): a CJK font found on the machine that builds the report.

The font: IPAex Gothic (Debian's `fonts-ipaexfont-gothic`, which scripts/deps.sh installs for
`scripts/reproduce.sh` and `scripts/test.sh`), else Noto Sans CJK, else whatever fontconfig
offers for Japanese. Without one the report is still written, without the embedded font (a reader
without a CJK font of their own then sees boxes), and the builder says so.
"""

from __future__ import annotations

import base64
import io
import shutil
import subprocess
from pathlib import Path

FAMILY = "hostsim-cjk"
CANDIDATES = [
    "/usr/share/fonts/opentype/ipaexfont-gothic/ipaexg.ttf",
    "/usr/share/fonts/truetype/ipaexfont-gothic/ipaexg.ttf",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
]


def is_cjk(ch: str) -> bool:
    """Characters a Latin font lacks that the papers' quotes use: CJK punctuation, kana, kanji,
    full-width forms (U+2E80 on)."""
    return ord(ch) >= 0x2E80


def find_font() -> Path | None:
    for c in CANDIDATES:
        if Path(c).exists():
            return Path(c)
    if shutil.which("fc-match"):
        r = subprocess.run(["fc-match", "-f", "%{file}", ":lang=ja"], capture_output=True, text=True)
        p = Path(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip() else None
        if p and p.exists() and p.suffix.lower() in (".ttf", ".otf", ".ttc"):
            return p
    return None


def subset_woff(font: Path, chars: str) -> bytes:
    """The glyphs of `chars` from `font`, as a WOFF file (deterministic: equal input, equal bytes)."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    opts = subset.Options()
    opts.flavor = "woff"
    opts.name_IDs = ["*"]  # keep the font's name and licence records
    # A collection (.ttc) holds several fonts: the first is the Japanese one in Noto's.
    f = TTFont(str(font), fontNumber=0 if font.suffix.lower() == ".ttc" else -1, lazy=True)
    s = subset.Subsetter(opts)
    s.populate(text=chars)
    s.subset(f)
    buf = io.BytesIO()
    subset.save_font(f, buf, opts)
    return buf.getvalue()


LATIN = "DejaVu Sans"


def latin_fonts() -> list[tuple[int, Path]]:
    """(weight, file) of matplotlib's DejaVu Sans, regular and bold."""
    from matplotlib import font_manager

    out = []
    for weight in (400, 700):
        p = font_manager.findfont(font_manager.FontProperties(family=LATIN, weight=weight), fallback_to_default=False)
        out.append((weight, Path(p)))
    return out


def _face(family: str, font: Path, chars: str, weight: int = 400, ranges: bool = False) -> str:
    data = base64.b64encode(subset_woff(font, chars)).decode("ascii")
    rng = ("unicode-range: " + ",".join(f"U+{ord(c):04X}" for c in chars) + "; ") if ranges else ""
    return (
        f"@font-face {{ font-family: '{family}'; font-weight: {weight}; "
        f"src: url(data:font/woff;base64,{data}) format('woff'); {rng}}}\n"
    )


def font_face_css(text: str) -> tuple[str, str | None]:
    """The @font-face rules embedding the characters of `text`: the Latin ones in DejaVu Sans, the
    CJK ones in the CJK font (if any), and the CJK font's file name (None if it has none or none
    was found)."""
    latin = "".join(sorted({c for c in text if not is_cjk(c) and c.isprintable()} | {" "}))
    css = "".join(_face(LATIN, f, latin, w) for w, f in latin_fonts())
    chars = "".join(sorted({c for c in text if is_cjk(c)}))
    if not chars:
        return css, None
    font = find_font()
    if font is None:
        return css, None
    return css + _face(FAMILY, font, chars, ranges=True), font.name
