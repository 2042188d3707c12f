-- The queues capability on PostgreSQL: on each run's row the queue place its step 0 gave, kept
-- for the run's life ("queue" '' for a run on no queue, as every run saved before is), the
-- queue's limits, and its turn within its priority ("queued_order"); the queue's accepted
-- starts (for its rate), one row each, pruned as they leave the window. Indexes: the queue's
-- claimable runs in its order (listQueued), the leases of a queue (a take's counts), and the
-- claimable index with "queue", so a claimable listing reads no queued run.
-- __SCHEMA__ and __PREFIX__ are replaced by the store's schema and table prefix.
ALTER TABLE "__SCHEMA__"."__PREFIX__runs" ADD COLUMN "queue" TEXT NOT NULL DEFAULT '';
ALTER TABLE "__SCHEMA__"."__PREFIX__runs" ADD COLUMN "queue_priority" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "__SCHEMA__"."__PREFIX__runs" ADD COLUMN "queue_key" TEXT;
ALTER TABLE "__SCHEMA__"."__PREFIX__runs" ADD COLUMN "queue_concurrency" INTEGER;
ALTER TABLE "__SCHEMA__"."__PREFIX__runs" ADD COLUMN "queue_per_key" INTEGER;
ALTER TABLE "__SCHEMA__"."__PREFIX__runs" ADD COLUMN "queue_rate_limit" INTEGER;
ALTER TABLE "__SCHEMA__"."__PREFIX__runs" ADD COLUMN "queue_rate_window_ms" INTEGER;
ALTER TABLE "__SCHEMA__"."__PREFIX__runs" ADD COLUMN "queued_order" INTEGER;
DROP INDEX "__SCHEMA__"."__PREFIX__runs_claimable_idx";
CREATE INDEX "__PREFIX__runs_claimable_idx" ON "__SCHEMA__"."__PREFIX__runs" ("flow", "status", "waits_for_decision", "queue", "lease_expires_at", "run_id");
CREATE INDEX "__PREFIX__runs_queued_idx" ON "__SCHEMA__"."__PREFIX__runs" ("queue", "status", "waits_for_decision", "queue_priority" DESC, "queued_order", "run_id");
CREATE INDEX "__PREFIX__runs_queue_lease_idx" ON "__SCHEMA__"."__PREFIX__runs" ("queue", "lease_expires_at");
CREATE TABLE "__SCHEMA__"."__PREFIX__queue_starts" (
    "queue" TEXT NOT NULL,
    "at" BIGINT NOT NULL,
    "run_id" TEXT NOT NULL,
    CONSTRAINT "__PREFIX__queue_starts_pkey" PRIMARY KEY ("queue", "at", "run_id")
);
