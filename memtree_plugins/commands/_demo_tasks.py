"""The demo's tasks: questions a developer asks of a project, answered twice, every call counted.

A question is "where is NAME defined, and where is it used?" for names the project itself defines and uses
in several files (the most used first).  Answered the way a developer would without memtree, it costs the
output of ``grep -rn NAME`` plus reading whole the files they would open: the one that defines the name and
the ones that use it most (at most :data:`OPENED_FILES`).  With memtree it costs every answer the agent
reads: ``search`` for the name, then ``compose`` around the top hits, then ``get`` of the best hit if the
definition is still not in sight.  A task counts as answered when the definition line is in what was read.

Both numbers are what entered the window, counted with the project's own token counter.  The native Read
adds a line-number gutter to every line; the baseline counts files without it, so it is, if anything, low.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

OPENED_FILES = 3  # files a developer opens for one question: the definition and the heaviest users
MAX_BYTES = 400_000  # a bigger file is not one a developer reads whole, nor one a name is taken from
_KEYWORDS = r"def|class|function|func|fn|struct|interface|trait|enum|module|type|record|object"
# A definition starts its line (after indentation and modifiers): `def x`, `pub fn x`, `export class X`.
_START = r"^[ \t]*(?:(?:export|default|pub(?:\([a-z]+\))?|public|private|protected|internal|static|abstract|final|async|unsafe|data|sealed|open)[ \t]+)*"
_DEFINES = re.compile(rf"{_START}(?:{_KEYWORDS})[ \t]+([A-Za-z_][A-Za-z0-9_]{{3,40}})", re.M)


def _definition(name: str) -> re.Pattern[str]:
    return re.compile(rf"\b(?:{_KEYWORDS})[ \t]+{re.escape(name)}\b")


def texts_of(files: list[Path], root: Path) -> dict[str, str]:
    """Each readable text file under ``root`` (relative path -> text); binaries and huge files left out."""
    out = {}
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if len(data) > MAX_BYTES or b"\0" in data[:4096]:
            continue
        out[str(path.relative_to(root))] = data.decode("utf-8", errors="replace")
    return out


@dataclass
class Task:
    name: str
    defined_in: str
    users: list[str]  # the other files that use it, most uses first

    @property
    def question(self) -> str:
        return f"where is {self.name} defined, and where is it used?"


def pick_tasks(texts: dict[str, str], count: int = 3) -> list[Task]:
    """Names defined once in the project and used in the most other files (ties by name)."""
    defined: dict[str, list[str]] = {}
    for rel, text in texts.items():
        for name in set(_DEFINES.findall(text)):
            defined.setdefault(name, []).append(rel)
    ranked = []
    for name, where in defined.items():
        if len(where) != 1:
            continue  # defined in several files: the question has no single answer
        word = re.compile(rf"\b{re.escape(name)}\b")
        uses = Counter({rel: len(word.findall(text)) for rel, text in texts.items() if rel != where[0]})
        users = [rel for rel, n in sorted(uses.items(), key=lambda kv: (-kv[1], kv[0])) if n]
        if users:
            ranked.append(Task(name, where[0], users))
    ranked.sort(key=lambda t: (-len(t.users), t.name))
    return ranked[:count]


def grep_output(name: str, texts: dict[str, str]) -> str:
    """What ``grep -rn NAME`` prints over the project: ``path:line:text`` per matching line."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    return "".join(f"{rel}:{i}:{line}\n" for rel, text in sorted(texts.items())
                   for i, line in enumerate(text.splitlines(), 1) if word.search(line))


@dataclass
class Answer:
    calls: list[tuple[str, int]] = field(default_factory=list)  # (what was called, tokens it put in the window)
    answered: bool = False

    @property
    def tokens(self) -> int:
        return sum(n for _, n in self.calls)


def baseline(task: Task, texts: dict[str, str], count: object) -> Answer:
    """grep, then read whole the defining file and the heaviest users."""
    out = Answer([(f"grep -rn {task.name}", count(grep_output(task.name, texts)))])  # type: ignore[operator]
    for rel in [task.defined_in, *task.users][:OPENED_FILES]:
        out.calls.append((f"read {rel}", count(texts[rel])))  # type: ignore[operator]
    out.answered = True  # the defining file was read whole
    return out


def answered(task: Task, text: str) -> bool:
    return bool(_definition(task.name).search(text))
