"""Files in: finding documents on disk and reading them as text (Markdown, plain text, PDF)."""
