"""branches: a reading resumed from an edited checkpoint of another

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 15:45:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("reading", schema=None) as batch_op:
        batch_op.add_column(sa.Column("parent_reading_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("branched_at_step", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_reading_parent_reading_id"), ["parent_reading_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_reading_parent_reading_id_reading"), "reading", ["parent_reading_id"], ["id"]
        )
    with op.batch_alter_table("checkpoint", schema=None) as batch_op:
        batch_op.add_column(sa.Column("edited_by", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("checkpoint", schema=None) as batch_op:
        batch_op.drop_column("edited_by")
    with op.batch_alter_table("reading", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_reading_parent_reading_id_reading"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_reading_parent_reading_id"))
        batch_op.drop_column("branched_at_step")
        batch_op.drop_column("parent_reading_id")
