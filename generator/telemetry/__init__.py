"""What a run tells people and Prometheus while it works: metrics, progress, logs, rate."""
