"""Parallel modes built on the search driver: islands over ``torch.distributed``."""
