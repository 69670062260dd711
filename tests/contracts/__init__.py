"""Contract suites written once and run against every backend (embedded SQLite, Kafka + OpenSearch)."""
