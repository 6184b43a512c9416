"""``memtree setup claude-code [--project DIR | --user] [--uninstall]``: wire this install into Claude Code.

It writes what the Claude Code plugin brings, for an install from pip or uv: the MCP server entry (this
install's ``memtree serve`` by its absolute path), the capture and output-shrinking hooks (the scripts
this install carries in ``memtree_plugins/capture/claude-code-hooks``, with the events, matchers and
timeouts of the plugin's own ``hooks.json``) and the ``using-memtree`` skill (``.claude/skills/using-memtree``
of the project, or of the user), which tells the agent when to reach for memtree's tools.  Project scope: ``.mcp.json`` and ``.claude/settings.json`` in
the project; user scope: ``~/.claude.json`` and ``~/.claude/settings.json`` (``$CLAUDE_CONFIG_DIR``
honoured); see :mod:`memtree_core.daemon.claude_settings`.

Every file is merged, never replaced: other keys, servers and hooks stay as they are.  memtree's entries are
known by their shape (the server named ``memtree`` running ``<dir>/memtree serve``; hook commands ending
with the comment ``# added by memtree setup claude-code``), so running it again writes the same thing once,
an install elsewhere replaces the entries of the previous one, and ``--uninstall`` removes exactly those.  A file that is not valid JSON, or whose shape is not Claude Code's, is refused before anything is
written.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from memtree_core.daemon import claude_settings as cs

EXAMPLE = "memtree setup claude-code --project ~/src/myapp"
PROJECT_HELP = ("the project whose .mcp.json and .claude/settings.json get the entries (default: the current "
                "directory)")
SERVER = "memtree"
HOOKS_DIR = Path(__file__).parent / "claude-code-hooks"
SKILL_SOURCE = Path(__file__).parent / "claude-code-skill" / "SKILL.md"  # skills/using-memtree in the checkout
SKILL = "using-memtree"
# Ends the skill file setup writes: what it may replace or remove (a skill of that name without it is the user's).
SKILL_MARK = "<!-- added by memtree setup claude-code -->"
PLUGIN_PREFIX = '"${CLAUDE_PLUGIN_ROOT}"/plugin/hooks/'  # how the plugin's hooks.json names the scripts


def add_arguments(parser: Any) -> None:
    parser.add_argument("client", choices=["claude-code"], help="the agent to wire memtree into")
    parser.add_argument("--user", action="store_true",
                        help="write your user settings instead of a project's: ~/.claude.json (MCP server) "
                             "and ~/.claude/settings.json (hooks), under $CLAUDE_CONFIG_DIR when set; every "
                             "project you open in Claude Code then gets memtree")
    parser.add_argument("--uninstall", action="store_true", help="remove exactly the entries setup writes")


# -- what this install writes --------------------------------------------------------------------------------
def memtree_command() -> tuple[str, list[str]]:
    """``(command, args)`` that start this install's ``memtree serve``, by absolute path."""
    import sysconfig

    argv0 = sys.argv[0]
    if os.path.basename(argv0) == "memtree" and os.path.isfile(argv0) and os.access(argv0, os.X_OK):
        return os.path.abspath(argv0), ["serve"]
    dirs = [sysconfig.get_path("scripts")]
    try:
        dirs.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    except KeyError:
        pass
    for d in [*dirs, os.path.dirname(sys.executable)]:
        path = os.path.join(d, "memtree")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path, ["serve"]
    return sys.executable, ["-m", "memtree_core.cli", "serve"]


def memtree_command_argv() -> list[str]:
    """This install's memtree as an argv without its subcommand (``[".../memtree"]`` or ``[python, "-m", ...]``)."""
    command, args = memtree_command()
    return [command, *args[:-1]]  # every form ends with "serve"


def server_entry() -> dict[str, Any]:
    # Claude Code starts it in the session's directory with $CLAUDE_PROJECT_DIR set, which `memtree serve`
    # takes as the project (as the hooks do): one entry serves every project, in either scope.
    command, args = memtree_command()
    return {"type": "stdio", "command": command, "args": args, "env": {}}


def is_our_server(entry: Any) -> bool:
    """An entry this command writes (from any install): nothing else is replaced or removed."""
    if not isinstance(entry, dict) or not set(entry) <= {"type", "command", "args", "env"}:
        return False
    command, args = entry.get("command"), entry.get("args")
    if entry.get("type", "stdio") != "stdio" or not isinstance(command, str) or not os.path.isabs(command):
        return False
    if entry.get("env", {}) != {}:
        return False
    return ((os.path.basename(command) == "memtree" and args == ["serve"])
            or args == ["-m", "memtree_core.cli", "serve"])


def hook_groups() -> dict[str, list[dict[str, Any]]]:
    """The plugin's hooks (plugin/hooks/hooks.json, the same file here), pointed at this install's scripts."""
    import shlex

    try:
        template = json.loads((HOOKS_DIR / "hooks.json").read_text())["hooks"]
    except (OSError, ValueError, KeyError) as exc:
        raise _error(f"this install lacks its hook scripts ({HOOKS_DIR}: {exc}); reinstall memtree-mcp") \
            from None
    out: dict[str, list[dict[str, Any]]] = {}
    for event, groups in template.items():
        for group in groups:
            hooks = []
            for hook in group["hooks"]:
                name = hook["command"].removeprefix(PLUGIN_PREFIX)
                script = HOOKS_DIR / name
                if not os.access(script, os.R_OK):
                    raise _error(f"this install lacks the hook script {script}; reinstall memtree-mcp")
                # through sh: the script needs no executable bit (an installer may drop it); the digest is
                # told which memtree to ask (this install's), as the plugin's finds its own
                extra = "".join(f" {shlex.quote(a)}" for a in memtree_command_argv()) if name == "digest" else ""
                hooks.append({**hook, "command": f"/bin/sh {shlex.quote(str(script))}{extra} {cs.SETUP_MARK}"})
            out.setdefault(event, []).append({**group, "hooks": hooks})
    return out


def _error(message: str) -> Exception:
    from memtree_core.errors import UsageError

    return UsageError(message)


# -- merging -------------------------------------------------------------------------------------------------
def merge_server(doc: dict[str, Any], path: Path, uninstall: bool) -> dict[str, Any]:
    servers = doc.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise _error(f"{path}: \"mcpServers\" is not an object, as Claude Code expects; fix it, then run "
                     f"this again (nothing was changed)")
    current = servers.get(SERVER)
    if current is not None and not is_our_server(current):
        if uninstall:
            return doc  # not ours: left as it is
        raise _error(f"{path} already has an MCP server named {SERVER!r} that setup did not write "
                     f"({json.dumps(current)[:200]}); remove or rename it, then run this again (nothing was "
                     f"changed)")
    new = {k: v for k, v in servers.items() if k != SERVER}
    if not uninstall:
        new[SERVER] = server_entry()
    out = dict(doc)
    if new or "mcpServers" in doc and SERVER not in servers:
        out["mcpServers"] = new
    else:
        out.pop("mcpServers", None)  # it held only memtree's
    return out


def merge_hooks(doc: dict[str, Any], path: Path, uninstall: bool) -> dict[str, Any]:
    hooks = doc.get("hooks", {})
    template = hook_groups()
    ours = {} if uninstall else template
    if not isinstance(hooks, dict):
        raise _error(f"{path}: \"hooks\" is not an object, as Claude Code expects; fix it, then run this "
                     f"again (nothing was changed)")
    new: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            if event in template:
                raise _error(f"{path}: hooks.{event} is not a list, as Claude Code expects; fix it, then run "
                             f"this again (nothing was changed)")
            new[event] = groups
            continue
        kept = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept.append(group)
                continue
            left = [h for h in handlers if not _our_hook(h)]
            if left or not handlers:
                kept.append(group if len(left) == len(handlers) else {**group, "hooks": left})
        if kept or not groups:
            new[event] = kept
    for event, groups in ours.items():
        new[event] = [*new.get(event, []), *groups]
    out = dict(doc)
    if new or "hooks" in doc and not hooks:
        out["hooks"] = new
    else:
        out.pop("hooks", None)  # it held only memtree's
    return out


def _our_hook(hook: Any) -> bool:
    command = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(command, str) and command.rstrip().endswith(cs.SETUP_MARK)


# -- files ---------------------------------------------------------------------------------------------------
def _load(path: Path) -> tuple[dict[str, Any], str | None]:
    value, problem = cs.read_json(path)
    if problem:
        raise _error(f"{problem}; fix or remove it, then run this again (nothing was changed)")
    if not isinstance(value, dict):
        raise _error(f"{path} holds a JSON {type(value).__name__}, not the object Claude Code expects; fix "
                     f"it, then run this again (nothing was changed)")
    try:
        text: str | None = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = None
    return value, text


def _indent(text: str | None) -> str | int | None:
    """The file's own indentation (of its first nested line; None for a file on one line), so a merge changes
    only what it must."""
    import re

    if text and "\n" not in text.strip():
        return None
    m = re.match(r"\{[ \t]*\r?\n([ \t]+)\S", text or "")
    return m.group(1) if m else 2


def _write(path: Path, value: dict[str, Any], old_text: str | None, private: bool) -> None:
    target = Path(os.path.realpath(path))  # through a link (dotfiles managers), never replacing the link
    target.parent.mkdir(parents=True, exist_ok=True)
    indent = _indent(old_text)
    before = old_text or ""
    newline = "\n" if not before.strip() or before.endswith("\n") else ""
    text = json.dumps(value, indent=indent, ensure_ascii=False) + newline
    try:
        mode = target.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600 if private else 0o644
    tmp = target.with_name(f".{target.name}.memtree-{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def run(args: Any) -> int:
    if args.user and args.project:
        raise _error("--user writes your user settings and --project a project's: give one of them")
    environ = os.environ
    if args.user:
        mcp, settings = cs.user_state(environ), cs.user_settings(environ)
    else:
        root = Path(args.project or os.getcwd()).absolute()
        mcp, settings = cs.project_mcp(root), cs.project_settings(root)[0]
    uninstall = bool(args.uninstall)
    plan = []
    for path, merge in ((mcp, merge_server), (settings, merge_hooks)):  # all checked before a byte is written
        old, text = _load(path)
        plan.append((path, old, text, merge(old, path, uninstall)))
    print(sync_skill(settings.parent / "skills" / SKILL / "SKILL.md", uninstall))  # before .claude may go
    for path, old, text, new in plan:
        what = "the MCP server" if path == mcp else "the capture and output-shrinking hooks"
        if new == old and (text is not None or uninstall):
            state = "nothing of memtree's" if uninstall else "already set up"
            print(f"{path}: {state} ({what}), unchanged")
            continue
        if uninstall and not new and path != cs.user_state(environ):
            path.unlink()  # it held nothing but what setup wrote
            if path.parent.name == ".claude" and not args.user:
                try:
                    path.parent.rmdir()  # the project's .claude, when setup's file was all it held
                except OSError:
                    pass
            print(f"{path}: removed {what}; the file held nothing else and is deleted")
            continue
        _write(path, new, text, private=path == cs.user_state(environ))
        print(f"{path}: {'removed' if uninstall else 'wrote'} {what}")
    if not uninstall:
        _notes(plan, mcp, environ, args.user)
    return 0


def skill_text() -> str:
    try:
        text = SKILL_SOURCE.read_text(encoding="utf-8")
    except OSError as exc:
        raise _error(f"this install lacks its skill ({SKILL_SOURCE}: {exc}); reinstall memtree-mcp") from None
    return f"{text.rstrip()}\n\n{SKILL_MARK}\n"


def sync_skill(path: Path, uninstall: bool) -> str:
    """Write (or remove) the skill file setup owns; one line saying what was done.  A file of that name
    without :data:`SKILL_MARK` is the user's own and stays as it is."""
    try:
        current: str | None = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = None
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path}: left as it is (the {SKILL} skill): it cannot be read ({exc})"
    ours = current is not None and current.rstrip().endswith(SKILL_MARK)
    if current is not None and not ours:
        return f"{path}: left as it is: a {SKILL} skill setup did not write"
    if uninstall:
        if not ours:
            return f"{path}: nothing of memtree's (the {SKILL} skill), unchanged"
        path.unlink()
        for folder in (path.parent, path.parent.parent):  # skills/using-memtree, then skills, when left empty
            try:
                folder.rmdir()
            except OSError:
                break
        return f"{path}: removed the {SKILL} skill"
    text = skill_text()
    if current == text:
        return f"{path}: already set up (the {SKILL} skill), unchanged"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.memtree-{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return f"{path}: wrote the {SKILL} skill"


def _notes(plan: list[Any], mcp: Path, environ: Any, user: bool) -> None:
    command = plan[0][3]["mcpServers"][SERVER]
    print(f"MCP server {SERVER!r}: {' '.join([command['command'], *command['args']])}")
    print(f"hooks: {HOOKS_DIR}/capture (PostToolUse, PostToolUseFailure; async), {HOOKS_DIR}/replace "
          f"(PostToolUse; shrinks long outputs when capture.replace is on) and {HOOKS_DIR}/digest (SessionStart; "
          f"a digest of recent work, digest.maxTokens)")
    if "/uv/archive-v" in command["command"] or "/.cache/uv/" in command["command"]:
        print("note: this memtree runs from uv's cache (uvx), which `uv cache clean` removes; "
              "`uv tool install memtree-mcp` gives it a lasting path")
    root = None if user else mcp.parent
    sources = [cs.user_settings(environ), *([] if root is None else cs.project_settings(root))]
    for source in sources:
        value, _ = cs.read_json(source)
        plugin = cs.plugin_enabled(value)
        if plugin:
            print(f"note: the memtree plugin ({plugin}) is enabled in {source} and runs these hooks too, so "
                  f"each call would be captured twice: disable the plugin, or run 'memtree setup claude-code "
                  f"--uninstall{' --user' if user else ''}'", file=sys.stderr)
    print("Restart Claude Code to load them" + ("" if user else "; it asks once to approve the project's "
                                                "MCP server from .mcp.json"))
