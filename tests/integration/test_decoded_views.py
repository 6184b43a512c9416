"""Secrets hidden by an encoding, through the real capture path: a ``memtree serve`` session's daemon, the plugin's
hook command (hooks.json) fed Claude Code payloads on stdin, and the store on disk.  Nothing of a secret may be
in the store's bytes afterwards (database and WAL), nor in what the daemon's ``read`` tool shows."""

from __future__ import annotations

import json
import random
import shutil
import string
import subprocess
from pathlib import Path

import anyio
from helpers.common import wait_for
from helpers.daemon import mcp_session, project_paths, run_async, state_pid, text_of
from helpers.hook import FIXTURES, run_hook

from memtree_core.store import Store

rng = random.Random(20261205)
AN = string.ascii_letters + string.digits


def r(n: int, alphabet: str = AN) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def run(argv: list[str], text: str) -> str | None:
    """What the real tool prints, or None where it is not installed (xxd is its own package on Debian)."""
    if shutil.which(argv[0]) is None:
        return None
    return subprocess.run(argv, input=text.encode(), capture_output=True, check=True).stdout.decode()


def pieces(secret: str) -> list[bytes]:
    n = max(8, len(secret) // 3)
    return [secret[i:i + n].encode() for i in range(len(secret) - n + 1)]


def leaked(data: bytes, secrets: list[str]) -> list[str]:
    """The secrets (or their hex forms) of which a piece a third as long or longer is in ``data``, also
    lower-cased as an FTS index keeps words."""
    low = data.lower()
    return [form for s in secrets for form in (s, s.encode().hex())
            if any(p in data or p.lower() in low for p in pieces(form))]


def cases() -> tuple[list[tuple[str, str]], list[str], str]:
    """(command, what it printed) for each bypass, every secret, and a file with a folded token."""
    ghp, aws, pw = "ghp_" + r(36), "AKIA" + r(16, string.ascii_uppercase + string.digits), r(18)
    ghp2, ghp3 = "ghp_" + r(36), "ghp_" + r(36)
    env = f"GITHUB_TOKEN={ghp}\nAWS_ACCESS_KEY_ID={aws}\n"
    shown = [
        ("echo $GITHUB_TOKEN | fold -w 20", run(["fold", "-w", "20"], f"{ghp}\n")),
        ("cat deploy.log | fold -w 32", run(["fold", "-w", "32"], f"deploy: pushing with {ghp2} as ci-bot\n")),
        ("cat run.sh", f'curl -H "Authorization: token {ghp3[:18]}\\\n{ghp3[18:]}" https://api.github.com/user\n'),
        ("xxd -p .env", run(["xxd", "-p"], env)),
        ("xxd .env", run(["xxd"], env)),
        ("cat token.hex", f"{aws.encode().hex()}\n"),
        ("cat events.json", '{"msg":"push","by":"' + ghp[:9] + f"\\u00{ord(ghp[9]):02x}" + ghp[10:] + '"}\n'),
        ("php -r 'echo json_encode($cfg);'", '{"db":{"url":"mysql:\\/\\/joe:' + pw + '@db.internal:3306\\/shop"}}\n'),
    ]
    folded = run(["fold", "-w", "24"], f"export DEPLOY_TOKEN={ghp2}\n")
    assert folded is not None, "fold is part of coreutils"
    # A case whose tool is missing here is left out; the others still go through the real hook.
    return [(command, out) for command, out in shown if out is not None], [ghp, ghp2, ghp3, aws, pw], folded


def _payload(project: Path, n: int, command: str, stdout: str) -> bytes:
    p = json.loads((FIXTURES / "post-bash.json").read_text())
    p["cwd"] = str(project)
    p["tool_input"]["command"] = command
    p["tool_response"]["stdout"] = stdout
    p["tool_use_id"] = f"toolu_bypass_{n}"
    return json.dumps(p).encode()


def _stored(project: Path) -> int:
    store = Store.open(project_paths(project).store, vectors=False)
    try:
        return store.query("SELECT count(*) FROM nodes WHERE json_extract(metadata, '$.tool') = 'Bash'")[0][0]
    finally:
        store.close()


def test_encoded_secrets_from_the_real_hook_never_reach_the_real_daemons_store(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    shown, secrets, folded = cases()
    (project / "deploy.env").write_text(folded)
    read_out: list[str] = []

    async def main() -> None:
        with anyio.fail_after(120):
            async with mcp_session(project, env) as s:
                daemon_guard.append(state_pid(project))  # type: ignore[arg-type]
                for n, (command, stdout) in enumerate(shown):
                    out = run_hook(_payload(project, n, command, stdout), project)
                    assert out.returncode == 0 and out.stdout == b"", out
                wait_for(lambda: _stored(project) == len(shown), 30, "every capture to be stored")
                result = await s.call_tool("read", {"path": str(project / "deploy.env")})
                assert not result.is_error, result
                read_out.append(text_of(result))

    run_async(main)
    store = Path(project_paths(project).store)
    data = b"".join(p.read_bytes() for p in (store, Path(f"{store}-wal")) if p.exists())
    assert data, "the daemon stored nothing at all"
    assert not leaked(data, secrets), "stored"
    assert "[REDACTED:" in read_out[0] and not leaked(read_out[0].encode(), secrets), read_out[0]
