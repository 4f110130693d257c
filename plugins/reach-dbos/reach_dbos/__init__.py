"""reach-dbos: durable agent runs on DBOS."""
