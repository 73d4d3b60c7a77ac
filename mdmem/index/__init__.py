"""The derived indexes, rebuilt from the files and never the truth: the Whoosh keyword
index, the FAISS vector sidecar with its embedding cache, the manifest of what is indexed,
and the incremental indexer that keeps both in step with the vault. Only this package
imports whoosh and faiss.
"""
