"""A LangChain LCEL RAG chain over EnsembleRRFRetriever (offline: local MiniLM, fake chat model).

Run: ``.venv/bin/python -m integrations.langchain_rag_chain``

The chain is the canonical LCEL shape::

    {"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt | llm | StrOutputParser()

with a fake chat model standing in for the LLM (the retriever is what is being shown; swap in any chat model).
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnablePassthrough

from integrations.corpus import NOTES
from rrf_retriever import EnsembleRRFRetriever

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer from the context only.\n\nContext:\n{context}"),
        ("human", "{question}"),
    ]
)


def format_docs(docs: list[Document]) -> str:
    """One line per document, with how it was ranked (dense rank, keyword rank, fused score)."""
    lines = []
    for doc in docs:
        ranks = doc.metadata["rrf_ranks"]
        lines.append(
            f"[{doc.id} dense={ranks.get('dense', '-')} keyword={ranks.get('keyword', '-')} "
            f"rrf={doc.metadata['rrf_score']:.4f}] {doc.page_content}"
        )
    return "\n".join(lines)


def build_retriever(embedding: Any = None, **kwargs: Any) -> EnsembleRRFRetriever:
    """The embedded default stack (Qdrant in memory + SQLite FTS5) over the example notes."""
    if embedding is None:
        from rrf_retriever.embeddings import MiniLMEmbedding

        embedding = MiniLMEmbedding()
    return EnsembleRRFRetriever.from_texts(
        [text for _, text, _ in NOTES],
        embedding,
        metadatas=[meta for _, _, meta in NOTES],
        ids=[doc_id for doc_id, _, _ in NOTES],
        **{"top_k": 3, **kwargs},
    )


def build_chain(retriever: EnsembleRRFRetriever, answers: list[str] | None = None) -> Runnable:
    """The LCEL RAG chain: retrieve, format, prompt, (fake) chat model, string."""
    llm = FakeListChatModel(responses=answers or ["Run `vault login` to refresh the sync token."])
    return (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | PROMPT
        | llm
        | StrOutputParser()
    )


def main() -> dict[str, Any]:
    retriever = build_retriever()
    chain = build_chain(retriever, ["answer one", "answer two"])
    question = "what does E4012 mean?"
    docs = retriever.invoke(question)
    print(format_docs(docs))
    answer = chain.invoke(question)
    async_answer = asyncio.run(chain.ainvoke("my uploads stopped"))
    scoped = retriever.invoke("settings", filter={"session_id": [2]}, k=2)
    print("answer:", answer, "| async answer:", async_answer)
    print("session 2 only:", [d.id for d in scoped])
    return {"docs": docs, "answer": answer, "async_answer": async_answer, "scoped": scoped}


if __name__ == "__main__":
    main()
