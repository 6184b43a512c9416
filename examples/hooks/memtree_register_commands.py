"""An example plugin for ``memtree_register_commands`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.command import Command
from memtree_core.hookspecs import hookimpl


class Hello:
    EXAMPLE = "memtree hello --name Ada"

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)

    def run(self, args):
        print(f"hello {args.name}")
        return 0


@hookimpl
def memtree_register_commands(register):
    register(Command("hello", "greet someone", Hello()))
