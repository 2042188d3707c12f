-- Run leases on PostgreSQL: who holds each run and until when (ms since the epoch by
-- the database's clock), NULL when released, so every run of an older database is
-- claimable; and the index of the claimable listing.
-- __SCHEMA__ and __PREFIX__ are replaced by the store's schema and table prefix.
ALTER TABLE "__SCHEMA__"."__PREFIX__runs" ADD COLUMN "lease_owner" TEXT;
ALTER TABLE "__SCHEMA__"."__PREFIX__runs" ADD COLUMN "lease_expires_at" BIGINT;
CREATE INDEX "__PREFIX__runs_claimable_idx" ON "__SCHEMA__"."__PREFIX__runs" ("flow", "status", "lease_expires_at", "run_id");
