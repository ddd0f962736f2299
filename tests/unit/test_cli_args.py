"""A command's own options hold under its subcommands: `longread documents --json list` prints JSON as
`documents list --json` does (a subcommand's default of --json used to override the command's)."""

from __future__ import annotations

import argparse

from app.cli import build_parser
from tests.unit.test_cli_help import _commands


def _positionals(parser: argparse.ArgumentParser) -> list[str]:
    """A value for each required positional argument: its first choice, else 1 (an id)."""
    return [
        str(a.choices[0]) if a.choices else "1"
        for a in parser._actions
        if not a.option_strings and not isinstance(a, argparse._SubParsersAction) and a.nargs is None
    ]


def _subcommands(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def test_a_commands_json_flag_holds_under_each_of_its_subcommands():
    parser = build_parser()
    checked = []
    for path, command in _commands(parser):
        if "--json" not in command._option_string_actions:
            continue
        for name, sub in _subcommands(command):
            argv = [*path[1:], "--json", name, *_positionals(sub)]
            assert parser.parse_args(argv).json is True, " ".join(argv)
            assert parser.parse_args([*path[1:], name, *_positionals(sub)]).json is False, " ".join(argv)
            if "--json" in sub._option_string_actions:
                assert parser.parse_args([*path[1:], name, *_positionals(sub), "--json"]).json is True
            checked.append(" ".join(path[1:] + (name,)))
    assert {"documents list", "documents delete", "users list", "runs cancel", "models add"} <= set(checked)
