"""Shared training pieces: model I/O, tokenised (prompt, response) batches, log-probs, engines."""
