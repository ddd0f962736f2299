"""worker.engine_since: when its engine entered its state (a version activated later starts then)

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 18:50:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("worker", schema=None) as batch_op:
        batch_op.add_column(sa.Column("engine_since", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("worker", schema=None) as batch_op:
        batch_op.drop_column("engine_since")
