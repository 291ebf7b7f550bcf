"""Paper B (Zhang et al. 2023): ELECTRA-style pretraining with false negatives corrected.

The method is `negatives` (detection, hard correction, soft regularization, the registry of
correction methods and the training-step hook); the experiment around it, one concept per module:
- `config`, `corpus_config`: the parameter groups (table, correction, start, model, pretraining,
  finetune; corpus), torch-free, with named presets (`presets`);
- `sources`, `lookup_tables`: the correction table and the held-out WordNet pairs;
- `corpus`: the pretraining text; `arm_config`: an arm ('electra/shield');
- `monitor`: an arm's training-step hook and statistics; `arm_pretraining`: pretraining one arm;
- `substitution`, `downstream`, `qa`: the held-out-synonym test set, fine-tuning and SQuAD;
- `seed_run`: B1's loop for one seed; `overhead`: B2's timing;
- `claim_controls`, `claims`, `figures`: the claims' positive controls, the summary's verdicts and
  every page's figures and tables.

Reconstructed choices (the paper body was not available) are parameters and marked as such.
"""
