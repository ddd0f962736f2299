"""The Gradio UI, mounted on the FastAPI app at /."""
