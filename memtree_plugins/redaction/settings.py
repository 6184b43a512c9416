"""The redaction plugin's settings: ``redaction.ruleFiles`` (the host owns the section's ``enabled``)."""

from __future__ import annotations

from typing import Annotated

from memtree_core.plugin_settings import BuiltinSettings, Section, UserOnly
from memtree_core.settings import WHAT_IS_CAPTURED


class RuleFilesSection(Section):
    # Extra secret rules as data: TOML files in gitleaks' schema ([[rules]] id, regex, keywords, secretGroup,
    # entropy, allowlists), run with the shipped catalogue; a rule with a shipped id replaces it.  A file
    # that cannot be read or compiled stops storing until it is fixed (memtree info names the file).
    rule_files: list[str] = []


class RedactionSettings(BuiltinSettings):
    redaction: Annotated[RuleFilesSection, UserOnly(WHAT_IS_CAPTURED)] = RuleFilesSection()
