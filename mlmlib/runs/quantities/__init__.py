"""The measured numbers the run report quotes (the cpu batch's time and machine), one registered
`quantity` each; the papers declare theirs in their own packages (mlmlib.runs.page_numbers loads
every declaration)."""

from mlmlib.runs.quantities import cpu_batch  # noqa: F401 - registers them
