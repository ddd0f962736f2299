"""reviews: the readings of one contract review, grouped

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28 14:55:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["document_id"], ["document.id"], name=op.f("fk_review_document_id_document")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_review")),
    )
    with op.batch_alter_table("review", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_review_document_id"), ["document_id"], unique=False)
    with op.batch_alter_table("reading", schema=None) as batch_op:
        batch_op.add_column(sa.Column("review_id", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_reading_review_id"), ["review_id"], unique=False)
        batch_op.create_foreign_key(batch_op.f("fk_reading_review_id_review"), "review", ["review_id"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("reading", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_reading_review_id_review"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_reading_review_id"))
        batch_op.drop_column("review_id")
    with op.batch_alter_table("review", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_review_document_id"))
    op.drop_table("review")
