"""A redaction rule for ACME's internal API tokens: ``acme_live_`` or ``acme_test_`` then 24+ characters.

memtree runs every rule over captures and tool outputs before anything is stored.  A rule returns the new
text and how many secrets it replaced; the count feeds ``memtree stats`` (redaction hits per rule).
"""

from __future__ import annotations

import re

# The word boundary in front keeps `xacme_live_...` (some other vendor's name) out; the lookahead at the end
# makes sure a longer run of token characters is taken whole, never cut in the middle.
TOKEN = re.compile(r"(?<![A-Za-z0-9_])acme_(?:live|test)_[A-Za-z0-9]{24,}(?![A-Za-z0-9])")


class AcmeTokenRule:
    name = "acme-token"

    def redact(self, text: str) -> tuple[str, int]:
        if "acme_" not in text:  # the cheap test first: almost no text holds one
            return text, 0
        return TOKEN.subn(f"[REDACTED:{self.name}]", text)
