"""An example plugin for ``memtree_register_command_policies`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl


class NoTerraformOutput:
    name = "no-terraform-output"

    def check(self, command, app):
        return "acme:terraform-output" if "terraform output" in command else None


@hookimpl
def memtree_register_command_policies(register):
    register(NoTerraformOutput())
