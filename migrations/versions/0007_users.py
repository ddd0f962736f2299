"""users: readers and admins; every document has an owner

Existing documents (and so their readings, checkpoints, branches and feedback) are given to the local
admin `local`, created here: the user the embedded mode and the CLI act as. It has no password (it
cannot sign in until it is given one: `longread users set-password local`, or PATCH /api/users/{id}).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 18:30:00
"""

from datetime import datetime, timezone

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    users = op.create_table(
        "user_account",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=True),
        sa.Column("role", sa.Enum("reader", "admin", name="role", native_enum=False, length=16), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_account")),
        sa.UniqueConstraint("username", name=op.f("uq_user_account_username")),
    )
    op.bulk_insert(
        users,
        [
            {
                "username": "local",
                "password_hash": None,
                "role": "admin",
                "disabled": False,
                "created_at": datetime.now(timezone.utc),
            }
        ],
    )
    with op.batch_alter_table("document", schema=None) as batch_op:
        batch_op.add_column(sa.Column("owner_id", sa.Integer(), nullable=True))
    op.execute("UPDATE document SET owner_id = (SELECT id FROM user_account WHERE username = 'local')")
    with op.batch_alter_table("document", schema=None) as batch_op:
        batch_op.alter_column("owner_id", existing_type=sa.Integer(), nullable=False)
        batch_op.create_index(batch_op.f("ix_document_owner_id"), ["owner_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_document_owner_id_user_account"), "user_account", ["owner_id"], ["id"]
        )


def downgrade() -> None:
    with op.batch_alter_table("document", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_document_owner_id_user_account"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_document_owner_id"))
        batch_op.drop_column("owner_id")
    op.drop_table("user_account")
