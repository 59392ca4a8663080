"""invokit inside agent frameworks, one module per framework, each behind its own extra.

- ``invokit.integrations.langchain``: LangChain / LangGraph (``invokit[langchain]``)
- ``invokit.integrations.google_adk``: Google ADK (``invokit[adk]``)

Each module gives the framework invokit tools whose calls go through an invokit ``Executor``
(approvals become the framework's own pause), and imports the framework's tools into an invokit
registry so invokit's policy, approvals, limits and audit apply to them.
"""
