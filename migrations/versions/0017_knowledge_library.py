"""the bank's help-centre library: articles, their versions (drafts, live, retired) and passages

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "knowledge_articles",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("tenant_id", sa.BigInteger(), nullable=False),
        sa.Column("slug", sa.String(length=100), nullable=False),
        sa.Column("locale", sa.String(length=8), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("locale IN ('en', 'zh-CN')", name=op.f("ck_knowledge_articles_locale")),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_knowledge_articles_tenant_id_tenants"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_articles")),
        sa.UniqueConstraint("tenant_id", "id", name=op.f("uq_knowledge_articles_tenant_id_id")),
        sa.UniqueConstraint("tenant_id", "slug", "locale", name=op.f("uq_knowledge_articles_tenant_id_slug_locale")),
    )
    op.create_table(
        "knowledge_versions",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("tenant_id", sa.BigInteger(), nullable=False),
        sa.Column("article_id", sa.BigInteger(), nullable=False),
        sa.Column("locale", sa.String(length=8), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("tags", postgresql.ARRAY(sa.String(length=100)), server_default=sa.text("'{}'"), nullable=False),
        sa.Column("questions", postgresql.ARRAY(sa.String(length=300)), server_default=sa.text("'{}'"), nullable=False),
        sa.Column("status", sa.String(length=8), nullable=False),
        sa.Column("author", sa.String(length=200), nullable=False),
        sa.Column("approved_by", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("approved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("search", postgresql.TSVECTOR(), nullable=False),
        sa.CheckConstraint("status IN ('draft', 'live', 'retired')", name=op.f("ck_knowledge_versions_status")),
        sa.CheckConstraint("version > 0", name=op.f("ck_knowledge_versions_version")),
        sa.CheckConstraint(
            "approved_by IS NULL OR approved_by <> author", name=op.f("ck_knowledge_versions_four_eyes")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "article_id"],
            ["knowledge_articles.tenant_id", "knowledge_articles.id"],
            name=op.f("fk_knowledge_versions_tenant_id_knowledge_articles"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_versions")),
        sa.UniqueConstraint("article_id", "version", name=op.f("uq_knowledge_versions_article_id_version")),
    )
    op.create_index(
        "uq_knowledge_versions_live",
        "knowledge_versions",
        ["article_id"],
        unique=True,
        postgresql_where=sa.text("status = 'live'"),
    )
    op.create_index("ix_knowledge_versions_search", "knowledge_versions", ["search"], postgresql_using="gin")
    op.create_index(
        "ix_knowledge_versions_tenant_id_locale_status", "knowledge_versions", ["tenant_id", "locale", "status"]
    )
    op.create_table(
        "knowledge_passages",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("version_id", sa.BigInteger(), nullable=False),
        sa.Column("n", sa.SmallInteger(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("search", postgresql.TSVECTOR(), nullable=False),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["knowledge_versions.id"],
            name=op.f("fk_knowledge_passages_version_id_knowledge_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_passages")),
        sa.UniqueConstraint("version_id", "n", name=op.f("uq_knowledge_passages_version_id_n")),
    )

    op.create_table(
        "knowledge_terms",
        sa.Column("tenant_id", sa.BigInteger(), nullable=False),
        sa.Column("locale", sa.String(length=8), nullable=False),
        sa.Column("term", sa.Text(), nullable=False),
        sa.Column("articles", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_knowledge_terms_tenant_id_tenants"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("tenant_id", "locale", "term", name=op.f("pk_knowledge_terms")),
    )

    op.create_table(
        "knowledge_libraries",
        sa.Column("tenant_id", sa.BigInteger(), nullable=False),
        sa.Column("locale", sa.String(length=8), nullable=False),
        sa.Column("articles", sa.Integer(), nullable=False),
        sa.Column("counted_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_knowledge_libraries_tenant_id_tenants"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("tenant_id", "locale", name=op.f("pk_knowledge_libraries")),
    )


def downgrade() -> None:
    op.drop_table("knowledge_libraries")
    op.drop_table("knowledge_terms")
    op.drop_table("knowledge_passages")
    op.drop_table("knowledge_versions")
    op.drop_table("knowledge_articles")
