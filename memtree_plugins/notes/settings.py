"""The notes plugin's settings: ``digest.maxTokens``, the session-start digest's budget (your own config only:
a repository does not decide what is put into every session's context)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from memtree_core.plugin_settings import BuiltinSettings, Section


class Digest(Section):
    # tokens the session-start digest may take; 0 turns it off
    max_tokens: Annotated[int, Field(ge=0, le=4000)] = 400


class NotesSettings(BuiltinSettings):
    digest: Digest = Digest()
