"""`memtree demo`, the README's "run the main job" command, end to end as a real subprocess."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.common import run_memtree


def test_demo_drives_the_server_and_reports_savings(home: Path, tmp_path: Path) -> None:
    # The default run: a scratch copy of the bundled sample project, from an empty directory.
    out = run_memtree("demo", cwd=tmp_path, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    assert "connected to memtree" in text
    for call in ("$ read ", "$ grep ", "$ bash ", "$ search ", "$ compose "):
        assert call in text
    totals = re.search(r"memtree: ([\d,]+) tokens; grep \+ read: ([\d,]+) tokens .*?(\d+) of\s+(\d+) questions\s+"
                       r"answered with the definition in sight; every call counted", text, re.S)
    assert totals, text[-1500:]
    mine, theirs, found, asked = (int(totals.group(i).replace(",", "")) for i in (1, 2, 3, 4))
    assert mine > 0 and theirs > 0 and asked == 3 and found >= 1
    assert "error:" not in text
    # The default demo works in a scratch store and stops its daemon: nothing is left in MEMTREE_HOME.
    assert not home.exists() or not any(home.iterdir())


# -- fitting the terminal ----------------------------------------------------------------------------------
@pytest.mark.parametrize("width", [20, 33, 57, 80])
def test_fit_never_exceeds_the_width_and_marks_every_cut(width: int) -> None:
    from memtree_plugins.commands._terminal import fit

    line = "    note: keyword search: no embedder is available (Ollama is not reachable at http://x:1)" * 2
    cut = fit(line, width)
    assert len(cut) <= width and cut.endswith("…")
    assert line.startswith(cut[:-1])
    assert fit("short", width) == "short"


def test_fit_does_not_end_inside_a_bracket_it_cut_open() -> None:
    from memtree_plugins.commands._terminal import fit

    cut = fit("walker summarizer ran (wrote 3 summaries for the largest subtrees)", 40)
    assert cut == "walker summarizer ran…"
    assert fit("f(a, b) and then some more words", 20).count("(") == 1  # a closed bracket is fine


def test_wrap_keeps_paths_whole_and_indents_continuations() -> None:
    from memtree_plugins.commands._terminal import wrap

    path = "/a/very/long/scratch/directory/name/that/is/wider/than/the/terminal/bookshop"
    text = wrap(f"memtree demo on a copy of the sample project at {path} (scratch store)", 40)
    assert path in text.split()
    lines = text.splitlines()
    assert all(len(ln) <= 40 or ln.strip() == path for ln in lines)
    assert all(ln.startswith("  ") for ln in lines[1:])


# -- the questions come from the project --------------------------------------------------------------------
def test_tasks_are_names_defined_once_and_used_elsewhere() -> None:
    from memtree_plugins.commands._demo_tasks import baseline, grep_output, pick_tasks

    texts = {"ledger.py": "class Ledger:\n    def ledger_total(self):\n        return 1\n",
             "shop.py": "from ledger import Ledger\nledger = Ledger()\nprint(ledger.ledger_total())\n",
             "report.py": "import ledger\nLedger()\n# import things\n",
             "twice.py": "def helper_fn():\n    pass\n", "again.py": "def helper_fn():\n    pass\n"}
    tasks = pick_tasks(texts)
    assert [(t.name, t.defined_in, t.users) for t in tasks] == [
        ("Ledger", "ledger.py", ["shop.py", "report.py"]), ("ledger_total", "ledger.py", ["shop.py"])]
    assert grep_output("Ledger", texts) == ("ledger.py:1:class Ledger:\nreport.py:2:Ledger()\n"
                                           "shop.py:1:from ledger import Ledger\nshop.py:2:ledger = Ledger()\n")
    answer = baseline(tasks[0], texts, len)
    assert [c for c, _ in answer.calls] == ["grep -rn Ledger", "read ledger.py", "read shop.py", "read report.py"]
    assert answer.tokens == len(grep_output("Ledger", texts)) + sum(len(texts[f]) for f in
                                                                    ("ledger.py", "report.py", "shop.py"))


def test_the_demo_searches_the_project_it_runs_on_and_fits_a_narrow_terminal(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "zoo"
    (project / "zoo").mkdir(parents=True)
    (project / "zoo" / "keeper.py").write_text(
        '"""Who feeds which enclosure, and when."""\n\n\nclass EnclosureKeeper:\n'
        "    def feed(self, n, rota, what):\n        return [what] * n\n")
    for i, animal in enumerate(["penguin", "walrus", "narwhal"]):
        (project / "zoo" / f"{animal}.py").write_text(
            f'"""The {animal} enclosure (feeding schedules, keeper rotas and the visitor notes for it)."""\n\n'
            "from zoo.keeper import EnclosureKeeper\n\n"
            + "".join(f"def feed_{animal}_{n}(enclosure_rota):\n"
                      f"    return EnclosureKeeper().feed({n}, enclosure_rota, '{animal}' * {i + 1})\n\n"
                      for n in range(12)))
    width = 50
    out = run_memtree("demo", "--project", str(project), cwd=tmp_path, env={"COLUMNS": str(width)}, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    query = re.search(r"^\$ search '([^']*)'", out.stdout, re.M)
    assert query, out.stdout
    assert query.group(1) == "EnclosureKeeper", query.group(1)
    assert "payment" not in out.stdout
    # Every line fits, except a path or other single word longer than the width (kept whole on purpose).
    for line in out.stdout.splitlines():
        assert len(line) <= width or len(line.split()) == 1, line
    assert "…" in out.stdout


def test_the_demo_reads_the_projects_own_files_biggest_first(tmp_path: Path) -> None:
    from memtree_plugins.commands.demo import project_files

    for rel, size in [("src/big.py", 300), ("src/small.py", 10), ("README.md", 100), (".env", 50),
                      (".venv/lib/site.py", 9000), ("node_modules/x/index.js", 9000), (".git/objects/a", 9000)]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x" * size)
    found = [p.relative_to(tmp_path).as_posix() for p in project_files(tmp_path)]
    assert found == ["src/big.py", "README.md", ".env", "src/small.py"]
