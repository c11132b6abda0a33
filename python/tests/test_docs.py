"""The README and the book (docs/src, mdBook): no dead link, no page left out of the book, code
blocks that run as written.

- Every relative link and image in README.md and docs/src/**/*.md names a file or directory that
  exists, and its `#anchor`, if any, a heading of that page (ids as mdBook 0.5 makes them:
  `mdbook-html`'s `id_from_content`, with `-1`, `-2` for repeats; GitHub's for the README agree
  on these headings).
- SUMMARY.md names every page of docs/src and only pages that exist.
- Every ```toml block parses (but one abridged by a line `...`); every `hostsim ...` line of a ```sh block is accepted by this build's
  command line (`--help` appended: clap reads the arguments before it, so an unknown flag or a
  value out of its range fails), and every `python -m hostsim.live ...` line by its parser; a
  line with a placeholder (`[...]`, `<...>`, `…`) is skipped.
- The README stays a door: at most 300 lines.
- With mdBook on the PATH (scripts/test.sh installs it), the book builds.
"""

import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from hostsim.live import __main__ as live_main

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "docs" / "src"
PAGES = sorted([ROOT / "README.md", *BOOK.rglob("*.md")])
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def without_code(text: str) -> str:
    """The page with its fenced blocks and code spans blanked (a link inside code is not a link)."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return re.sub(r"`[^`\n]*`", "``", text)


def anchors(page: Path) -> set[str]:
    """The ids mdBook gives the page's headings."""
    used: set[str] = set()
    for m in HEADING.finditer(FENCE.sub("", page.read_text())):
        content = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2)).replace("`", "").replace("**", "")
        base = "".join(
            ch if (ch.isalnum() or ch in "_-") else "-" if ch.isspace() else "" for ch in content.strip().lower()
        )
        i, ident = 0, base
        while ident in used:
            i += 1
            ident = f"{base}-{i}"
        used.add(ident)
    return used


def links(page: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(without_code(page.read_text()))]


def test_every_relative_link_and_anchor_resolves():
    dead = []
    for page in PAGES:
        for target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                dead.append(f"{page.relative_to(ROOT)}: {target} (no {path})")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                dead.append(f"{page.relative_to(ROOT)}: {target} (no heading #{anchor} in {path or 'this page'})")
    assert not dead, "dead links:\n" + "\n".join(dead)


def test_the_checker_sees_a_dead_link_and_a_dead_anchor(tmp_path):
    (tmp_path / "a.md").write_text(
        "# A page\n\n## Its part\n\n[ok](#its-part) [bad](#nosuch) [gone](b.md)\n`[code](x.md)`\n"
    )
    page = tmp_path / "a.md"
    assert links(page) == ["#its-part", "#nosuch", "b.md"]
    assert anchors(page) == {"a-page", "its-part"}


def test_the_summary_names_every_page_of_the_book():
    summary = BOOK / "SUMMARY.md"
    named = {(BOOK / t).resolve() for t in links(summary)}
    pages = {p.resolve() for p in BOOK.rglob("*.md") if p != summary}
    assert not named - pages, f"SUMMARY.md names missing pages: {sorted(map(str, named - pages))}"
    assert not pages - named, f"pages left out of SUMMARY.md: {sorted(map(str, pages - named))}"


def blocks(kind: str):
    for page in PAGES:
        for m in FENCE.finditer(page.read_text()):
            if m.group(1) == kind:
                yield page, m.group(2)


def test_toml_blocks_parse():
    n = 0
    for page, body in blocks("toml"):
        if any(ln.strip() in ("...", "…") for ln in body.splitlines()):
            continue  # an abridged example says so with a line of its own
        try:
            tomllib.loads(body)
        except tomllib.TOMLDecodeError as e:
            pytest.fail(f"{page.relative_to(ROOT)}: a toml block does not parse: {e}\n{body}")
        n += 1
    assert n >= 2, "the scenario walk-through and the figure example"


def command_lines():
    """(page, words) for every shell line of the pages that runs hostsim or its live tools."""
    for page, body in blocks("sh"):
        for line in body.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if not line or line.startswith("#") or re.search(r"\[|<|…|\.\.\.|\|", line):
                continue
            words = shlex.split(line, comments=True)
            if words and words[0] == "sudo":
                words = words[1:]
            yield page, line, words


def test_hostsim_commands_in_the_pages_are_accepted(hostsim_bin):
    checked = 0
    for page, line, words in command_lines():
        if words and Path(words[0]).name == "hostsim":
            r = subprocess.run([str(hostsim_bin), *words[1:], "--help"], cwd=ROOT, capture_output=True, text=True)
            assert r.returncode == 0, f"{page.relative_to(ROOT)}: `{line}` is refused: {r.stderr}"
            checked += 1
        elif words[:3] in (["python", "-m", "hostsim.live"], [".venv/bin/python", "-m", "hostsim.live"]):
            try:
                live_main.parser().parse_args(words[3:])
            except SystemExit:
                pytest.fail(f"{page.relative_to(ROOT)}: `{line}` is refused by python -m hostsim.live")
            checked += 1
    assert checked >= 20, f"only {checked} commands found in the pages"


def test_the_readme_stays_a_door():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= 300, f"README.md has {n} lines: move detail into the book (docs/src)"


@pytest.mark.skipif(shutil.which("mdbook") is None, reason="mdBook not installed (scripts/test.sh installs it)")
def test_the_book_builds(tmp_path):
    r = subprocess.run(["mdbook", "build", str(ROOT / "docs"), "-d", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "live" / "index.html").exists() and (tmp_path / "extending.html").exists()
