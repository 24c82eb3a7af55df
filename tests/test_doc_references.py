"""Every reference to a document points inside the repository, at a file and section that exist.

Code comments, docstrings, manifests and docs cite the design notes as ``docs/design/<note>.md §<section>``; a
Markdown file may also link a sibling (``[x](loadaware.md) §6``).  A section is a numbered heading of the target
(``## 6. Filter``, ``### 6.2 Per-node thresholds``).  References to documents that live outside the repository
(the upstream spec notes ``specs/*.md`` or ``DESIGN.md``) are refused outright, and so is a bare ``§`` in code that
names no document: a clone must be able to read every reason the code gives.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_DIRS = {".git", ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache", "sim-out", "__pycache__", "node_modules"}
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".ini", ".json", ".sh"}
CODE_SUFFIXES = {".py", ".yaml", ".yml", ".toml", ".sh"}

OUTSIDE = re.compile(r"\bspecs/[\w-]+\.md|\bDESIGN\.md|\.\./shared/(?:specs|DESIGN)")
SECTION = r"§\s*[\w.]+"
# "§6.4 and §6.5", "§4–§6", "§1, §4", "§2.1 step 7, §5", "§3 B2, B4"
SECTIONS = re.compile(SECTION + r"(?:\s*(?:,|and|[-–/])\s*§?[\w.]+|\s+step\s+\d+)*")
REPO_DOC = re.compile(r"(?<![\w/.-])(docs/[\w/.-]+\.md)")
MD_LINK = re.compile(r"\]\(([\w./-]+\.md)(?:#[\w-]*)?\)")
MD_BARE = re.compile(r"(?<![\w/.-])([\w-]+\.md)(?=[ \t]*\n?[ \t]*§)")
HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)[.\s]", re.MULTILINE)


def _text_files() -> Iterator[Path]:
    """The repository's text files, except this test (whose examples are dangling on purpose)."""
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder) / name
            if path != Path(__file__).resolve() and (path.suffix in SUFFIXES or name == "Makefile"
                                                     or name.startswith("Dockerfile")):
                yield path


@cache
def _sections(doc: Path) -> frozenset[str]:
    return frozenset(HEADING.findall(doc.read_text(encoding="utf-8")))


def _section_numbers(expr: str) -> list[str]:
    """The section numbers an expression after a document name cites (both ends of a range)."""
    expr = re.sub(r"\s+step\s+\d+", "", expr)
    out = []
    for token in re.split(r"\s*(?:,|and|[-–/])\s*", expr):
        token = token.strip().lstrip("§").strip().rstrip(".")
        if token and re.fullmatch(r"\d+(?:\.\d+)*", token):
            out.append(token)
    return out


# between a document and its section: spaces, a line break, and a comment's leading "#" on the next line
GAP = re.compile(r"[ \t]*(?:\n[ \t]*#?[ \t]*)?")


def _sections_after(text: str, pos: int) -> re.Match[str] | None:
    gap = GAP.match(text, pos)
    return SECTIONS.match(text, gap.end() if gap else pos)


def _check(doc: Path, text: str, pos: int, where: str) -> list[str]:
    """The document exists, and so does every section cited right after ``pos``."""
    if not doc.is_file():
        return [f"{where}: {doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc} does not exist"]
    m = _sections_after(text, pos)
    if not m:
        return []
    missing = [n for n in _section_numbers(m.group(0)) if n not in _sections(doc)]
    return [f"{where}: {doc.relative_to(ROOT)} has no section §{n}" for n in missing]


def problems_in(text: str, name: str, suffix: str, folder: Path) -> list[str]:
    """Every dangling or outside reference in one file's text, as ``name:line: what``; ``folder`` resolves the
    relative links of a Markdown file.  A reference may wrap: the section can start the next line."""
    def where(pos: int) -> str:
        return f"{name}:{text.count(chr(10), 0, pos) + 1}"

    out = [f"{where(m.start())}: cites {m.group(0)}, which is not in the repository" for m in OUTSIDE.finditer(text)]
    covered: list[tuple[int, int]] = []
    for m in REPO_DOC.finditer(text):
        out += _check(ROOT / m.group(1), text, m.end(), where(m.start()))
        sections = _sections_after(text, m.end())
        covered.append((m.start(), sections.end() if sections else m.end()))
    if suffix == ".md":
        for m in MD_LINK.finditer(text):
            if not m.group(1).startswith("docs/"):
                out += _check((folder / m.group(1)).resolve(), text, m.end(), where(m.start()))
        for m in MD_BARE.finditer(text):
            out += _check((folder / m.group(1)).resolve(), text, m.end(), where(m.start()))
    elif suffix in CODE_SUFFIXES:
        out += [f"{where(m.start())}: '§' names no document (write the docs/... file it refers to)"
                for m in re.finditer("§", text) if not any(a <= m.start() < b for a, b in covered)]
    return out


def test_every_document_reference_resolves() -> None:
    problems = [p for path in sorted(_text_files())
                for p in problems_in(path.read_text(encoding="utf-8", errors="replace"),
                                     str(path.relative_to(ROOT)), path.suffix, path.parent)]
    assert not problems, "dangling document references:\n" + "\n".join(problems)


@pytest.mark.parametrize("line, expected", [
    ("see specs/koordinator.md §1.6", "not in the repository"),
    ('(DESIGN.md "Command line")', "not in the repository"),
    ("docs/design/nothing-here.md §1", "does not exist"),
    ("docs/design/loadaware.md §99", "no section §99"),
    ("docs/design/waterline.md §4–§42", "no section §42"),
    ("the order of crane §5.1", "names no document"),
])
def test_the_checker_catches(line: str, expected: str) -> None:
    found = problems_in(f"# {line}\n", "probe.py", ".py", ROOT)
    assert any(expected in p for p in found), found


def test_the_checker_catches_markdown_links() -> None:
    text = "See [x](loadaware.md) §99 and [y](missing.md), and waterline.md §77.\n"
    found = problems_in(text, "probe.md", ".md", ROOT / "docs" / "design")
    assert len(found) == 3, found


def test_a_reference_may_wrap_to_the_next_line() -> None:
    assert problems_in('"""the sum (docs/design/scheduler.md\n    §2.6), in float64"""\n', "probe.py", ".py", ROOT) == []
    assert problems_in("# see docs/design/scheduler.md\n# §99.1 for that\n", "probe.py", ".py", ROOT) != []


def test_the_checker_accepts_what_exists() -> None:
    text = ("# docs/design/waterline.md §6.4 and §6.5; docs/design/scheduler.md §2.1 step 7, §5\n"
            "# docs/design/loadaware.md §5-§8 and docs/design/differences.md §3 B2, B4\n")
    assert problems_in(text, "probe.py", ".py", ROOT) == []
