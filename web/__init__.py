"""The FastAPI application of unerase (thin: validate, call the engine, render)."""
