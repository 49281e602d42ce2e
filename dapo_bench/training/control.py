"""The equal-compute SFT control's settings: ``RunOptions.control_lr`` and
``control_batch_size`` default to them, and the reference builder's continuation check
(``toy.build_ref``) uses them too. Apart from ``training.sft`` so that the command line can show
them without importing torch."""

CONTROL_LR = 1e-4
CONTROL_BATCH_SIZE = 64
