-- The first schema of @durable/store-prisma on SQLite.
-- __PREFIX__ is replaced by the store's table prefix.
CREATE TABLE "__PREFIX__runs" (
    "run_id" TEXT NOT NULL PRIMARY KEY,
    "flow" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "status" TEXT NOT NULL,
    "segment" INTEGER NOT NULL,
    "segment_calls" INTEGER NOT NULL
);
CREATE INDEX "__PREFIX__runs_flow_run_id_idx" ON "__PREFIX__runs" ("flow", "run_id");
CREATE TABLE "__PREFIX__checkpoints" (
    "run_id" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "status" TEXT NOT NULL,
    "segment" INTEGER NOT NULL,
    "flow" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "sealed" TEXT NOT NULL,
    PRIMARY KEY ("run_id", "step")
);
CREATE TABLE "__PREFIX__calls" (
    "run_id" TEXT NOT NULL,
    "segment" INTEGER NOT NULL,
    "seq" INTEGER NOT NULL,
    "sealed" TEXT NOT NULL,
    PRIMARY KEY ("run_id", "segment", "seq")
);
