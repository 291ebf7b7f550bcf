"""The pretraining objectives' published constants, defined once and imported everywhere.

Standard library only: the parameter groups that default to these are read by the plan loader,
which does not load torch.
"""

MASK_RATE = 0.15  # share of tokens masked (Devlin et al. 2019; ELECTRA keeps it)
ELECTRA_TEMPERATURE = 1.0  # ELECTRA's generator sampling temperature (Clark et al. 2020)
ELECTRA_DISC_WEIGHT = 50.0  # ELECTRA's discriminator loss weight (Clark et al. 2020)
