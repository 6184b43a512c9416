"""Output whose only clue is the command that printed it.

``echo "$GEO_API_KEY"`` or ``printenv STRIPE_TOKEN`` prints a bare value: no name, no prefix, often no shape
a rule could know.  The command says what it is, so when a command does nothing but print variables and one
of them has a secret-like name, every line it printed is masked.  The check is deliberately narrow (a lone
``echo``/``printf``/``printenv``, no pipes, lists or substitutions) so ordinary commands keep their output.
"""

from __future__ import annotations

import re

RULE = "printed-secret"
MARK = f"[REDACTED:{RULE}]"
# Words that make a variable name a secret's (gitleaks' generic keywords, plus the usual short forms).
_SECRET_NAME = re.compile(r"(?i)(key|token|secret|passw|pass|pwd|auth|credential|cred|dsn|private|session|"
                          r"cookie|signature|salt|apikey|bearer|jwt)")
_PRINTER = re.compile(r"^\s*(?:builtin\s+|command\s+)?(echo|printf|printenv|print)\b(.*)$", re.S)
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_COMPOUND = re.compile(r"[;|&`<>\n]|\$\(")
# Lines the bash tool adds around an output: its command line and its stderr/exit markers.
_FRAME = re.compile(r"^(\$ .*|\[stderr\]|\[exit -?\d+\]|\[timed out after .*\])$")


def printed_names(command: str) -> list[str]:
    """The secret-named variables a print-only ``command`` prints, or [] when it is anything else."""
    m = _PRINTER.match(command or "")
    if not m or _COMPOUND.search(command):
        return []
    verb, rest = m.group(1), m.group(2)
    names = _VAR.findall(rest)
    if verb == "printenv":
        names += re.findall(r"(?<![\w$-])([A-Za-z_][A-Za-z0-9_]*)", rest)
    return [n for n in names if _SECRET_NAME.search(n)]


def mask_printed(command: str, text: str, *, framed: bool = False) -> tuple[str, int]:
    """``text`` with every printed line masked when ``command`` prints a secret-named variable, and the
    number of lines masked.  ``framed``: the text is the bash tool's (its ``$ command`` line and stderr/exit
    markers are kept)."""
    if not printed_names(command):
        return text, 0
    out, n = [], 0
    for line in text.split("\n"):
        if not line.strip() or (framed and _FRAME.match(line)) or line == MARK:
            out.append(line)
        else:
            out.append(MARK)
            n += 1
    return "\n".join(out), n
