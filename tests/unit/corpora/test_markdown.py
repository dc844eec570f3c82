"""Markdown / Docusaurus corpus builder: routes, front matter, MDX, code fences, chunking, errors."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from deltap.corpora.markdown import build_markdown_corpus, docusaurus_route, strip_number_prefix
from deltap.errors import DeltapError, FormatError

REQUIRED = ("source_url", "document_section", "heading", "chunk_id", "chunk_text_preview", "title", "path")


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture()
def book(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    write(
        root,
        "intro.md",
        "---\ntitle: Welcome\nslug: /\n---\nThis book teaches robotics.\n\n# Getting started\n\nInstall.\n",
    )
    write(
        root,
        "module-01-ros2/01-nodes.mdx",
        """---
id: ros-nodes
sidebar_position: 1
---
import Tabs from '@theme/Tabs';
import {
  TabItem,
} from '@theme/TabItem';

export const meta = {
  a: 1,
};

# ROS 2 Nodes

A node is a process. {/* hidden comment */}

<Tabs>
<TabItem value="py" label="Python">

```python
# this is not a heading
import rclpy
rclpy.init()
```

</TabItem>
</Tabs>

:::tip Remember
Nodes talk over topics.
:::

Topics {#topics}
------

Publish and subscribe. <Highlight color="red">important</Highlight> words.
""",
    )
    write(root, "module-01-ros2/index.md", "# Module 1\n\nOverview of ROS 2.\n")
    write(root, "module-01-ros2/_partial.md", "Partial included elsewhere.\n")
    write(root, "02-advanced/03-launch.md", "---\nslug: launch-files\n---\n## Launch\n\nLaunch files start nodes.\n")
    return root


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("01-intro", "intro", id="dash"),
        pytest.param("2_setup", "setup", id="underscore"),
        pytest.param("3. Start", "Start", id="dot-space"),
        pytest.param("2021-05-01-post", "2021-05-01-post", id="date-kept"),
        pytest.param("1.2.3", "1.2.3", id="version-kept"),
        pytest.param("intro", "intro", id="no-prefix"),
    ],
)
def test_strip_number_prefix(name: str, expected: str) -> None:
    assert strip_number_prefix(name) == expected


@pytest.mark.parametrize(
    ("rel", "fm", "route"),
    [
        pytest.param("01-a/02-b.md", {}, "/a/b", id="prefixes"),
        pytest.param("guide/index.md", {}, "/guide", id="index"),
        pytest.param("guide/README.md", {}, "/guide", id="readme"),
        pytest.param("guide/guide.md", {}, "/guide", id="same-name-as-folder"),
        pytest.param("index.mdx", {}, "/", id="root-index"),
        pytest.param("guide/x.md", {"id": "custom"}, "/guide/custom", id="front-matter-id"),
        pytest.param("guide/x.md", {"slug": "/abs/path/"}, "/abs/path", id="absolute-slug"),
        pytest.param("01-guide/x.md", {"slug": "rel"}, "/guide/rel", id="relative-slug"),
        pytest.param("guide/my page.md", {}, "/guide/my%20page", id="space-quoted"),
    ],
)
def test_docusaurus_route(rel: str, fm: dict[str, str], route: str) -> None:
    assert docusaurus_route(rel, fm) == route


def test_book_metadata(book: Path) -> None:
    corpus = build_markdown_corpus(book, base_url="https://ex.org/docs/", chunk_size=300, chunk_overlap=50)
    assert corpus.ids == [
        "02-advanced/03-launch.md#0",
        "intro.md#0",
        "intro.md#1",
        "module-01-ros2/01-nodes.mdx#0",
        "module-01-ros2/01-nodes.mdx#1",
        "module-01-ros2/index.md#0",
    ]
    for doc in corpus:
        for key in REQUIRED:
            assert doc.metadata[key], (doc.doc_id, key)
        assert doc.metadata["chunk_id"] == doc.doc_id
        assert doc.metadata["chunk_text_preview"] == " ".join(doc.text.split())[:200]
    launch = corpus["02-advanced/03-launch.md#0"].metadata
    assert launch["source_url"] == "https://ex.org/docs/advanced/launch-files"
    assert launch["document_section"] == "02-advanced"
    assert launch["heading"] == "Launch"
    intro0, intro1 = corpus["intro.md#0"], corpus["intro.md#1"]
    assert intro0.metadata["source_url"] == "https://ex.org/docs/"
    assert intro0.metadata["document_section"] == "intro"
    assert intro0.metadata["heading"] == "Welcome"  # before any heading: the page title (Docusaurus' <h1>)
    assert intro1.metadata["heading"] == "Getting started"
    assert intro0.title == "Welcome"
    nodes0, nodes1 = corpus["module-01-ros2/01-nodes.mdx#0"], corpus["module-01-ros2/01-nodes.mdx#1"]
    assert nodes0.metadata["source_url"] == "https://ex.org/docs/module-01-ros2/ros-nodes"
    assert nodes0.metadata["document_section"] == "module-01-ros2"
    assert nodes0.metadata["heading"] == "ROS 2 Nodes"
    assert nodes0.title == "ROS 2 Nodes"  # the first H1 when front matter has no title
    assert nodes1.metadata["heading"] == "Topics"
    assert nodes1.metadata["heading_anchor"] == "topics"
    assert corpus["module-01-ros2/index.md#0"].metadata["source_url"] == "https://ex.org/docs/module-01-ros2"


def test_mdx_and_code_fences(book: Path) -> None:
    corpus = build_markdown_corpus(book, chunk_size=300, chunk_overlap=0)
    text = corpus["module-01-ros2/01-nodes.mdx#0"].text
    assert "import Tabs" not in text and "TabItem" not in text and "export const" not in text
    assert "hidden comment" not in text and "<Tabs>" not in text
    assert "```python\n# this is not a heading\nimport rclpy\nrclpy.init()\n```" in text  # fence kept whole
    assert "Tip: Remember\nNodes talk over topics." in text
    # "# this is not a heading" inside the fence did not become a heading
    assert [d.metadata["heading"] for d in corpus if d.metadata["path"].endswith("01-nodes.mdx")] == [
        "ROS 2 Nodes",
        "Topics",
    ]
    assert "important words" in corpus["module-01-ros2/01-nodes.mdx#1"].text
    assert all("Partial included" not in d.text for d in corpus)  # _partial.md skipped like Docusaurus does


def test_stable_ids(book: Path) -> None:
    a = build_markdown_corpus(book, chunk_size=120, chunk_overlap=20)
    b = build_markdown_corpus(book, chunk_size=120, chunk_overlap=20)
    assert [(d.doc_id, d.text, dict(d.metadata)) for d in a] == [(d.doc_id, d.text, dict(d.metadata)) for d in b]


def _long_page(root: Path, n_words: int = 300) -> None:
    words = " ".join(f"w{i}" for i in range(n_words))
    write(root, "sec/long.md", f"# Long\n\n{words}\n")


@pytest.mark.parametrize("unit", ["chars", "tokens"])
def test_chunk_size_and_overlap(tmp_path: Path, unit: str) -> None:
    _long_page(tmp_path)
    size, overlap = (200, 30) if unit == "chars" else (40, 5)
    corpus = build_markdown_corpus(tmp_path, chunk_size=size, chunk_overlap=overlap, unit=unit)
    docs = list(corpus)
    assert len(docs) > 3
    measure = len if unit == "chars" else (lambda t: len(t.split()))
    for d in docs:
        assert measure(d.text) <= size, (d.doc_id, measure(d.text))
    # every word of the page is in some chunk, in order, and consecutive chunks overlap
    seen = [w for d in docs for w in d.text.split() if w.startswith("w")]
    assert sorted(set(seen), key=lambda w: int(w[1:])) == [f"w{i}" for i in range(300)]
    for prev, nxt in pairwise(docs):
        tail = prev.text.split()[-1]
        head = nxt.text.split()
        assert tail in head, "the next chunk repeats the end of the previous one"
        if unit == "tokens":
            assert head[:overlap] == prev.text.split()[-overlap:]


def test_no_overlap_means_disjoint(tmp_path: Path) -> None:
    _long_page(tmp_path)
    docs = list(build_markdown_corpus(tmp_path, chunk_size=200, chunk_overlap=0))
    words = [w for d in docs for w in d.text.split() if w.startswith("w")]
    assert words == [f"w{i}" for i in range(300)]


def test_oversized_code_fence_split_into_valid_fences(tmp_path: Path) -> None:
    code = "\n".join(f"x{i} = {i}  # comment" for i in range(40))
    write(tmp_path, "a/code.md", f"# Code\n\nIntro line.\n\n```python\n{code}\n```\n\nAfter.\n")
    docs = list(build_markdown_corpus(tmp_path, chunk_size=250, chunk_overlap=0))
    fenced = [d for d in docs if "x1 = 1" in d.text or "x39 = 39" in d.text]
    assert len(docs) >= 3
    for d in docs:
        assert len(d.text) <= 250
        assert d.text.count("```") % 2 == 0, d.text  # every piece opens and closes its fence
    lines = [ln for d in docs for ln in d.text.splitlines() if ln.startswith("x")]
    assert lines == code.splitlines()  # no code line lost, duplicated or cut
    assert fenced and all(d.metadata["heading"] == "Code" for d in docs)


def test_small_fence_not_split(tmp_path: Path) -> None:
    write(tmp_path, "a/p.md", "# P\n\n" + "Some prose here. " * 8 + "\n\n```sh\necho one\necho two\n```\n")
    docs = list(build_markdown_corpus(tmp_path, chunk_size=160, chunk_overlap=0))
    assert any("```sh\necho one\necho two\n```" in d.text for d in docs)


def test_heading_starts_new_chunk_and_tilde_fence(tmp_path: Path) -> None:
    write(tmp_path, "a/p.md", "# A\n\nalpha\n\n~~~\n## not heading\n~~~\n\n## B\n\nbeta\n\n### C\n\n#### D\n\ndelta\n")
    docs = list(build_markdown_corpus(tmp_path, chunk_size=800, chunk_overlap=0))
    assert [(d.metadata["heading"], d.text) for d in docs] == [
        ("A", "# A\n\nalpha\n\n~~~\n## not heading\n~~~"),
        ("B", "## B\n\nbeta"),
        ("D", "### C\n\n#### D\n\ndelta"),  # consecutive headings stay together; the deepest names the chunk
    ]


def test_no_pages_error(tmp_path: Path) -> None:
    write(tmp_path, "notes.txt", "not markdown")
    with pytest.raises(DeltapError, match=r"no Markdown pages \(\.md / \.mdx\) found under"):
        build_markdown_corpus(tmp_path)


def test_missing_folder_error(tmp_path: Path) -> None:
    with pytest.raises(DeltapError, match="does not exist"):
        build_markdown_corpus(tmp_path / "nope")


def test_bad_front_matter_names_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, "a/ok.md", "# fine\n\ntext\n")
    bad = write(tmp_path, "a/bad.md", "---\ntitle: ok\ntags: [one, two\n---\n# Bad\n")
    with pytest.raises(FormatError) as info:
        build_markdown_corpus(tmp_path)
    assert info.value.path == str(bad)
    assert info.value.line == 3  # the unclosed list: line 3 of the file (the parser reaches the block's end there)
    assert "invalid YAML front matter" in str(info.value)


def test_unclosed_and_non_mapping_front_matter(tmp_path: Path) -> None:
    write(tmp_path, "a/bad.md", "---\ntitle: x\n# never closed\n")
    with pytest.raises(FormatError, match=r"bad\.md:1: front matter opened with '---' is never closed"):
        build_markdown_corpus(tmp_path)
    write(tmp_path, "a/bad.md", "---\n- a\n- b\n---\ntext\n")
    with pytest.raises(FormatError, match=r"bad\.md:2: front matter must be a YAML mapping"):
        build_markdown_corpus(tmp_path)


def test_non_utf8_page(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "latin.md").write_bytes(b"# Title\n\ncaf\xe9\n")
    with pytest.raises(FormatError, match=r"latin\.md:3: not valid UTF-8"):
        build_markdown_corpus(tmp_path)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"chunk_size": 0}, id="size-zero"),
        pytest.param({"chunk_size": 100, "chunk_overlap": 100}, id="overlap-too-big"),
        pytest.param({"chunk_overlap": -1}, id="overlap-negative"),
        pytest.param({"unit": "words"}, id="bad-unit"),
    ],
)
def test_bad_settings(tmp_path: Path, kwargs: dict[str, object]) -> None:
    write(tmp_path, "a.md", "text\n")
    with pytest.raises(DeltapError):
        build_markdown_corpus(tmp_path, **kwargs)


def test_prose_starting_with_import_is_kept(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "# A\n\nimport the module first, then call it.\n")
    (doc,) = build_markdown_corpus(tmp_path)
    assert "import the module first" in doc.text
    assert doc.metadata["document_section"] == "a"


def test_heading_before_oversized_fence_is_not_alone(tmp_path: Path) -> None:
    code = "\n".join(f'  "key{i}": "value {i}",' for i in range(30))
    write(tmp_path, "a/p.md", f"# Page\n\n### Example output\n\n```json\n{{\n{code}\n}}\n```\n")
    docs = list(build_markdown_corpus(tmp_path, chunk_size=300, chunk_overlap=0))
    assert docs[0].text.startswith("# Page\n\n### Example output\n\n```json\n{")  # the heading keeps code with it
    assert all(d.text != "### Example output" and len(d.text) <= 300 for d in docs)
    assert all(d.metadata["heading"] == "Example output" for d in docs)
    lines = [ln for d in docs for ln in d.text.splitlines() if ln.startswith('  "key')]
    assert lines == code.splitlines()


def test_comments_removed_outside_fences_only(tmp_path: Path) -> None:
    page = (
        "# A\n\nkeep <!-- drop\nthis --> this {/* and this */}\n\n"
        "```jsx\n<div>{/* jsx comment kept */}</div>\n<!-- html kept -->\n```\n"
    )
    write(tmp_path, "a.mdx", page)
    (doc,) = build_markdown_corpus(tmp_path)
    assert "drop" not in doc.text and "and this" not in doc.text and "keep  this" in doc.text
    assert "{/* jsx comment kept */}" in doc.text and "<!-- html kept -->" in doc.text


def test_inline_code_keeps_component_names(tmp_path: Path) -> None:
    write(tmp_path, "a.mdx", "# A\n\nWrap tabs in `<Tabs>` and <Badge>new</Badge> items.\n")
    (doc,) = build_markdown_corpus(tmp_path)
    assert "Wrap tabs in `<Tabs>` and new items." in doc.text
