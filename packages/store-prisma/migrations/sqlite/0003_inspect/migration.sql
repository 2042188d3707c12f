-- The inspection capability on SQLite: when each run's latest checkpoint was saved
-- (ms since the epoch by the database's clock; 0 for runs saved before), and the
-- indexes that list runs newest first over every run, one flow's, or one status's.
-- __PREFIX__ is replaced by the store's table prefix.
ALTER TABLE "__PREFIX__runs" ADD COLUMN "updated_at" BIGINT NOT NULL DEFAULT 0;
CREATE INDEX "__PREFIX__runs_recent_idx" ON "__PREFIX__runs" ("updated_at" DESC, "run_id" DESC);
CREATE INDEX "__PREFIX__runs_flow_recent_idx" ON "__PREFIX__runs" ("flow", "updated_at" DESC, "run_id" DESC);
CREATE INDEX "__PREFIX__runs_status_recent_idx" ON "__PREFIX__runs" ("status", "updated_at" DESC, "run_id" DESC);
