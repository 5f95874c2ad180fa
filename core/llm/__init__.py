"""LLM clients: any OpenAI-compatible endpoint, and the offline evidence-grounded generator."""
