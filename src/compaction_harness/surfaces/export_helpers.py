"""The helpers an exported pipeline test defines, as source (for export).

Each is in adk-python's style (pyink: two-space indents, single quotes), and
:data:`HELPERS` names it with the imports it needs and the other helpers it
calls: ``summarizer`` (ADK's ``LlmEventSummarizer`` over a scripted model
that keeps what it is given), ``stored`` (a session appended to as the
Runner appends), ``end_invocation`` and ``before_model_call`` (the two
compaction entry points), ``contents`` (ADK's contents assembly),
``unpaired``, ``given``, ``sees``, ``shown`` and ``token_trigger_fires``
(what the assertions read). :mod:`compaction_harness.surfaces.export_pipeline`
writes them into a test, once each, as its assertions need them.
"""

from __future__ import annotations

__all__ = ["HELPERS", "MODEL"]

#: The root agent's model name in an exported test (never called).
MODEL = "gemini-2.0-flash"


_SUMMARIZER = '''\
class _SummaryModel(BaseLlm):
  """The summary model: answers with the next scripted text."""

  texts: list[str] = []

  async def generate_content_async(self, llm_request, stream=False):
    del stream
    given = sum(
        len(part.text or '')
        for content in llm_request.contents
        for part in content.parts or []
    )
    text = self.texts.pop(0) if self.texts else 'summary'
    yield LlmResponse(
        content=types.Content(role='model', parts=[types.Part(text=text)]),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=given // 4,
            candidates_token_count=len(text) // 4,
            total_token_count=given // 4 + len(text) // 4,
        ),
    )


class _Summarizer(LlmEventSummarizer):
  """ADK's summarizer over the scripted model; keeps what it is given.

  Each summary is stamped as the run stamped it (ADK stamps it when built).
  """

  def __init__(self, texts, stamps):
    super().__init__(llm=_SummaryModel(model='summary-model', texts=texts))
    self.given = []
    self.pairs = []
    self._stamps = list(stamps)

  async def maybe_summarize_events(self, *, events):
    self.given.append(list(events))
    made = await super().maybe_summarize_events(events=events)
    if made is not None:
      if self._stamps:
        made.timestamp = self._stamps.pop(0)
      self.pairs.append((list(events), made))
    return made'''

_STORED = '''\
async def _stored(events):
  """A session holding ``events``, appended as the Runner appends them."""
  service = InMemorySessionService()
  session = await service.create_session(app_name='harness', user_id='u')
  for event in events:
    await service.append_event(session, event)
  return service, session'''

_END = '''\
async def _end_invocation(app, events):
  """What the Runner runs when an invocation ends."""
  service, session = await _stored(events)
  run = compaction._run_compaction_for_sliding_window
  kwargs = {}
  if 'skip_token_compaction' in inspect.signature(run).parameters:
    kwargs['skip_token_compaction'] = False
  result = run(app, session, service, **kwargs)
  if inspect.isasyncgen(result):  # the Runner appends what it yields
    async for event in result:
      await service.append_event(session, event)
  else:
    await result
  return session'''

_BEFORE_MODEL_CALL = f'''\
async def _before_model_call(app, events, agent_name, branch):
  """The LLM flow's compaction request processor, as before a model call."""
  try:
    from google.adk.flows.llm_flows.context._compaction import request_processor
  except ImportError:  # releases before the context package
    from google.adk.flows.llm_flows.compaction import request_processor

  service, session = await _stored(events)
  agent = app.root_agent
  if agent_name != agent.name:
    agent = LlmAgent(name=agent_name, model='{MODEL}')
  fields = dict(
      session_service=service,
      invocation_id=session.events[-1].invocation_id,
      agent=agent,
      session=session,
      branch=branch,
      events_compaction_config=app.events_compaction_config,
  )
  context = InvocationContext(
      **{{k: v for k, v in fields.items() if k in InvocationContext.model_fields}}
  )
  async for _ in request_processor.run_async(context, LlmRequest()):
    pass
  return session'''

_CONTENTS = '''\
def _contents(events, agent_name, branch):
  """The contents ADK assembles for the model (function call ids kept)."""
  try:
    from google.adk.flows.llm_flows.context._contents import _get_contents
  except ImportError:  # releases before the context package
    from google.adk.flows.llm_flows.contents import _get_contents

  parameters = inspect.signature(_get_contents).parameters
  if 'preserve_function_call_ids' in parameters:
    return _get_contents(
        branch, events, agent_name, preserve_function_call_ids=True
    )
  return _get_contents(branch, events, agent_name)'''

_UNPAIRED = '''\
def _unpaired(contents):
  """Contents whose function responses do not answer the calls before them."""
  out = []
  for k, content in enumerate(contents):
    parts = content.parts or []
    answered = [p.function_response.id for p in parts if p.function_response]
    if not answered:
      continue
    before = contents[k - 1] if k else None
    called = []
    if before is not None and before.role == 'model':
      called = [
          p.function_call.id for p in before.parts or [] if p.function_call
      ]
    if sorted(answered) != sorted(called):
      out.append(f'content {k} answers {sorted(answered)}, before it {called}')
  return out'''

_GIVEN = '''\
def _given(summarizer, event):
  """Whether the summarizer was given ``event``."""
  return any(e is event for taken in summarizer.given for e in taken)'''

_SEES = '''\
def _sees(reader, branch):
  """Whether an agent on branch ``reader`` sees an event of ``branch``."""
  if branch is None:
    return True
  return reader is not None and (
      reader == branch or reader.startswith(branch + '.')
  )'''

_SHOWN = '''\
def _shown(event, contents):
  """Whether the contents show ``event``: its text, or its calls and answers."""
  texts = [p.text for c in contents for p in c.parts or [] if p.text]
  calls = {
      p.function_call.id
      for c in contents
      for p in c.parts or []
      if p.function_call
  }
  answers = {
      p.function_response.id
      for c in contents
      for p in c.parts or []
      if p.function_response
  }
  parts = event.content.parts or [] if event.content else []
  for part in parts:
    if part.text is not None:
      return any(part.text == t or part.text in t.splitlines() for t in texts)
  own_calls = {p.function_call.id for p in parts if p.function_call}
  own_answers = {p.function_response.id for p in parts if p.function_response}
  return bool(own_calls | own_answers) and (
      own_calls <= calls and own_answers <= answers
  )'''

_TOKEN_FIRES = '''\
async def _token_trigger_fires(app, events):
  """Whether token-threshold compaction calls the summarizer on ``events``."""
  calls = []

  class _Counter(BaseEventsSummarizer):

    async def maybe_summarize_events(self, *, events):
      calls.append(len(events))
      return None

  config = app.events_compaction_config.model_copy(
      update={'summarizer': _Counter()}
  )
  counting = app.model_copy(update={'events_compaction_config': config})
  service, session = await _stored(events)
  await compaction._run_compaction_for_token_threshold(
      counting, session, service
  )
  return bool(calls)'''

#: name -> (source, imports, the helpers it needs).
HELPERS: dict[str, tuple[str, set[str], tuple[str, ...]]] = {
    "summarizer": (
        _SUMMARIZER,
        {
            "from google.adk.apps.llm_event_summarizer import LlmEventSummarizer",
            "from google.adk.models.base_llm import BaseLlm",
            "from google.adk.models.llm_response import LlmResponse",
        },
        (),
    ),
    "stored": (
        _STORED,
        {"from google.adk.sessions.in_memory_session_service import InMemorySessionService"},
        (),
    ),
    "end_invocation": (
        _END,
        {"import inspect", "from google.adk.apps import compaction"},
        ("stored",),
    ),
    "before_model_call": (
        _BEFORE_MODEL_CALL,
        {
            "from google.adk.agents.invocation_context import InvocationContext",
            "from google.adk.agents.llm_agent import LlmAgent",
            "from google.adk.models.llm_request import LlmRequest",
        },
        ("stored",),
    ),
    "contents": (_CONTENTS, {"import inspect"}, ()),
    "unpaired": (_UNPAIRED, set(), ()),
    "given": (_GIVEN, set(), ()),
    "sees": (_SEES, set(), ()),
    "shown": (_SHOWN, set(), ()),
    "token_trigger_fires": (
        _TOKEN_FIRES,
        {
            "from google.adk.apps import compaction",
            "from google.adk.apps.base_events_summarizer import BaseEventsSummarizer",
        },
        ("stored",),
    ),
}
