"""Built-in redaction: the environment-dump rule (:mod:`.envdump`), then every rule of
:mod:`memtree_plugins.redaction.rules`, one by one.

Each rule is registered under its own name, so a third-party plugin can ``register.remove("<name>")`` a
single built-in rule, or ``register(rule, replaces=True)`` to swap in its own version of it.  The rule set
is versioned (``RULESET_VERSION``) so an audit can say which rules a store was written under.

Also the command policies (:mod:`.denylist`): ``env-dump`` and the user's ``bash.deny``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtree_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from memtree_core.registry import Register
    from memtree_core.types import CommandPolicy, RedactionRule


@hookimpl(trylast=True)
def memtree_register_redaction_rules(register: Register[RedactionRule]) -> None:
    from memtree_plugins.redaction.dense import DenseLines
    from memtree_plugins.redaction.envdump import EnvDumpRule
    from memtree_plugins.redaction.rules import RULES

    # Before all: a hostile line no rule could judge in time is replaced whole (dense.py).
    register(DenseLines())
    # Then, so a dump's values are replaced whole before any shape rule cuts into them.
    register(EnvDumpRule())
    for rule in RULES:
        register(rule)


@hookimpl(trylast=True)
def memtree_register_command_policies(register: Register[CommandPolicy]) -> None:
    from memtree_plugins.redaction.denylist import EnvDumpPolicy, UserDenyPolicy

    register(EnvDumpPolicy())
    register(UserDenyPolicy())
