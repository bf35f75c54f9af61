"""The repository cites nothing outside itself (issue 22).

The language is cited as ``docs/language.md §N``, the papers by key (``[CEL] Algorithm 3``) and their
corrections by ``docs/references.md E3``; the design notes, digests and source texts the project was
started from are not in the repository, so no tracked file may point at them.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

OUTSIDE = re.compile(
    "|".join(
        [
            r"\bLANGUAGE\.md",  # -> docs/language.md §N
            r"\bARCHITECTURE\.md",
            r"\bSTYLE\.md",
            r"\bSTACK-NOTES",  # -> docs/architecture.md, CONTRIBUTING.md, ...
            r"(?i:(?<![a-z])digests?(?![a-z]))",  # -> [KEY] §N, or docs/references.md E3
            r"(?i:\bseeds? (?:paper|text|file|0\d\d))",  # -> [KEY]
            r"(?i:\b(?:the|each|their|its|of) seeds?\b(?!\s*[=(,)\]]))",  # (a random seed is written seed=, seed: int)
            r"\bseeds/|\bshared/(?:design|digests|seeds)|\.\./shared\b|/work/shared\b",
        ]
    )
)

# Not the project's text: vendored code, and
# this file, whose examples are the citations it forbids.
EXEMPT = {"widgets/plotly-basic.min.js", "tests/test_citations.py"}


def tracked_text_files():
    try:
        names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    for name in names.decode().split("\0"):
        path = ROOT / name
        if not name or name in EXEMPT or not path.is_file():
            continue
        try:
            yield name, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary (images, parquet)


def outside_citations():
    found = []
    for name, text in tracked_text_files():
        for number, line in enumerate(text.splitlines(), 1):
            for hit in OUTSIDE.finditer(line):
                found.append(f"{name}:{number}: {hit.group(0)!r} in {line.strip()[:120]}")
    return found


def test_the_pattern_catches_each_kind_of_outside_citation():
    cites = [
        "see LANGUAGE.md §10.2",
        "ARCHITECTURE.md",
        "STYLE.md",
        "STACK-NOTES.md §2",
        "digest 004 §5",
        "the digest's fix",
        "Digest 000b",
        "seed 003",
        "the seeds are silent",
        "../shared/design",
        "/work/shared/digests",
        "from engines.stack.digest_streams import x",
        "seed text",
    ]
    assert [c for c in cites if not OUTSIDE.search(c)] == []
    fine = [
        "docs/language.md §10.2",
        "[CEL] Algorithm 3",
        "docs/references.md E3",
        "hashlib.md5().hexdigest()",
        "rng = np.random.default_rng(seed)",
        "seed: int = 0",
        "a fresh seed each round",
        "seed=1",
        "seeded synthetic streams",
        "shared state",
        "CEPKIT_FUZZ_SEED",
    ]
    assert [c for c in fine if OUTSIDE.search(c)] == []


def test_no_tracked_file_cites_a_file_outside_the_repository():
    found = outside_citations()
    assert found == [], f"{len(found)} citations of files outside the repository:\n" + "\n".join(found[:60])


@pytest.mark.parametrize("key", ["CEL", "LIU", "CSV", "SES", "RCEP"])
def test_every_paper_key_is_defined_in_references(key):
    assert f"**[{key}]**" in (ROOT / "docs" / "references.md").read_text(encoding="utf-8")


def test_every_errata_entry_cited_exists():
    entries = set(re.findall(r"^\*\*(E\d+)\.", (ROOT / "docs" / "references.md").read_text(encoding="utf-8"), re.M))
    cited = {
        (name, e) for name, text in tracked_text_files() for e in re.findall(r"docs/references\.md,? (E\d+)", text)
    }
    assert {c for c in cited if c[1] not in entries} == set()
