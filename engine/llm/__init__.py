"""Language-model backends behind one protocol (`LLMBackend`)."""
