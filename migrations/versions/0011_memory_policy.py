"""model_version.memory_policy and reading.memory_policy: generative (the model rewrites its memory) or extractive
(the best-scored sentences kept verbatim); every row so far was generative

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06 03:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

TABLES = ("model_version", "reading")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("memory_policy", sa.String(16), nullable=False, server_default="generative"))


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("memory_policy")
