"""invokit inside agent frameworks, and their tools inside invokit: one module per framework.

Each module needs its framework's extra and is imported on use, never by ``import invokit``:

- :mod:`invokit.integrations.pydantic_ai` (``pip install "invokit[pydantic-ai]"``):
  ``InvokitToolset``, ``approval_results``, ``from_pydantic_ai``;
- :mod:`invokit.integrations.openai_agents` (``pip install "invokit[openai-agents]"``):
  ``InvokitTools``, ``function_tools``, ``from_openai_agents``;
- :mod:`invokit.integrations.langchain` (``pip install "invokit[langchain]"``): LangChain and
  LangGraph;
- :mod:`invokit.integrations.google_adk` (``pip install "invokit[adk]"``): Google ADK.

Every call a framework makes goes through the invokit :class:`~invokit.Executor`: policy,
approvals (surfaced as the framework's own pause and resumed through it), limits and audit;
and each framework's tools can be imported into an invokit registry so the same applies to
them.
"""
