"""Running the book: plans, the papermill runner, run records, the generated table of contents.

Nothing here imports training code: the runner executes notebooks, and notebooks call the
library.
"""
