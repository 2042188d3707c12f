-- The first schema of @durable/store-prisma on PostgreSQL.
-- __SCHEMA__ and __PREFIX__ are replaced by the store's schema and table prefix.
CREATE TABLE "__SCHEMA__"."__PREFIX__runs" (
    "run_id" TEXT NOT NULL,
    "flow" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "status" TEXT NOT NULL,
    "segment" INTEGER NOT NULL,
    "segment_calls" INTEGER NOT NULL,
    CONSTRAINT "__PREFIX__runs_pkey" PRIMARY KEY ("run_id")
);
CREATE INDEX "__PREFIX__runs_flow_run_id_idx" ON "__SCHEMA__"."__PREFIX__runs" ("flow", "run_id");
CREATE TABLE "__SCHEMA__"."__PREFIX__checkpoints" (
    "run_id" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "status" TEXT NOT NULL,
    "segment" INTEGER NOT NULL,
    "flow" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "sealed" TEXT NOT NULL,
    CONSTRAINT "__PREFIX__checkpoints_pkey" PRIMARY KEY ("run_id", "step")
);
CREATE TABLE "__SCHEMA__"."__PREFIX__calls" (
    "run_id" TEXT NOT NULL,
    "segment" INTEGER NOT NULL,
    "seq" INTEGER NOT NULL,
    "sealed" TEXT NOT NULL,
    CONSTRAINT "__PREFIX__calls_pkey" PRIMARY KEY ("run_id", "segment", "seq")
);
