"""worker heartbeat and engine state

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 11:40:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "worker",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("engine", sa.String(length=32), nullable=False),
        sa.Column("engine_state", sa.String(length=16), nullable=False),
        sa.Column("engine_detail", sa.Text(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_worker")),
    )
    with op.batch_alter_table("worker", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_worker_heartbeat_at"), ["heartbeat_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("worker", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_worker_heartbeat_at"))
    op.drop_table("worker")
