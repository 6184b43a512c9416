"""An example plugin for ``memtree_register_redaction_rules`` (docs/hooks.md shows it; a test loads it)."""

import re

from memtree_core.hookspecs import hookimpl


class AcmeToken:
    name = "acme-token"
    pattern = re.compile(r"acme_[A-Za-z0-9]{32}")

    def redact(self, text):
        return self.pattern.subn("[REDACTED:acme-token]", text)


@hookimpl
def memtree_register_redaction_rules(register):
    register(AcmeToken())
