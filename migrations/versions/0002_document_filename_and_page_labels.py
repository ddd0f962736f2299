"""document filename and page labels

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 19:51:53.556554
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Documents stored before this revision get no labels ('[]'); the app then numbers their pages.
    with op.batch_alter_table("document", schema=None) as batch_op:
        batch_op.add_column(sa.Column("filename", sa.String(length=300), nullable=True))
        batch_op.add_column(sa.Column("page_labels", sa.JSON(), nullable=False, server_default=sa.text("'[]'")))


def downgrade() -> None:
    with op.batch_alter_table("document", schema=None) as batch_op:
        batch_op.drop_column("page_labels")
        batch_op.drop_column("filename")
