"""`tf.train`: optimizers, savers, input pipelines (filled by later work)."""
