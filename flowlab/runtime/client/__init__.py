"""What the Session does around a step: feeds, fetch structures, RunMetadata, step statistics."""
