"""`longread users`: list, add, set-role, set-password, disable, enable."""

from __future__ import annotations

import argparse
import json
import sys

from app.cli.common import add_sub_json, local_admin, migrate_db
from app.settings import Settings


def _read_password(prompt: str) -> str:
    """A password from standard input: asked for without echo (twice) on a terminal, else its first line."""
    import getpass

    if sys.stdin.isatty():
        first = getpass.getpass(prompt)
        if getpass.getpass("Again: ") != first:
            raise SystemExit("longread users: the two passwords differ")
        return first
    return sys.stdin.readline().rstrip("\r\n")


def cmd_users(settings: Settings, args: argparse.Namespace) -> int:
    """Users: add (password from standard input), list, set-role, set-password, disable, enable."""
    from dataclasses import asdict

    from app.services import users
    from app.services.errors import NotFound

    migrate_db(settings)
    me = local_admin(settings)
    try:
        if args.users_command == "add":
            u = users.add_user(settings, args.name, _read_password(f"Password for {args.name}: "), args.role, user=me)
            print(f"user {u.id} {u.username!r} added ({u.role})")
        elif args.users_command == "set-role":
            u = users.update_user(settings, users.find_user(settings, args.name, user=me).id, role=args.role, user=me)
            print(f"{u.username} is now {u.role}")
        elif args.users_command == "set-password":
            target = users.find_user(settings, args.name, user=me)
            users.update_user(settings, target.id, password=_read_password(f"New password for {args.name}: "), user=me)
            print(f"password of {target.username} changed (their sessions and tokens end)")
        elif args.users_command in ("disable", "enable"):
            u = users.update_user(
                settings,
                users.find_user(settings, args.name, user=me).id,
                disabled=args.users_command == "disable",
                user=me,
            )
            print(f"{u.username} is {'disabled' if u.disabled else 'enabled'}")
        else:
            listed = users.list_users(settings, me)
            if args.json:
                print(
                    json.dumps(
                        {
                            "users": [
                                {**asdict(u), "created_at": u.created_at.isoformat() if u.created_at else None}
                                for u in listed
                            ]
                        }
                    )
                )
            else:
                for u in listed:
                    state = "disabled" if u.disabled else "active"
                    print(
                        f"{u.id:>4}  {u.username:<24} {u.role:<7} {state}"
                        + ("" if u.has_password else "  (no password: cannot sign in)")
                    )
    except (users.UserError, NotFound) as exc:
        raise SystemExit(f"longread users: {exc}") from None
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """users"""
    us = sub.add_parser(
        "users",
        help="users: list, add, set-role, set-password, disable, enable",
        description="Without a subcommand: list users. Passwords are read from standard input "
        "(asked for without echo on a terminal).",
    )
    us.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    us.set_defaults(func=cmd_users, users_command=None)
    us_sub = us.add_subparsers(dest="users_command")
    us_list = us_sub.add_parser("list", help="every user")
    add_sub_json(us_list)
    us_add = us_sub.add_parser("add", help="add a user; the password is read from standard input")
    us_add.add_argument("name", help="the user's sign-in name")
    us_add.add_argument(
        "--role",
        choices=["reader", "admin"],
        default="reader",
        help="reader (their own documents) or admin (every document, training, users); default reader",
    )
    us_role = us_sub.add_parser("set-role", help="make a user a reader or an admin")
    us_role.add_argument("name", help="the user's sign-in name")
    us_role.add_argument("role", choices=["reader", "admin"], help="the new role")
    us_pw = us_sub.add_parser("set-password", help="a new password, read from standard input")
    us_pw.add_argument("name", help="the user's sign-in name")
    for verb, text in (
        ("disable", "the user can no longer sign in; their sessions and tokens stop working"),
        ("enable", "undo disable"),
    ):
        us_sub.add_parser(verb, help=text).add_argument("name", help="the user's sign-in name")
