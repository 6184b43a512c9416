"""The command denylist: built-in environment dumps and the user's bash.deny regexes."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from memtree_core.hookspecs import hookimpl
from memtree_plugins.redaction.denylist import command_denied, read_deny_file

DUMPS = ["env", "printenv", "printenv AWS_SECRET_ACCESS_KEY", "env -0", "env | grep AWS", "ls && env",
         "make; printenv", "false || env", "echo $(env)", 'echo "$(printenv)"', "echo `env`", "(env)",
         "sudo env", "sudo -u root env", "sudo -E printenv", "/usr/bin/env", "/usr/bin/printenv", "FOO=1 env",
         "env -i", "env -u HOME", "time env", "nohup env &", "export", "export -p", "declare -x", "declare -p",
         "typeset -x", "set", "cat /proc/self/environ", "tr '\\0' '\\n' < /proc/1234/environ", "x\nenv",
         # Shells and eval running a command line of their own, other wrappers, other environ paths.
         "sh -c env", "bash -c printenv", "sh -c 'env'", "bash -lc 'env | sort'", "sudo sh -c 'printenv'",
         "env -i bash -c env", "command -p env", 'eval e""nv', "timeout 5 env", "setsid printenv",
         "cat /proc/$PPID/environ", "cat /proc/thread-self/environ", "cat /proc/self//environ",
         "cd /proc/self && cat environ", "sh -c \"sh -c 'sh -c env'\""]
RUNS = ["env FOO=1 python x.py", "/usr/bin/env python3 script.py", "env -i bash -c 'make'", "env -- ls",
        'env -S "python -u" x.py', "export FOO=1", "declare -x FOO=bar", "declare -f", "set -e", "set -o pipefail",
        'git commit -m "drop env; add printenv"', "echo 'env'", "python -m venv env", "cd env && ls", "ls env/",
        "npm run env", "printenvx", "grep -r environment .", "cat .env.example", "docker compose --env-file x up",
        "bash -c 'echo hi'", "sh script.sh", "git commit -m 'sh -c env'", "eval $(ssh-agent)", "timeout 5 make"]


@pytest.mark.parametrize("command", DUMPS)
def test_environment_dumps_are_denied(tmp_path: Path, command: str):
    reason = command_denied(command, tmp_path / "bash.deny")
    assert reason is not None and reason.startswith("env-dump:")


@pytest.mark.parametrize("command", RUNS)
def test_commands_that_run_a_program_pass(tmp_path: Path, command: str):
    assert command_denied(command, tmp_path / "bash.deny") is None


def test_bash_deny_regexes_comments_and_blank_lines(tmp_path: Path):
    deny = tmp_path / "bash.deny"
    deny.write_text("# secrets tools\n\n^gh auth token\n  aws\\s+sts\\s+  \nvault (read|kv get)\n")
    assert command_denied("gh auth token", deny) == "bash.deny:^gh auth token"
    assert command_denied("aws sts get-session-token", deny) == "bash.deny:aws\\s+sts\\s+"
    assert command_denied("vault kv get secret/x", deny) == "bash.deny:vault (read|kv get)"
    assert command_denied("# secrets tools", deny) is None
    assert command_denied("gh pr list", deny) is None


def test_bad_regex_is_reported_not_fatal(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    deny = tmp_path / "bash.deny"
    deny.write_text("kubectl get secret\nfoo(bar\ncat .*credentials\n")
    loaded = read_deny_file(deny)
    assert [p.pattern for p in loaded.patterns] == ["kubectl get secret", "cat .*credentials"]
    assert len(loaded.errors) == 1 and "bash.deny:2" in loaded.errors[0] and "foo(bar" in loaded.errors[0]
    with caplog.at_level(logging.WARNING, logger="memtree_plugins.redaction.denylist"):
        assert command_denied("cat ~/.aws/credentials", deny) == "bash.deny:cat .*credentials"
    assert any("foo(bar" in rec.getMessage() for rec in caplog.records)
    assert command_denied("ls", deny) is None


def test_missing_or_unreadable_deny_file(tmp_path: Path):
    assert command_denied("ls", tmp_path / "nope" / "bash.deny") is None
    assert read_deny_file(tmp_path / "nope").errors == []
    assert read_deny_file(tmp_path).errors  # a directory cannot be read: reported


# -- the command-policy hook: the built-ins and a plugin's policy, through a real App and the ingest server -----
class _NoTerraformOutput:
    name = "no-terraform-output"

    def check(self, command, app):
        return "acme:terraform-output" if "terraform output" in command else None


class _Broken:
    name = "broken"

    def check(self, command, app):
        raise RuntimeError("boom")


class _PolicyPlugin:
    def __init__(self, *policies):
        self.policies = policies

    @hookimpl
    def memtree_register_command_policies(self, register):
        for policy in self.policies:
            register(policy)


def _bash(command: str) -> dict:
    return {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"toolu_{abs(hash(command))}",
            "session_id": "s1", "tool_input": {"command": command},
            "tool_response": {"stdout": "some output\n", "stderr": "", "interrupted": False}}


def test_a_plugin_policy_runs_before_the_builtins_and_drops_the_capture(home: Path, project: Path) -> None:
    from memtree_core.app import App
    from memtree_core.daemon.ingest import IngestServer, Refused

    app = App.open(project, extra=[("acme", _PolicyPlugin(_NoTerraformOutput()))])
    try:
        assert app.plugins.command_policies.names() == ["no-terraform-output", "env-dump", "bash.deny"]
        app.paths.bash_deny.parent.mkdir(parents=True, exist_ok=True)
        app.paths.bash_deny.write_text("^gh auth token\n")
        assert app.command_denied("printenv") == "env-dump:printenv"
        assert app.command_denied("gh auth token") == "bash.deny:^gh auth token"
        assert app.command_denied("terraform output -json") == "acme:terraform-output"
        server = IngestServer(app)
        with pytest.raises(Refused, match="denied:acme"):
            server.ingest_once(_bash("terraform output -json"))
        assert server.ingest_once(_bash("terraform plan"))[0]  # another command is stored
        assert app.store.counters("capture:accepted:") == {"capture:accepted:Bash": 1}
    finally:
        app.close()


def test_a_policy_that_fails_denies_and_disabling_redaction_stores_nothing(home: Path, project: Path) -> None:
    from memtree_core.app import App

    app = App.open(project, extra=[("broken", _PolicyPlugin(_Broken()))])
    try:
        assert app.command_denied("ls") == "policy-failed:broken"  # fails closed
    finally:
        app.close()
    # The built-in policies live in the redaction plugin: without it nothing is stored at all.
    app = App.open(project, environ={**os.environ, "MEMTREE_DISABLE_PLUGINS": "redaction"})
    try:
        assert app.command_denied("printenv") is None and app.redaction_unavailable
    finally:
        app.close()
