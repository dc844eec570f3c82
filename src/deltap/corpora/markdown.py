"""A folder of Markdown / Docusaurus pages -> chunks with retrieval metadata.

Every ``.md`` / ``.mdx`` file under the folder (recursively, in sorted path order) becomes one or more chunks
(:class:`~deltap.documents.Document`). Each chunk carries the metadata a RAG pipeline needs to cite its source:

``source_url``
    ``base_url`` + the page's route, computed with Docusaurus' rules (docs plugin, ``routeBasePath`` = ``/``):
    numeric prefixes such as ``01-`` / ``2_`` / ``3.`` are stripped from every folder and file name (``2021-05-01``
    style names are left alone); ``index``, ``README`` and a file named like its folder (``guides/guides.md``) map
    to the folder route; a front-matter ``id`` replaces the file name; a front-matter ``slug`` replaces the route
    (absolute when it starts with ``/``, otherwise relative to the folder).
``document_section``
    The top folder of the page, as written on disk (``module-01-ros2``). A page at the root of the folder is its
    own section, named by its unprefixed id (``intro``).
``heading``
    The nearest heading above the chunk's first line. Before the first heading it is the page title, which
    Docusaurus renders as the page's ``<h1>``; so it is never empty.
``heading_anchor``
    The heading's HTML id (``{#custom-id}`` when given, else a GitHub-style slug), for deep links.
``chunk_id``
    ``<relative path>#<chunk index>`` (``module-01-ros2/01-intro.md#0``), also the document id. Stable: the same
    files with the same settings give the same ids; readable, so a check suite can name expected chunks.
``chunk_text_preview``
    The chunk text with whitespace collapsed, cut to 200 characters.
``title`` / ``path`` / ``chunk_index``
    Page title (front-matter ``title``, else the first ``# H1``, else the unprefixed file name), path relative to
    the folder (POSIX), and the chunk's 0-based position in its page.

Parsing: YAML front matter between ``---`` lines; fenced code (```` ``` ```` / ``~~~``, any length) is opaque, so
``#`` lines in code are not headings; MDX ``import`` / ``export`` statements, ``{/* comments */}``, HTML comments and
JSX component tags (``<Tabs>``, ``<TabItem value="py">``, ``<DocCardList />``) are removed while the text between
tags is kept; admonition fences (``:::tip Title`` ... ``:::``) keep their title and body. ATX and setext headings
are recognised.

Chunking: a heading always starts a new chunk (a heading directly followed by another heading stays with it), so a
chunk never mixes two sections' text. Within a section, blocks (paragraphs, lists, whole code fences) are packed
greedily up to ``chunk_size``; a block larger than ``chunk_size`` is split (prose at whitespace, code at line ends,
each piece re-wrapped in its fence so it stays valid Markdown). Consecutive chunks of one section share up to
``chunk_overlap`` trailing units of prose. Sizes count characters (``unit="chars"``) or whitespace-separated tokens
(``unit="tokens"``). Files and folders whose name starts with ``_`` (Docusaurus partials) or ``.`` are skipped, as
are ``node_modules`` folders; pages with no body text yield no chunk. Both are logged (``deltap.corpora.markdown``
logger) with their count.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from urllib.parse import quote

from deltap._io import yaml_loads
from deltap.documents import Corpus, Document
from deltap.errors import DeltapError, FormatError

__all__ = ["build_markdown_corpus", "docusaurus_route", "parse_page", "strip_number_prefix"]

log = logging.getLogger(__name__)

PREVIEW_CHARS = 200
_EXTENSIONS = (".md", ".mdx")
_INDEX_NAMES = ("index", "readme")

# Docusaurus' DefaultNumberPrefixParser: "01-intro" -> "intro", but "2021-05-01-post" and "1.2.3" stay as they are.
_NUMBER_PREFIX = re.compile(r"^(?P<prefix>\d+)\s*[-_.]+\s*(?P<suffix>[^-_.\s].*)$")
_IGNORED_PREFIX = re.compile(r"^\d+[-_.]\d+")

_FENCE_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_ATX = re.compile(r"^ {0,3}(?P<hashes>#{1,6})(?:[ \t]+(?P<text>.*?))?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(?P<bar>=+|-+)[ \t]*$")
_CUSTOM_ID = re.compile(r"\s*\{#(?P<id>[^}\s]+)\}\s*$")
_MDX_ESM = re.compile(
    r"""^(import\s*[{*]|import\s+['"]|import\s+[\w$]+\s*(,|from\s)|export\s+(const|let|var|function|async|class|default|\{|\*))"""
)
_THEMATIC_BREAK = re.compile(r"^ {0,3}([-*_])( *\1){2,} *$")
_JSX_LINE = re.compile(r"^\s*(</?[A-Z][\w.]*(\s[^<>]*)?/?>\s*)+$")
_CODE_SPAN = re.compile(r"(`+[^`]*`+)")
_JSX_INLINE = re.compile(r"</?[A-Z][\w.]*(\s[^<>]*)?/?>")
_MDX_COMMENT = re.compile(r"\{/\*.*?\*/\}", re.S)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_ADMONITION = re.compile(r"^\s*:::\s*(?P<kind>[A-Za-z]*)\s*(?:\[(?P<title1>[^\]]*)\]|(?P<title2>.*))?$")


def strip_number_prefix(name: str) -> str:
    """Docusaurus' number-prefix rule: ``01-intro`` -> ``intro``; ``2021-05-01-post`` and ``1.2.3`` unchanged."""
    if _IGNORED_PREFIX.match(name):
        return name
    m = _NUMBER_PREFIX.match(name)
    return m.group("suffix") if m else name


def _slugify(text: str) -> str:
    """GitHub-style heading anchor (what Docusaurus' github-slugger produces for plain-ASCII headings)."""
    text = unicodedata.normalize("NFKC", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def docusaurus_route(rel_path: str | PurePosixPath, front_matter: dict[str, Any] | None = None) -> str:
    """The URL path Docusaurus gives a docs page (``routeBasePath: /``).

    Args:
        rel_path: Path of the file relative to the docs folder, e.g. ``module-01/02-nodes.md``.
        front_matter: Parsed front matter (``id`` and ``slug`` are used).

    Returns:
        The route, always starting with ``/`` and without a trailing slash (except the root ``/``).
    """
    fm = front_matter or {}
    rel = PurePosixPath(rel_path)
    dirs = [strip_number_prefix(p) for p in rel.parts[:-1]]
    dir_route = "/" + "/".join(dirs) if dirs else ""
    stem = strip_number_prefix(rel.name.rsplit(".", 1)[0])
    slug = fm.get("slug")
    if isinstance(slug, str) and slug.strip():
        slug = slug.strip()
        route = slug if slug.startswith("/") else f"{dir_route}/{slug}"
    else:
        doc_id = str(fm["id"]).strip() if fm.get("id") not in (None, "") else stem
        is_category_index = stem.lower() in _INDEX_NAMES or (bool(dirs) and stem.lower() == dirs[-1].lower())
        route = (dir_route or "/") if is_category_index else f"{dir_route}/{doc_id}"
    route = re.sub(r"/+", "/", route)
    if len(route) > 1:
        route = route.rstrip("/")
    return quote(route, safe="/-_.~!$&'()*+,;=:@%")


# ----------------------------------------------------------------------------------------------------------------
# Parsing a page into blocks


@dataclass
class _Block:
    """A unit the chunker packs: a heading line, a prose paragraph or a whole code fence."""

    kind: Literal["heading", "text", "code"]
    text: str
    heading: str = ""  # heading in force (for kind="heading": this heading)
    anchor: str = ""
    fence_open: str = ""  # for code: the opening fence line
    fence_close: str = ""


@dataclass
class ParsedPage:
    """A page after front matter and MDX handling: its front matter, title and blocks in order."""

    front_matter: dict[str, Any]
    title: str
    blocks: list[_Block] = field(default_factory=list)


def _split_front_matter(text: str, path: Path) -> tuple[dict[str, Any], list[str], int]:
    """Return (front matter, body lines, 1-based line number of the first body line)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, lines, 1
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        raise FormatError(path, "front matter opened with '---' is never closed (add a '---' line after it)", 1)
    raw = "\n".join(lines[1:end])
    # first_line 2: the block starts on the line after the opening '---'
    data = yaml_loads(raw, path, what="invalid YAML front matter", first_line=2) if raw.strip() else {}
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FormatError(path, f"front matter must be a YAML mapping (key: value), got {type(data).__name__}", 2)
    return data, lines[end + 1 :], end + 2


def _clean_heading(text: str) -> tuple[str, str]:
    """Heading text without markup and its anchor (``{#custom-id}`` or a slug)."""
    m = _CUSTOM_ID.search(text)
    custom = m.group("id") if m else ""
    if m:
        text = text[: m.start()]
    text = re.sub(r"\s+#+\s*$", "", text).strip()  # closing hashes
    text = _JSX_INLINE.sub("", text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"(\*\*|__|\*|_)(\S(?:.*?\S)?)\1", r"\2", text).strip()
    return text, custom or _slugify(text)


def _strip_mdx_esm(lines: list[str]) -> list[str | None]:
    """Blank out top-level MDX ``import``/``export`` statements (multi-line ones too); ``None`` = removed line."""
    out: list[str | None] = []
    i = 0
    fence: str | None = None
    while i < len(lines):
        line = lines[i]
        fm = _FENCE_OPEN.match(line)
        if fence is None and fm:
            fence = fm.group("fence")
        elif fence is not None and line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
            fence = None
        elif fence is None and _MDX_ESM.match(line):
            # consume until brackets balance and the statement looks complete
            depth = 0
            j = i
            while j < len(lines):
                chunk = re.sub(r"(['\"`]).*?\1", "", lines[j])
                depth += chunk.count("{") + chunk.count("(") + chunk.count("[")
                depth -= chunk.count("}") + chunk.count(")") + chunk.count("]")
                if depth <= 0 and (j + 1 >= len(lines) or not lines[j + 1].startswith((" ", "\t", "}", ")", "]"))):
                    break
                j += 1
            out.extend([None] * (j - i + 1))
            i = j + 1
            continue
        out.append(line)
        i += 1
    return out


def _strip_comments(text: str) -> str:
    """Remove ``{/* MDX */}`` and ``<!-- HTML -->`` comments outside code fences (code examples keep theirs)."""
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if prose:
            out.append(_HTML_COMMENT.sub("", _MDX_COMMENT.sub("", "\n".join(prose))))
            prose.clear()

    for line in text.split("\n"):
        m = _FENCE_OPEN.match(line)
        if fence is None and m and not (m.group("fence")[0] == "`" and "`" in m.group("info")):
            flush()
            fence = m.group("fence")
            out.append(line)
        elif fence is not None:
            out.append(line)
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                fence = None
        else:
            prose.append(line)
    flush()
    return "\n".join(out)


def parse_page(text: str, path: Path, rel_path: str) -> ParsedPage:
    """Parse one page: front matter, MDX clean-up, headings, paragraphs and code fences.

    Raises:
        FormatError: invalid front matter (file and line named).
    """
    front_matter, body, _ = _split_front_matter(text, path)
    body_text = _strip_comments("\n".join(body))
    # Docusaurus compiles .md pages as MDX too, so ESM statements are stripped from both (the pattern only matches
    # real import/export syntax, not prose that starts with the word "import").
    lines = _strip_mdx_esm(body_text.splitlines())

    blocks: list[_Block] = []
    heading, anchor = "", ""
    para: list[str] = []
    first_h1 = ""

    def flush() -> None:
        nonlocal para
        content = "\n".join(para).strip("\n")
        if content.strip():
            blocks.append(_Block("text", content, heading, anchor))
        para = []

    def add_heading(level: int, raw: str) -> None:
        nonlocal heading, anchor, first_h1
        flush()
        heading, anchor = _clean_heading(raw)
        if level == 1 and not first_h1:
            first_h1 = heading
        if heading:
            blocks.append(_Block("heading", "#" * level + " " + heading, heading, anchor))

    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        i += 1
        if line is None:
            continue
        fm = _FENCE_OPEN.match(line)
        if fm and not (fm.group("fence")[0] == "`" and "`" in fm.group("info")):
            flush()
            fence = fm.group("fence")
            code = [line.strip()]
            close = fence
            while i < n:
                inner = lines[i]
                i += 1
                if inner is None:
                    continue
                s = inner.strip()
                if s.startswith(fence[0] * len(fence)) and not s.strip(fence[0]):
                    close = s
                    break
                code.append(inner)
            else:
                close = fence  # unclosed fence runs to the end of the page (CommonMark)
            blocks.append(_Block("code", "\n".join([*code, close]), heading, anchor, code[0], close))
            continue
        m = _ATX.match(line)
        if m:
            add_heading(len(m.group("hashes")), m.group("text") or "")
            continue
        sm = _SETEXT.match(line)
        if sm and para and para[-1].strip() and not _looks_like_list(para[-1]):
            title_line = para.pop()
            add_heading(1 if sm.group("bar")[0] == "=" else 2, title_line.strip())
            continue
        if not para and _THEMATIC_BREAK.match(line):
            continue
        am = _ADMONITION.match(line)
        if am and line.strip().startswith(":::"):
            title = (am.group("title1") or am.group("title2") or "").strip()
            kind = am.group("kind")
            if kind:
                flush()
                label = kind.capitalize() + (f": {title}" if title else ":")
                para.append(label)
            else:
                flush()
            continue
        if _JSX_LINE.match(line):
            continue  # a line of component tags only: drop the tags, keep the lines between them
        if "<" in line:  # drop inline component tags, but not inside `code spans`
            line = "".join(
                part if part.startswith("`") else _JSX_INLINE.sub("", part) for part in _CODE_SPAN.split(line)
            )
        if not line.strip():
            flush()
            continue
        para.append(line)
    flush()

    title = front_matter.get("title")
    if not isinstance(title, str) or not title.strip():
        title = first_h1 or strip_number_prefix(PurePosixPath(rel_path).name.rsplit(".", 1)[0])
    title = title.strip()
    for b in blocks:  # before the first heading, the heading in force is the page title (Docusaurus' <h1>)
        if not b.heading:
            b.heading, b.anchor = title, ""
    return ParsedPage(front_matter, title, blocks)


def _looks_like_list(line: str) -> bool:
    return bool(re.match(r"^\s*([-*+]|\d+[.)])\s", line))


# ----------------------------------------------------------------------------------------------------------------
# Chunking


def _measure(text: str, unit: str) -> int:
    return len(text) if unit == "chars" else len(text.split())


def _split_words(text: str, size: int, unit: str) -> list[str]:
    """Split prose into pieces of at most ``size`` units, at whitespace (hard cuts only for a longer word)."""
    pieces: list[str] = []
    current = ""
    for word in re.findall(r"\S+\s*", text):
        if unit == "chars" and len(word.rstrip()) > size:
            if current.strip():
                pieces.append(current.rstrip())
            current = ""
            w = word.rstrip()
            pieces.extend(w[j : j + size] for j in range(0, len(w), size))
            continue
        candidate = current + word
        if current and _measure(candidate.rstrip(), unit) > size:
            pieces.append(current.rstrip())
            current = word
        else:
            current = candidate
    if current.strip():
        pieces.append(current.rstrip())
    return pieces


def _split_code(block: _Block, size: int, unit: str, first_size: int | None = None) -> list[str]:
    """Split an oversized code fence at line ends, re-wrapping each piece in the same fence.

    ``first_size`` (when smaller than ``size``) bounds the first piece: the room left beside a heading.
    """
    inner = block.text.split("\n")[1:-1]
    wrap = _measure(block.fence_open + "\n\n" + block.fence_close, unit)
    room = max(size - wrap, 1)
    first_room = max((first_size if first_size is not None else size) - wrap, 0)
    pieces: list[list[str]] = [[]]
    for line in inner:
        parts = [line] if _measure(line, unit) <= room else _split_words(line, room, unit) or [line]
        for part in parts:
            cur = pieces[-1]
            limit = first_room if len(pieces) == 1 else room
            if (cur or len(pieces) == 1) and _measure("\n".join([*cur, part]), unit) > limit:
                pieces.append([part])
            else:
                cur.append(part)
    return ["\n".join([block.fence_open, *p, block.fence_close]) for p in pieces if p]


def _tail(text: str, overlap: int, unit: str) -> str:
    """The last ``overlap`` units of prose ``text``, starting at a word boundary."""
    if overlap <= 0:
        return ""
    words = text.split()
    if unit == "tokens":
        return " ".join(words[-overlap:])
    out: list[str] = []
    total = 0
    for w in reversed(words):
        add = len(w) + (1 if out else 0)
        if total + add > overlap:
            break
        out.append(w)
        total += add
    return " ".join(reversed(out))


@dataclass
class _Chunk:
    parts: list[str]
    kinds: list[str]
    heading: str
    anchor: str

    @property
    def text(self) -> str:
        return "\n\n".join(self.parts)

    def has_body(self) -> bool:
        return any(k != "heading" and k != "overlap" for k in self.kinds)


def _take(text: str, room: int, unit: str) -> tuple[str, str]:
    """Split prose into (a prefix of at most ``room`` units ending at whitespace, the rest)."""
    taken = 0
    used = 0
    for m in re.finditer(r"\S+\s*", text):
        word = m.group().rstrip()
        add = 1 if unit == "tokens" else len(word) + (m.start() - taken if used else 0)
        if used + add > room:
            break
        used += add
        taken = m.start() + len(word)
    if taken == 0 and unit == "chars" and room > 0:  # one word longer than the room: hard cut
        taken = room
    return text[:taken].rstrip(), text[taken:].lstrip()


def _chunk_blocks(blocks: list[_Block], size: int, overlap: int, unit: str) -> Iterator[_Chunk]:
    sep = 2 if unit == "chars" else 0  # the "\n\n" between parts

    def start(block: _Block, seed: str = "") -> _Chunk:
        c = _Chunk([], [], block.heading, block.anchor)
        if seed:
            c.parts.append(seed)
            c.kinds.append("overlap")
        return c

    def room(c: _Chunk) -> int:
        return size - (_measure(c.text, unit) + sep if c.parts else 0)

    def seed_of(prev: _Chunk) -> str:
        last_kind = prev.kinds[-1] if prev.kinds else ""
        if overlap <= 0:
            return ""
        if last_kind == "text":
            return _tail(prev.parts[-1], overlap, unit)
        if last_kind == "code" and _measure(prev.parts[-1], unit) <= overlap:
            return prev.parts[-1]
        return ""

    current: _Chunk | None = None
    for block in blocks:
        if block.kind == "heading":
            if current is not None and current.has_body():
                yield current
                current = None
            if current is None:
                current = start(block)
            else:  # consecutive headings stay together; the deepest one names the chunk
                current.heading, current.anchor = block.heading, block.anchor
            if current.parts and _measure(block.text, unit) > room(current):
                yield current
                current = start(block)
            current.parts.append(block.text)
            current.kinds.append("heading")
            continue
        if current is None:
            current = start(block)
        size_of_block = _measure(block.text, unit)
        if size_of_block <= room(current):
            current.parts.append(block.text)
            current.kinds.append(block.kind)
            continue
        if current.has_body():
            # start a fresh chunk rather than cut a block that fits in one (keep the overlap when it fits too)
            seed = seed_of(current)
            yield current
            current = start(block, seed)
            if size_of_block <= room(current):
                current.parts.append(block.text)
                current.kinds.append(block.kind)
                continue
            if seed and size_of_block <= size:
                current = start(block)
                current.parts.append(block.text)
                current.kinds.append(block.kind)
                continue
        if block.kind == "code":
            # beside a heading, the first piece fills the room left; after body text, start a fresh chunk
            first = room(current) if current.parts and not current.has_body() else size
            for piece in _split_code(block, size, unit, first_size=first):
                if current.parts and _measure(piece, unit) > room(current):
                    yield current
                    current = start(block)  # no prose overlap into a code fence
                current.parts.append(piece)
                current.kinds.append("code")
            continue
        rest = block.text
        while rest:
            r = room(current)
            if current.parts and (r <= 0 or (current.has_body() and r < size // 4)):
                seed = seed_of(current)
                yield current
                current = start(block, seed)
                continue
            piece, rest = _take(rest, max(r, 1), unit)
            if not piece:  # not even one token fits beside the overlap seed: drop the seed
                current = start(block)
                piece, rest = _take(rest, size, unit)
            current.parts.append(piece)
            current.kinds.append("text")
            if rest:
                seed = seed_of(current)
                yield current
                current = start(block, seed)
    if current is not None and current.parts:
        yield current


def _preview(text: str) -> str:
    return " ".join(text.split())[:PREVIEW_CHARS]


def _iter_pages(folder: Path) -> tuple[list[Path], list[str]]:
    pages: list[Path] = []
    skipped: list[str] = []
    for path in sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix()):
        if not path.is_file() or path.suffix.lower() not in _EXTENSIONS:
            continue
        parts = path.relative_to(folder).parts
        if any(p.startswith(("_", ".")) or p == "node_modules" for p in parts):
            skipped.append(path.relative_to(folder).as_posix())
            continue
        pages.append(path)
    return pages, skipped


def build_markdown_corpus(
    folder: str | Path,
    base_url: str = "",
    chunk_size: int = 800,
    chunk_overlap: int = 100,
    unit: Literal["chars", "tokens"] = "chars",
) -> Corpus:
    """Chunk a folder of Markdown / Docusaurus pages into a corpus (see the module docstring for every rule).

    Args:
        folder: The docs folder (the one Docusaurus' docs plugin points at).
        base_url: Prefix of every ``source_url``, e.g. ``https://example.org/docs``; empty gives bare routes.
        chunk_size: Maximum chunk size in ``unit`` (a single word or code line longer than that is the only excess).
        chunk_overlap: Units of prose the next chunk of the same section repeats from the previous one.
        unit: ``"chars"`` (characters) or ``"tokens"`` (whitespace-separated tokens).

    Returns:
        A :class:`~deltap.documents.Corpus` in page order then chunk order; ``doc_id`` = ``chunk_id``.

    Raises:
        DeltapError: the folder does not exist or holds no page, or the chunk settings are invalid.
        FormatError: a page is not UTF-8, or its front matter is not valid YAML (file and line named).
    """
    if unit not in ("chars", "tokens"):
        raise DeltapError(f"unit must be 'chars' or 'tokens', got {unit!r}")
    if not isinstance(chunk_size, int) or chunk_size <= 0:
        raise DeltapError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    if not isinstance(chunk_overlap, int) or not 0 <= chunk_overlap < chunk_size:
        raise DeltapError(f"chunk_overlap must be an integer in [0, chunk_size={chunk_size}), got {chunk_overlap!r}")
    root = Path(folder)
    if not root.is_dir():
        raise DeltapError(f"Markdown folder {root} does not exist or is not a directory")
    pages, skipped = _iter_pages(root)
    if skipped:
        log.info(
            "%s: skipped %d partial/hidden file(s) (names starting with '_' or '.'): %s",
            root,
            len(skipped),
            ", ".join(skipped[:10]),
        )
    if not pages:
        raise DeltapError(
            f"no Markdown pages (.md / .mdx) found under {root}"
            + (f" ({len(skipped)} partial/hidden files were skipped)" if skipped else "")
        )
    base = base_url.rstrip("/")
    docs: list[Document] = []
    empty: list[str] = []
    for path in pages:
        rel = path.relative_to(root).as_posix()
        raw_bytes = path.read_bytes()
        try:
            text = raw_bytes.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw_bytes[: exc.start].count(b"\n") + 1
            raise FormatError(path, f"not valid UTF-8 (byte {exc.start}); save the page as UTF-8", line) from None
        page = parse_page(text, path, rel)
        route = docusaurus_route(rel, page.front_matter)
        top = PurePosixPath(rel).parts
        section = top[0] if len(top) > 1 else route.strip("/").split("/")[0] or strip_number_prefix(path.stem)
        n_before = len(docs)
        for idx, chunk in enumerate(_chunk_blocks(page.blocks, chunk_size, chunk_overlap, unit)):
            body = chunk.text.strip()
            if not body:
                continue
            chunk_id = f"{rel}#{idx}"
            meta = {
                "source_url": f"{base}{route}" if base else route,
                "document_section": section,
                "heading": chunk.heading or page.title,
                "heading_anchor": chunk.anchor,
                "chunk_id": chunk_id,
                "chunk_text_preview": _preview(body),
                "title": page.title,
                "path": rel,
                "chunk_index": idx,
            }
            docs.append(Document(doc_id=chunk_id, text=body, title=page.title, metadata=meta))
        if len(docs) == n_before:
            empty.append(rel)
    if empty:
        log.info("%s: %d page(s) have no body text and gave no chunk: %s", root, len(empty), ", ".join(empty[:10]))
    if not docs:
        raise DeltapError(f"the {len(pages)} Markdown page(s) under {root} hold no text to chunk")
    return Corpus(docs, name=str(root))
