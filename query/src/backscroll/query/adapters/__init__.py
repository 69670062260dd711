"""Adapters for agent SDKs: the model tools and a log-backed conversation memory for the OpenAI
Agents SDK (:mod:`.openai_agents`), pydantic-ai (:mod:`.pydantic_ai`) and LangChain
(:mod:`.langchain`). Each module imports its SDK when it loads; import the one you use (its
extra: ``backscroll-query[openai-agents]``, ``[pydantic-ai]``, ``[langchain]``)."""
