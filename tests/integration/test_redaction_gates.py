"""The redaction gates of ``python -m eval`` at a small size: the seeded corpora are reproducible, the rules
keep their recall and precision on them, and the library-source reader leaves test folders out."""

from __future__ import annotations

import io
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the eval package lives beside the tests

from eval.redaction_corpus import SHAPES, VIEWS, must_keep, secret_records  # noqa: E402
from eval.redaction_gates import (  # noqa: E402
    MUST_KEEP_FP_CEILING,
    RECALL_FLOOR,
    builtin_redact,
    library_sources,
)


def test_corpora_are_reproducible():
    assert secret_records(11, per_pair=1) == secret_records(11, per_pair=1)
    assert must_keep(11) == must_keep(11)
    assert secret_records(11, per_pair=1) != secret_records(12, per_pair=1)


def test_recall_on_real_output_shapes():
    records = secret_records(424242, per_pair=2)
    assert {r.shape for r in records} == set(SHAPES) and {r.view for r in records} == set(VIEWS)
    redact = builtin_redact()
    missed = [r for r in records if any(s in redact(r.text)[0] for s in r.secrets)]
    assert 1 - len(missed) / len(records) >= RECALL_FLOOR, [(m.shape, m.view, m.text[-120:]) for m in missed[:3]]


def test_must_keep_strings_stay():
    redact = builtin_redact()
    cases = must_keep(424242)
    changed = [text for _, text in cases if redact(text)[0] != text]
    assert len(changed) / len(cases) <= MUST_KEEP_FP_CEILING, changed[:3]


def _tarball(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_library_sources_leave_tests_out():
    data = _tarball({"pkg-1.0/pkg/core.py": "x = 1\n", "pkg-1.0/tests/test_core.py": "t = 1\n",
                     "pkg-1.0/pkg/test_helpers.py": "h = 1\n", "package/lib/index.js": "module.exports = 1\n",
                     "package/__tests__/a.js": "1\n", "pkg-1.0/README.md": "# pkg\n"})
    assert sorted(p for p, _ in library_sources(data)) == ["package/lib/index.js", "pkg-1.0/pkg/core.py"]
