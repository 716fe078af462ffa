"""The bank's help-centre library: articles per locale, every version of each (drafts, the live one,
those it replaced) with its full-text search vector, and each version's passages."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, TSVECTOR
from sqlalchemy.orm import Mapped, mapped_column

from app.data.models.base import Base, created_at_column, id_column, in_
from app.domain.knowledge import VERSION_STATUSES


class KnowledgeArticle(Base):
    """One article in one locale, by the id the bank gives it ("interest-how-calculated")."""

    __tablename__ = "knowledge_articles"
    __table_args__ = (
        UniqueConstraint("tenant_id", "slug", "locale"),
        UniqueConstraint("tenant_id", "id"),
    )

    id: Mapped[int] = id_column()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    slug: Mapped[str] = mapped_column(String(100))
    locale: Mapped[str] = mapped_column(String(8))
    created_at: Mapped[datetime] = created_at_column()


class KnowledgeVersion(Base):
    """Every text an article ever had: kept, never edited; at most one is live."""

    __tablename__ = "knowledge_versions"
    __table_args__ = (
        UniqueConstraint("article_id", "version"),
        ForeignKeyConstraint(
            ["tenant_id", "article_id"], ["knowledge_articles.tenant_id", "knowledge_articles.id"], ondelete="CASCADE"
        ),
        CheckConstraint(in_("status", VERSION_STATUSES), name="status"),
        CheckConstraint("version > 0", name="version"),
        # Reviewed by someone else: whoever approves a draft did not write it.
        CheckConstraint("approved_by IS NULL OR approved_by <> author", name="four_eyes"),
        Index("uq_knowledge_versions_live", "article_id", unique=True, postgresql_where=text("status = 'live'")),
        Index("ix_knowledge_versions_search", "search", postgresql_using="gin"),
        Index("ix_knowledge_versions_tenant_id_locale_status", "tenant_id", "locale", "status"),
    )

    id: Mapped[int] = id_column()
    tenant_id: Mapped[int] = mapped_column(BigInteger)
    article_id: Mapped[int] = mapped_column(BigInteger)
    locale: Mapped[str] = mapped_column(String(8))  # the article's: searched without a join
    version: Mapped[int] = mapped_column()
    title: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text)
    tags: Mapped[list[str]] = mapped_column(ARRAY(String(100)), server_default=text("'{}'"))
    # What customers ask that the article answers: searched, never quoted.
    questions: Mapped[list[str]] = mapped_column(ARRAY(String(300)), server_default=text("'{}'"))
    status: Mapped[str] = mapped_column(String(8))
    author: Mapped[str] = mapped_column(String(200))  # an agent's username, or "import"
    approved_by: Mapped[str | None] = mapped_column(String(200))  # "import": live as the bank's pipeline loaded it
    created_at: Mapped[datetime] = created_at_column()
    approved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # The title weighs most, then the questions and tags, then the body (app/data/knowledge_search.py).
    search: Mapped[str] = mapped_column(TSVECTOR)


class KnowledgePassage(Base):
    """A paragraph of a version, quoted alone; `search` (its title and text) picks which of an
    article's passages answers a question."""

    __tablename__ = "knowledge_passages"
    __table_args__ = (UniqueConstraint("version_id", "n"),)

    id: Mapped[int] = id_column()
    version_id: Mapped[int] = mapped_column(ForeignKey("knowledge_versions.id", ondelete="CASCADE"))
    n: Mapped[int] = mapped_column(SmallInteger)  # its place in the article, from 1
    text: Mapped[str] = mapped_column(Text)
    search: Mapped[str] = mapped_column(TSVECTOR)


class KnowledgeTerm(Base):
    """How many live articles of a tenant's locale hold each search term: what makes a rare word weigh
    more than a common one (app/domain/knowledge.py), kept with every change to what is live."""

    __tablename__ = "knowledge_terms"

    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    locale: Mapped[str] = mapped_column(String(8), primary_key=True)
    term: Mapped[str] = mapped_column(Text, primary_key=True)
    articles: Mapped[int] = mapped_column()


class KnowledgeLibrary(Base):
    """A tenant's library in one locale: how many articles are live (what the terms' counts are of)."""

    __tablename__ = "knowledge_libraries"

    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    locale: Mapped[str] = mapped_column(String(8), primary_key=True)
    articles: Mapped[int] = mapped_column()
    counted_at: Mapped[datetime] = created_at_column()
