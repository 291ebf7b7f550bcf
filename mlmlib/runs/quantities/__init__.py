"""The measured numbers the book's pages quote, one registered `quantity` each, a module per
chapter: importing the package registers every quantity (mlmlib.runs.page_numbers reads them)."""

from mlmlib.runs.quantities import cpu_batch, paper_a, paper_b, paper_c  # noqa: F401 - registers them
