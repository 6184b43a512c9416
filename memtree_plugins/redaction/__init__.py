"""Built-in redaction: the environment-dump rule (:mod:`.envdump`), then every rule of
:mod:`memtree_plugins.redaction.rules`, one by one, then the secret catalogue (:mod:`.catalogue`: gitleaks'
default rules plus the user's ``redaction.ruleFiles``, rule ``gitleaks``, marks tagged with each rule's id).

Each rule is registered under its own name, so a third-party plugin can ``register.remove("<name>")`` a
single built-in rule, or ``register(rule, replaces=True)`` to swap in its own version of it.  The rule set
is versioned (``RULESET_VERSION``) so an audit can say which rules a store was written under.

Also the command policies (:mod:`.denylist`): ``env-dump`` and the user's ``bash.deny``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtree_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from memtree_core.plugin_settings import BuiltinSettings
    from memtree_core.registry import Register
    from memtree_core.types import CommandPolicy, RedactionRule


@hookimpl(trylast=True)
def memtree_register_redaction_rules(register: Register[RedactionRule]) -> None:
    from memtree_plugins.redaction.catalogue.matcher import CatalogueRule
    from memtree_plugins.redaction.envdump import EnvDumpRule
    from memtree_plugins.redaction.rules import RULES

    catalogue = CatalogueRule()
    # The catalogue finds its secrets in the text as it comes in (before any rule cuts into them) and
    # redacts them last, after memtree's context rules, which keep more of the line (matcher.CatalogueScan).
    register(catalogue.scanner())
    # First of the rules that change text, so a dump's values are replaced whole before any shape rule cuts
    # into them.
    register(EnvDumpRule())
    for rule in RULES:
        register(rule)
    register(catalogue)


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
