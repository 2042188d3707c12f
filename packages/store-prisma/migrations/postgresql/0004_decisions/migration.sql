-- Runs waiting for a decision on PostgreSQL: 1 while the run's latest checkpoint was saved
-- waiting for one (0 for runs saved before, claimable as they were), and the claimable
-- index with it, so a claimable listing reads none of them.
-- __SCHEMA__ and __PREFIX__ are replaced by the store's schema and table prefix.
ALTER TABLE "__SCHEMA__"."__PREFIX__runs" ADD COLUMN "waits_for_decision" INTEGER NOT NULL DEFAULT 0;
DROP INDEX "__SCHEMA__"."__PREFIX__runs_claimable_idx";
CREATE INDEX "__PREFIX__runs_claimable_idx" ON "__SCHEMA__"."__PREFIX__runs" ("flow", "status", "waits_for_decision", "lease_expires_at", "run_id");
