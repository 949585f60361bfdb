"""Prompt files of mem_pipeline (read with importlib.resources; see mem_pipeline._prompts)."""
