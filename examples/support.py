"""A customer-support app, as a team might ship it on google-adk.

``support`` answers customers: it looks orders up, asks a manager to approve
refunds (a long-running tool: the approval arrives hours later, from the
back office), and issues store credit only after the customer confirms
(``require_confirmation``). Two specialists, ``billing`` and ``shipping``,
look at a case side by side (a ``ParallelAgent``). Compaction uses both
triggers: every 3 invocations the sliding window summarises them (overlapping
the previous summary by one), and once a prompt passes 1,500 tokens the
session is summarised at once, keeping the newest 4 events.

Check it: ``make check APP=examples.support:app``. Nothing here runs during a
check beyond building the objects: the harness replaces every model, every
tool body and the summariser with scripted ones.
"""

from google.adk.agents.llm_agent import LlmAgent
from google.adk.agents.parallel_agent import ParallelAgent
from google.adk.apps.app import App, EventsCompactionConfig
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool

MODEL = "gemini-2.5-flash"


def lookup_order(order_id: str) -> dict:
    """Returns the order's status, items and payment."""
    raise RuntimeError("a real app would call the order service here")


def request_refund_approval(order_id: str, amount: float, reason: str) -> dict:
    """Asks a manager to approve a refund; the decision arrives later."""
    raise RuntimeError("a real app would open a ticket for the back office here")


def issue_store_credit(customer_id: str, amount: float) -> dict:
    """Issues store credit to the customer (asks the customer to confirm)."""
    raise RuntimeError("a real app would credit the account here")


billing = LlmAgent(
    name="billing",
    model=MODEL,
    instruction="You check invoices and payments for the case.",
)
shipping = LlmAgent(
    name="shipping",
    model=MODEL,
    instruction="You check carriers and delivery dates for the case.",
)
specialists = ParallelAgent(name="specialists", sub_agents=[billing, shipping])

support = LlmAgent(
    name="support",
    model=MODEL,
    instruction=(
        "You are the support agent of an online shop. Look orders up before "
        "answering, ask for a manager's approval before any refund, and offer "
        "store credit only when the customer agrees. Ask the specialists when "
        "a case needs billing and shipping checked together."
    ),
    tools=[
        lookup_order,
        LongRunningFunctionTool(request_refund_approval),
        FunctionTool(issue_store_credit, require_confirmation=True),
    ],
    sub_agents=[specialists],
)

app = App(
    name="support_desk",
    root_agent=support,
    events_compaction_config=EventsCompactionConfig(
        compaction_interval=3,
        overlap_size=1,
        token_threshold=1_500,
        event_retention_size=4,
    ),
)
