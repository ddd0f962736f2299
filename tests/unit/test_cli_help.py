"""Every option of every `longread` command says what it does in `--help` (issue 37: `ask --help` had none)."""

from __future__ import annotations

import argparse

from app.cli import build_parser


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("longread",)):
    """(command path, parser) for the parser and every subcommand under it, however deep."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


def test_every_option_of_every_command_has_help():
    commands = list(_commands(build_parser()))
    assert len(commands) > 15 and ("longread", "ask") in [path for path, _ in commands]
    missing = [
        f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}"
        for path, parser in commands
        for action in parser._actions
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
        and (not action.help or action.help == argparse.SUPPRESS)
    ]
    assert not missing, "options without help text: " + ", ".join(missing)


def test_every_command_has_help_in_its_parents_list():
    parser = build_parser()
    missing = [
        " ".join(path)
        for path, p in _commands(parser)
        for action in p._actions
        if isinstance(action, argparse._SubParsersAction)
        for choice in action._choices_actions
        if not choice.help
        for path in [(*path, choice.dest)]
    ]
    assert not missing, "commands without help text: " + ", ".join(missing)
