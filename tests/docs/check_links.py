#!/usr/bin/env python3
"""Checks every relative link of README.md and docs/**/*.md (tests/docs/CMakeLists.txt,
CTest test docs_links, label cpu).

A link `[text](target)`, an image `![alt](target)` or a reference definition
`[name]: target` whose target is not a URL must name a file or folder that
exists, relative to the linking file; a `#fragment` into a Markdown file (or
into the linking file itself) must name one of its headings, spelled as
GitHub spells anchors (lower case, punctuation dropped, spaces as '-',
repeats numbered -1, -2, ...). Text inside code blocks and `inline code` is
not read.

Citations in the sources count too: a `docs/NAME.md` written in a comment,
a script or a doc (magmadnn/, apps/, tests/, bench/, tools/, examples/,
cmake/, README.md, docs/) must name a file that exists, and one followed by
a section in quotes (`docs/distributed.md, "Strategies"`) a heading of that
file that holds the quoted words.

It also fails on a ```cpp block in a Markdown file below docs/'s top level:
doc_snippets.py compiles the blocks of README.md and docs/*.md only, so a
C++ example moved into docs/notes/ would silently stop being compiled.

Usage: check_links.py SOURCE_DIR   (exit 0: every link resolves; 1: the
broken ones, one per line, as file:line: message)
"""
import glob
import os
import re
import sys

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CPP_FENCE = re.compile(r"^\s{0,3}```\s*(cpp|c\+\+|C\+\+)\b")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def markdown_files(src):
    files = [os.path.join(src, "README.md")]
    files += glob.glob(os.path.join(src, "docs", "**", "*.md"), recursive=True)
    return sorted(f for f in files if os.path.isfile(f))


def prose_lines(path):
    """(line number, text, raw text) of the lines outside code blocks (text with
    inline code removed), and the line numbers where a ```cpp block opens."""
    out, cpp, fence = [], [], None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            m = FENCE.match(line)
            if fence is None and m:
                fence = m.group(1)
                if CPP_FENCE.match(line):
                    cpp.append(n)
                continue
            if fence is not None:
                if line.strip().startswith(fence):
                    fence = None
                continue
            out.append((n, INLINE_CODE.sub("", line), line))
    return out, cpp


def slug(heading):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, found = {}, set()
        for _, _, raw in prose_lines(path)[0]:
            m = HEADING.match(raw)
            if not m:
                continue
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            found.add(s if k == 0 else f"{s}-{k}")
        _anchors[path] = found
    return _anchors[path]


def check(src):
    errors = []
    for path in markdown_files(src):
        rel = os.path.relpath(path, src)
        lines, cpp = prose_lines(path)
        if os.path.dirname(rel) not in ("", "docs"):
            for n in cpp:
                errors.append(f"{rel}:{n}: a ```cpp block outside README.md and docs/*.md is not compiled "
                              "by tests/docs/doc_snippets.py; keep C++ examples in a guide")
        for n, line, _ in lines:
            targets = [m.group(1) for m in LINK.finditer(line)]
            m = REFDEF.match(line)
            if m:
                targets.append(m.group(1))
            for t in targets:
                if EXTERNAL.match(t):
                    continue
                file_part, _, frag = t.partition("#")
                target = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                if not os.path.exists(target):
                    errors.append(f"{rel}:{n}: link to {t}: {os.path.relpath(target, src)} does not exist")
                    continue
                if frag and target.endswith(".md") and frag.lower() not in anchors(target):
                    errors.append(f"{rel}:{n}: link to {t}: {os.path.relpath(target, src)} has no heading "
                                  f"whose anchor is #{frag}")
    return errors


CITE = re.compile(r"(?<![\w./-])(docs/[\w./-]+?\.md)(?:[,]? \(?\"([^\"]+)\")?")
SOURCE_DIRS = ("magmadnn", "apps", "tests", "bench", "tools", "examples", "cmake", "docs")
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cu", ".cuh", ".inc", ".py", ".sh", ".cmake", ".txt", ".md", ".in", "")


def cited_files(src):
    yield os.path.join(src, "README.md")
    for d in SOURCE_DIRS:
        for root, dirs, files in os.walk(os.path.join(src, d)):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
            for f in files:
                if os.path.splitext(f)[1] in SOURCE_EXT:
                    yield os.path.join(root, f)


def check_citations(src):
    errors = []
    for path in cited_files(src):
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        rel = os.path.relpath(path, src)
        for n, line in enumerate(text.split("\n"), 1):
            for m in CITE.finditer(line):
                doc, section = m.group(1), m.group(2)
                if "*" in doc or doc.startswith("docs/NAME"):
                    continue
                target = os.path.join(src, doc)
                if not os.path.isfile(target):
                    errors.append(f"{rel}:{n}: cites {doc}, which does not exist")
                    continue
                if section:
                    heads = [HEADING.match(raw).group(2).replace("`", "")
                             for _, _, raw in prose_lines(target)[0] if HEADING.match(raw)]
                    if not any(section.replace("`", "") in h for h in heads):
                        errors.append(f"{rel}:{n}: cites {doc}, \"{section}\", but {doc} has no such heading")
    return errors


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: check_links.py SOURCE_DIR\n")
        return 2
    errors = check(sys.argv[1]) + check_citations(sys.argv[1])
    for e in errors:
        print(e)
    n = len(markdown_files(sys.argv[1]))
    print(f"check_links: {n} files, {len(errors)} broken link(s)" if errors else f"check_links: {n} files, every link resolves")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
