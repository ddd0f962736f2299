"""What the admins' pages act with: the settings and the signed-in user (`me`), whom every service call
passes so that the services refuse a reader who reaches these handlers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.services.errors import NotFound
from app.services.users import UserView
from app.settings import Settings

#: the services' refusals, shown on the page (RunError and UserError are ValueErrors, Forbidden a PermissionError)
REFUSED = (NotFound, ValueError, PermissionError)


@dataclass(frozen=True)
class Admin:
    settings: Settings
    me: Callable[[], UserView | None]

    def is_admin(self) -> bool:
        """For the few calls that take no user (the estimate); None is the local admin (embedded mode)."""
        who = self.me()
        return who is None or who.is_admin
