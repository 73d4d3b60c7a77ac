"""Model providers: the LLM client, the embedders (the bundled MiniLM among
them) and the registry that finds outside providers through entry points."""
