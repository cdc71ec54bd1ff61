"""RAG-R1's recipes: build-index, serve, train, sft-data, eval."""
