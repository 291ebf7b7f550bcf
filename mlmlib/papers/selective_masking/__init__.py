"""Paper C (Lad et al. 2022): selective masking driven by a task word list."""
