"""Built-in selectors, what to keep of a long output when memtree shrinks it to a budget, and the built-in
output replacer ``slice`` that uses them (:mod:`.replace`).

``slice`` picks, for each replaced output, the first matching selector in precedence order
(``Registry.ranked``: the highest ``priority``, then pluggy's call order, so a third-party plugin wins over
a built-in at equal priority; within this plugin, the order below).  The built-ins: ``generic`` (head, error
lines, tail; matches everything, priority 0) and, at
priority 10, ``pytest``, ``cargo``, ``node`` (npm/jest/vitest/tsc), ``git-log`` and ``grep``.
A plugin adds its own through ``memtree_register_selectors``; ``memtree_plugins.selectors.lines`` has the
budgeted line assembler they share.

``capture.replace`` (off by default) is this plugin's setting (:mod:`.settings`): when on, the daemon's start
writes the flag that makes the synchronous hook ask (:func:`memtree_core.daemon.replacing.turn_on`) and warms the
replacer up.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import BuiltinSettings
from memtree_core.registry import Register
from memtree_core.types import OutputReplacer, Selector

if TYPE_CHECKING:
    from memtree_core.context import Context


@hookimpl(trylast=True)
def memtree_settings_model() -> type[BuiltinSettings]:
    # ``capture.replace``: memtree_plugins.selectors.settings
    from memtree_plugins.selectors.settings import SelectorsSettings

    return SelectorsSettings


@hookimpl(trylast=True)
def memtree_register_selectors(register: Register[Selector]) -> None:
    from memtree_plugins.selectors.generic import GenericSelector
    from memtree_plugins.selectors.gitlog import GitLogSelector
    from memtree_plugins.selectors.grep import GrepSelector
    from memtree_plugins.selectors.node import NodeSelector
    from memtree_plugins.selectors.pytest import PytestSelector
    from memtree_plugins.selectors.rust import CargoSelector

    # At equal priority the first registered wins: grep before git-log before the test runners, so
    # `git log | grep x` and `npm test | grep FAIL` get the grep selector.
    for selector in (GrepSelector(), GitLogSelector(), NodeSelector(), CargoSelector(), PytestSelector(),
                     GenericSelector()):
        register(selector)


@hookimpl(trylast=True)
def memtree_register_output_replacers(register: Register[OutputReplacer]) -> None:
    from memtree_plugins.selectors.replace import SliceReplacer

    register(SliceReplacer())


@hookimpl(trylast=True)
def memtree_daemon_started(app: Context) -> None:
    # capture.replace is this plugin's switch: the host removed any flag an earlier daemon left, and the hook
    # asks for a replacement only once the flag is written here (none while this plugin is disabled).
    from memtree_plugins.selectors.settings import replace_settings

    settings = replace_settings(app)
    if not settings.enabled:
        return
    from memtree_core.daemon.replacing import turn_on
    from memtree_plugins.selectors.replace import warm_up

    # The first replacement must not pay for opening the store and compiling the redaction rules: the
    # synchronous hook waits for it at most capture.replace.timeoutMs.
    threading.Thread(target=warm_up, args=(app,), name="memtree-replace-warmup", daemon=True).start()
    turn_on(app, settings.timeout_ms)
