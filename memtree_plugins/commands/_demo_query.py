"""The demo's search query, taken from the project being shown: its most frequent identifiers.

A fixed query ("payment retries ...") only ever matched the bundled sample.  The words a project uses most
are what a newcomer would search it for; language keywords and English glue words are left out because
they are frequent everywhere and say nothing about this project.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,39}")
# Keywords and builtins of the common languages, and English glue words: frequent in every project.
_COMMON = frozenset("""
abstract async await bool boolean break case catch char class const constructor continue data default def
defer delete does done each elif else enum error errors except export extends false fileprivate final
finally float from func function given have import impl include init instanceof interface into isinstance
lambda local long match module mut none nonlocal null number object override package private protected
public raise return self static string struct super switch that then there these this throw throws trait
true type typeof undefined unsafe used uses value values var void when where which while will with without
yield your echo fi esac then local print println printf main test tests args kwargs list dict items name
names path file files line lines text index true false okay also only just more most some such than them
they what about after before other over under should would could must none null nil elsif unless begin
rescue ensure end require require_relative module puts attr_reader attr_accessor public static void new
select insert update delete create table into values from where order group limit offset join left right
inner outer primary foreign references unique index http https www html
""".split())


def frequent_identifiers(texts: Iterable[str], count: int = 3) -> list[str]:
    """The ``count`` identifiers used most often across ``texts``, in order; ties by name for determinism.

    An identifier must appear in at least two of the texts when there are two or more, so one big
    generated file cannot choose the query alone.
    """
    total: Counter[str] = Counter()
    spread: Counter[str] = Counter()
    n = 0
    for text in texts:
        n += 1
        words = Counter(w.lower() for w in _IDENTIFIER.findall(text))
        for word in list(words):
            if word in _COMMON or word.strip("_").isdigit() or not any(c.isalpha() for c in word.strip("_")):
                del words[word]
        total.update(words)
        spread.update(words.keys())
    need = 2 if n >= 2 else 1
    ranked = sorted((w for w in total if spread[w] >= need), key=lambda w: (-total[w], w))
    return ranked[:count]


def project_query(files: Iterable[Path], count: int = 3, max_bytes: int = 200_000) -> str:
    """A query made of the project's most frequent identifiers ('' when it has no text to take them from)."""
    texts = []
    for path in files:
        try:
            data = path.read_bytes()[:max_bytes]
        except OSError:
            continue
        if b"\0" in data[:4096]:
            continue  # binary
        texts.append(data.decode("utf-8", errors="replace"))
    return " ".join(frequent_identifiers(texts, count))
