"""Every relative link and #anchor in README.md and docs/*.md leads somewhere.

A reader follows these links from GitHub's rendering, so anchors are computed the way GitHub
computes them from headings (lower case, punctuation dropped, spaces to hyphens, a repeated
heading numbered -1, -2, ...)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: `[text](target)` outside code; the target ends at the first space or closing parenthesis.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, line))
    return lines


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a Markdown file offers: its headings' slugs and explicit `id`/`name`s."""
    text = path.read_text(encoding="utf-8")
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in _prose_lines(text):
        match = HEADING.match(line)
        if match:
            slug = _slug(match.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    found.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every relative link in a Markdown file."""
    result = []
    for number, line in _prose_lines(path.read_text(encoding="utf-8")):
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            result.append((number, target))
    return result


def broken(path: Path) -> list[str]:
    """`file:line: target` for each link in `path` whose file or anchor is missing."""
    problems = []
    for number, target in links(path):
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / unquote(file_part)).resolve() if file_part else path
        where = f"{path.relative_to(ROOT)}:{number}: {target}"
        if not dest.exists():
            problems.append(f"{where} (no such file)")
        elif anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest):
            problems.append(f"{where} (no such anchor)")
    return problems


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert broken(path) == []


def test_the_checker_sees_a_broken_file_and_anchor(tmp_path: Path) -> None:
    """The check itself can fail: a missing file and a missing anchor are both reported,
    while a heading's anchor (with punctuation and code) and a repeated heading resolve."""
    global ROOT
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# The `--json` option, and more\n\n## Notes\n\n## Notes\n\n"
        "[a](#the---json-option-and-more) [b](#notes-1) [c](missing.md) [d](#nowhere)\n"
        "```\n[e](ignored-in-code.md)\n```\n",
        encoding="utf-8",
    )
    saved, ROOT = ROOT, tmp_path
    try:
        assert broken(doc) == [
            "doc.md:7: missing.md (no such file)",
            "doc.md:7: #nowhere (no such anchor)",
        ]
    finally:
        ROOT = saved
