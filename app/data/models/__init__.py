"""The schema. Migrations in migrations/ create it; a test proves both agree. One module per concern;
importing this package registers every table on Base.metadata."""

from app.data.models.access import (
    AdmissionBucket,
    AdmissionLease,
    AdmissionReplica,
    Agent,
    AgentSession,
    SigninThrottle,
)
from app.data.models.base import Base
from app.data.models.conversations import Conversation, ConversationMessage
from app.data.models.knowledge import (
    KnowledgeArticle,
    KnowledgeLibrary,
    KnowledgePassage,
    KnowledgeTerm,
    KnowledgeVersion,
)
from app.data.models.ledger import (
    Account,
    BulkLoad,
    Customer,
    LedgerVersion,
    Statement,
    StatementSummary,
    Transaction,
)
from app.data.models.service import Answer, ApiKey, CachedAnswer, CacheFillLeader, Job, JobItem, Tenant

__all__ = [
    "Account",
    "AdmissionBucket",
    "AdmissionLease",
    "AdmissionReplica",
    "Agent",
    "AgentSession",
    "Answer",
    "ApiKey",
    "Base",
    "BulkLoad",
    "CacheFillLeader",
    "CachedAnswer",
    "Conversation",
    "ConversationMessage",
    "Customer",
    "Job",
    "JobItem",
    "KnowledgeArticle",
    "KnowledgeLibrary",
    "KnowledgePassage",
    "KnowledgeTerm",
    "KnowledgeVersion",
    "LedgerVersion",
    "SigninThrottle",
    "Statement",
    "StatementSummary",
    "Tenant",
    "Transaction",
]
