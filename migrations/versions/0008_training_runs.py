"""training runs started from the app (issue 12)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "training_run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "queued",
                "running",
                "cancelling",
                "cancelled",
                "failed",
                "done",
                name="runstatus",
                native_enum=False,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("selection", sa.JSON(), nullable=False),
        sa.Column("run_dir", sa.String(length=1000), nullable=False),
        sa.Column("start_version_id", sa.Integer(), nullable=True),
        sa.Column("version_id", sa.Integer(), nullable=True),
        sa.Column("created_by_id", sa.Integer(), nullable=True),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("total_steps", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("estimate_s", sa.Double(), nullable=True),
        sa.Column("evaluation", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["created_by_id"],
            ["user_account.id"],
            name=op.f("fk_training_run_created_by_id_user_account"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["start_version_id"],
            ["model_version.id"],
            name=op.f("fk_training_run_start_version_id_model_version"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["model_version.id"],
            name=op.f("fk_training_run_version_id_model_version"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_training_run")),
    )
    with op.batch_alter_table("training_run", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_training_run_status"), ["status"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("training_run", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_training_run_status"))
    op.drop_table("training_run")
