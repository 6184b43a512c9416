"""Masks and redaction notes shared by the MCP tools (``wrappers``) and the capture pipeline (``capture``).

Not a plugin: it implements no hook, so it is never disabled, and it lives outside
:mod:`memtree_plugins.redaction` so that a redaction plugin that is damaged or left out closes the redaction
gate without taking the tools down with it (they keep answering, and say why nothing is stored).

* :mod:`.environ_files` — a process's environment file shows names only;
* :mod:`.printed_secrets` — the output of ``echo "$API_TOKEN"`` is masked by what the command prints;
* :mod:`.in_context` — a slice of a file, or a grep hit, is redacted in its whole file's context;
* :mod:`.marks` — the sentence that tells the agent which lines memtree redacted.
"""
