"""Built-in redaction: the environment-dump rule (:mod:`.envdump`), then every rule of
:mod:`memtree_plugins.redaction.rules`, one by one, then the secret catalogue (:mod:`.catalogue`: gitleaks'
default rules plus the user's ``redaction.ruleFiles``, rule ``gitleaks``, marks tagged with each rule's id; its
scan, ``gitleaks-scan``, runs before the rules that change text), then bare random tokens (:mod:`.entropy`);
before them all, the decoded views (:mod:`.views`), which run every registered rule again on folded,
continued, hex-encoded and escaped text.

Each rule is registered under its own name, so a third-party plugin can ``register.remove("<name>")`` a
single built-in rule, or ``register(rule, replaces=True)`` to swap in its own version of it.  The rule set
is versioned (``RULESET_VERSION``) so an audit can say which rules a store was written under.

Also the command policies (:mod:`.denylist`): ``env-dump`` and the user's ``bash.deny``; and ``memtree redact``
(:mod:`.command`), which shows what these rules leave of a file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtree_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from memtree_core.command import Command
    from memtree_core.plugin_settings import BuiltinSettings
    from memtree_core.registry import Register
    from memtree_core.types import CommandPolicy, RedactionRule


@hookimpl(trylast=True)
def memtree_register_redaction_rules(register: Register[RedactionRule]) -> None:
    from memtree_plugins.redaction import entropy
    from memtree_plugins.redaction.catalogue.matcher import CatalogueRule
    from memtree_plugins.redaction.dense import DenseLines
    from memtree_plugins.redaction.envdump import EnvDumpRule
    from memtree_plugins.redaction.rules import RULES
    from memtree_plugins.redaction.views import DecodedViews

    catalogue = CatalogueRule()
    # Before all (its priority): a hostile line no rule could judge in time is replaced whole (dense.py).
    register(DenseLines())
    # Then (its priority) the decoded views, over every rule the project registers (configure() hands it them).
    register(DecodedViews())
    # The catalogue finds its secrets in the text as it comes in (before any rule cuts into them) and
    # redacts them after memtree's context rules, which keep more of the line (matcher.CatalogueScan).
    register(catalogue.scanner())
    # First of the rules that change text, so a dump's values are replaced whole before any shape rule cuts
    # into them.
    register(EnvDumpRule())
    for rule in RULES:
        register(rule)
    register(catalogue)
    # Last: a bare random token only when no rule that knows its shape or its context took it first.
    register(entropy.RULE)


@hookimpl(trylast=True)
def memtree_settings_model() -> type[BuiltinSettings]:
    # ``redaction.ruleFiles``: memtree_plugins.redaction.settings
    from memtree_plugins.redaction.settings import RedactionSettings

    return RedactionSettings


@hookimpl(trylast=True)
def memtree_register_command_policies(register: Register[CommandPolicy]) -> None:
    from memtree_plugins.redaction.denylist import EnvDumpPolicy, UserDenyPolicy

    register(EnvDumpPolicy())
    register(UserDenyPolicy())


@hookimpl(trylast=True)
def memtree_register_commands(register: Register[Command]) -> None:
    from memtree_core.command import Command

    register(Command("redact", "what memtree would store for a file or stdin (--explain: each span)",
                     "memtree_plugins.redaction.command"))
