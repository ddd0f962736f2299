"""model versions, and the version each reading was read with

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 11:50:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "model_version",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("base_model", sa.String(length=1000), nullable=False),
        sa.Column("adapter_path", sa.String(length=1000), nullable=True),
        sa.Column("engine", sa.String(length=32), nullable=True),
        sa.Column("template_set", sa.String(length=64), nullable=False),
        sa.Column("chunk_tokens", sa.Integer(), nullable=True),
        sa.Column("memory_tokens", sa.Integer(), nullable=True),
        sa.Column("training_run", sa.Text(), nullable=True),
        sa.Column("metrics", sa.JSON(), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_version")),
        sa.UniqueConstraint("name", name=op.f("uq_model_version_name")),
    )
    with op.batch_alter_table("reading", schema=None) as batch_op:
        batch_op.add_column(sa.Column("model_version_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_reading_model_version_id_model_version"), "model_version", ["model_version_id"], ["id"]
        )


def downgrade() -> None:
    with op.batch_alter_table("reading", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_reading_model_version_id_model_version"), type_="foreignkey")
        batch_op.drop_column("model_version_id")
    op.drop_table("model_version")
