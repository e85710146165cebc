"""A second app, written only for tests/slow/test_app_check.py: another tree,
other tools, the sliding window alone. ``check`` must take it as it takes the
example app, with no change to the harness."""

from google.adk.agents.llm_agent import LlmAgent
from google.adk.agents.loop_agent import LoopAgent
from google.adk.agents.sequential_agent import SequentialAgent
from google.adk.apps.app import App, EventsCompactionConfig
from google.adk.tools.long_running_tool import LongRunningFunctionTool


def search_flights(origin: str, destination: str, day: str) -> list:
    """Finds flights."""
    raise RuntimeError("not called by a check")


def search_hotels(city: str, nights: int) -> list:
    """Finds hotels."""
    raise RuntimeError("not called by a check")


def hold_booking(offer_id: str) -> dict:
    """Holds an offer until the traveller pays (the airline answers later)."""
    raise RuntimeError("not called by a check")


researcher = LlmAgent(
    name="researcher",
    model="gemini-2.5-flash",
    instruction="Find flights and hotels for the trip.",
    tools=[search_flights, search_hotels, LongRunningFunctionTool(hold_booking)],
)
writer = LlmAgent(name="writer", model="gemini-2.5-flash", instruction="Write the itinerary.")
critic = LlmAgent(name="critic", model="gemini-2.5-flash", instruction="Check the itinerary.")
polish = LoopAgent(name="polish", sub_agents=[critic], max_iterations=2)

app = App(
    name="travel",
    root_agent=SequentialAgent(name="trip_planner", sub_agents=[researcher, writer, polish]),
    events_compaction_config=EventsCompactionConfig(compaction_interval=2, overlap_size=0),
)
